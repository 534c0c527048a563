// Native zones: named regions of host (C++) code, kept per fiber as a shadow stack.
//
// The engine marks its own work (SCRIPTPROF_ZONE("update_ai")) so that a sample shows where in
// the engine the script ran, and so that native work is profiled on its own. A zone begin or
// end is a push or pop on the running fiber's shadow stack; nothing is allocated.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/function_table.hpp"

namespace scriptprof::native {

using ZoneId = std::uint32_t;
inline constexpr ZoneId kNoZone = 0xffffffffu;  // what a failed intern gives

// The id of a zone name; the same name always gives the same id (thread-safe, takes a lock:
// call it once per call site, as SCRIPTPROF_ZONE does).
ZoneId intern_zone(std::string_view name);
// The name of a zone id ("?" for an unknown id).
std::string zone_name(ZoneId id);

inline constexpr std::uint32_t kMaxZoneDepth = 256;

// One execution context: a thread's own, or a fiber of a job system. Zones opened on a fiber
// stay on it while other fibers run.
struct Fiber {
  std::uint32_t process = 0;          // its id in profiles (unique in the process)
  std::string name;                   // "worker 1", "job 7"
  void* script = nullptr;             // the script state it runs (an adapter's, e.g. lua_State*)
  ZoneId zones[kMaxZoneDepth];        // shadow stack, outermost first
  std::uint32_t depth = 0;            // zones open (may exceed kMaxZoneDepth: those are not kept)
  std::vector<void*> saved_chain;     // the adapter's resume chain while the fiber is switched out
};

// How a zone appears in profiles: "update_ai (zone)".
FunctionInfo zone_function_info(ZoneId id);

// Appends the fiber's zones, outermost first, as functions of a profile. `ids` caches each
// zone's function (kNoFunction: not made yet); `add` makes one from a FunctionInfo.
template <class AddFunction>
void append_zone_frames(const Fiber& f, std::vector<FunctionId>* ids, AddFunction&& add,
                        std::vector<FunctionId>* out) {
  std::uint32_t n = f.depth < kMaxZoneDepth ? f.depth : kMaxZoneDepth;
  for (std::uint32_t i = 0; i < n; ++i) {
    ZoneId z = f.zones[i];
    if (z >= ids->size()) ids->resize(z + 1, kNoFunction);
    if ((*ids)[z] == kNoFunction) (*ids)[z] = add(zone_function_info(z));
    out->push_back((*ids)[z]);
  }
}

// A process id no other fiber or thread has (the Lua module's own runs use 0).
std::uint32_t new_process_id();

// A fiber with a fresh process id; `script` is the state or coroutine it runs (may be null).
std::unique_ptr<Fiber> new_fiber(std::string name, void* script);
// Names the calling thread's own fiber ("render", "worker 1").
void name_thread(std::string name);
// The process id of the calling thread's own fiber (the OS thread, whatever fiber runs).
std::uint32_t thread_process();
// For ThreadInfo::os_thread: the calling thread's process when `f` is a fiber on it, 0 when
// `f` is the thread's own.
std::uint32_t host_thread_of(const Fiber& f);
// Every process id handed out so far with its name (for files that name processes).
std::vector<std::pair<std::uint32_t, std::string>> process_names();

// The fiber running on the calling thread (the thread's own until a switch).
Fiber* current_fiber();

// Whoever samples the calling thread learns of every change to what runs before it happens,
// so that ticks received until then go to the stack they were taken on.
struct ThreadListener {
  void (*before_change)(void* context) = nullptr;          // a zone opens or closes, a fiber switches
  void (*switched)(void* context, Fiber* from, Fiber* to) = nullptr;  // after a fiber switch
  void (*frame)(void* context) = nullptr;                  // mark_frame() on this thread
  void* context = nullptr;
};
// Sets (or, with nullptr, clears) the calling thread's listener.
void set_thread_listener(const ThreadListener* listener);

// Opens and closes a zone on the running fiber. End must match the innermost open zone;
// a mismatched end is ignored and counted (zone_mismatches()).
void zone_begin(ZoneId id);
void zone_end(ZoneId id);
std::uint64_t zone_mismatches();

// Makes `to` the fiber running on the calling thread (nullptr: the thread's own). Call it just
// before switching stacks to it; the fiber must stay alive while it runs.
void switch_fiber(Fiber* to);

// Marks a game frame's boundary on the calling thread (for whoever samples it).
void mark_frame();

// RAII zone for C++ hosts.
class ZoneScope {
 public:
  explicit ZoneScope(ZoneId id) : id_(id) { zone_begin(id); }
  ~ZoneScope() { zone_end(id_); }
  ZoneScope(const ZoneScope&) = delete;
  ZoneScope& operator=(const ZoneScope&) = delete;

 private:
  ZoneId id_;
};

}  // namespace scriptprof::native

#define SCRIPTPROF_CONCAT_INNER(a, b) a##b
#define SCRIPTPROF_CONCAT(a, b) SCRIPTPROF_CONCAT_INNER(a, b)
// SCRIPTPROF_ZONE("name"): a zone from here to the end of the enclosing block. The name is
// interned once per call site (a function-local static).
#define SCRIPTPROF_ZONE(name)                                                                     \
  static const ::scriptprof::native::ZoneId SCRIPTPROF_CONCAT(scriptprof_zone_id_, __LINE__) =    \
      ::scriptprof::native::intern_zone(name);                                                     \
  ::scriptprof::native::ZoneScope SCRIPTPROF_CONCAT(scriptprof_zone_, __LINE__)(                  \
      SCRIPTPROF_CONCAT(scriptprof_zone_id_, __LINE__))
