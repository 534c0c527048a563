// The zone log: every zone begin and end with its time, for the lms CSV (FORMATS.md 6), exact
// to the microsecond. Off unless started; each thread appends to its own buffer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "zones.hpp"

namespace scriptprof::native {

struct ZoneEvent {
  bool begin;
  std::uint32_t process;   // the fiber's process id
  ZoneId zone;
  std::uint64_t t_ns;      // CLOCK_MONOTONIC
};

// Starts logging (dropping what an earlier log held) and stops it.
void start_zone_log();
void stop_zone_log();
bool zone_log_on();

// Every thread's events, in time order (ties keep each thread's order).
std::vector<ZoneEvent> zone_log_events();

// The log as lms CSV: every mapping line first, then begin/end lines in microseconds since the
// log started. A zone's id is per process and zone; with more than one process the mapping
// names the process too ("worker 1: update_ai"). `process_names` maps process ids to names.
std::string zone_log_lms_csv(const std::vector<ZoneEvent>& events,
                             const std::vector<std::pair<std::uint32_t, std::string>>& process_names);

// Called by zone_begin/zone_end when the log is on.
void log_zone_event(bool begin, std::uint32_t process, ZoneId zone);

}  // namespace scriptprof::native
