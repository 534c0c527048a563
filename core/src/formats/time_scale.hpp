// What a file needs to give its samples back their time: the period, the measured seconds and
// how many samples they were spread over, the clock. Formats with no field for it carry it where
// they can (a LispWorks or folded comment line, a Sampler symbol, a speedscope field), always
// as the same text, and their readers give it back to the profile (internal to the core).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace scriptprof {

class Profile;

// "scriptprof period_ns=1000000 samples=330 total_seconds=0.336 gc_seconds=0 clock=cpu" (with
// " gc=explicit" where the runtime could not tell the collector's time: Profile::gc_measured), and
// " order=time" from a writer whose file holds the samples in the order they came (a run with
// full stacks, as a speedscope or Sampler file): its reader then gives the profile its timeline
// back, for the formats that need one (chrome, lms).
std::string time_scale_text(const Profile& p, bool in_time_order = false);
// The message of a writer that needs the timeline (`needs`: "a Chrome trace needs") for a
// profile without one: what profile, or what file, would serve.
std::string no_timeline_message(const char* needs);

// What a file written without full stacks adds to the names a viewer shows (speedscope's): its
// samples are the call tree's stacks, one each, not in the order they came; and that name
// without it, for a reader.
inline constexpr const char* kSpeedscopeNoTimeOrder = " (aggregated stacks: no time order)";
std::string without_order_note(const std::string& name);

// What a time_scale_text line said; `found` is false when `text` is not one.
struct TimeScale {
  bool found = false;
  std::uint64_t period_ns = 0;     // 0: not given
  std::uint64_t samples = 0;       // the sample weight total_seconds was measured over (0: not given)
  double total_seconds = -1;       // < 0: not given
  double gc_seconds = -1;
  bool gc_measured = true;         // gc=explicit: gc_seconds covers explicit collections only
  int clock = -1;                  // a ClockKind, or -1
  bool time_order = false;         // order=time: the file's samples are in the order they came
};
TimeScale parse_time_scale(std::string_view text);

// The whole nanoseconds a sample stands for in a file that writes time, not samples (speedscope):
// the measured time per sample when there is one and it rounds to at least 1 ns, else the
// period. Its writer and its reader use this one rule, so that weights come back as samples.
double written_sample_ns(double total_seconds, std::uint64_t samples, std::uint64_t period_ns);

// Gives `p` (read with weights already added) its time: the period, the clock and total time
// from `scale` when found; a file whose weights were cut since (a grep'd folded file) keeps
// the seconds per sample. Without a scale: `fallback_period_ns` a sample, and a warning
// saying the time is a guess is returned (else "").
std::string apply_time_scale(const TimeScale& scale, Profile* p, std::uint64_t fallback_period_ns);

}  // namespace scriptprof
