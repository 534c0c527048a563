// A run's options, and the one table that names them for every front end: the Lua module's
// option keys, luaprof's flags and the C API all read and check an option here, so a rate, a
// clock or a bound means the same thing, with the same error, wherever it is given.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "scriptprof/sampling_timer.hpp"

namespace scriptprof {

constexpr double kMaxHz = 100000.0;                      // the highest sampling rate accepted
constexpr std::uint64_t kDefaultAllocBytes = 64 * 1024;  // alloc=true: about 1% cost (docs/design.md)
constexpr std::uint64_t kDefaultHeapBytes = 512 * 1024;  // heap=true: Go's MemProfileRate

// What a run collects: the same for every interpreter.
struct RunSettings {
  TimerClock clock = TimerClock::Cpu;
  std::uint64_t period_ns = 10'000'000;  // 100 Hz
  bool sample_time = true;               // the timer samples stacks (off: gc or space only)
  bool count_calls = false;              // exact calls through the runtime's call events
  bool full_stacks = false;              // keep every sample (timeline), not only the tree
  bool lines = false;                    // the running line exactly where that costs: LuaJIT's
                                         // line-level safe points (function-level without)
  bool gc_samples = false;               // a stack sample after every GC cycle (statprof's gcprof)
  std::uint64_t alloc_bytes = 0;         // mean bytes between allocation samples (0: off)
  std::uint64_t max_samples = 100'000;   // stacks per profile before collection stops (0: no bound)
  bool interpret_closures = false;       // closures of one function stay apart (runtimes with closures)
  bool start_sampling = true;            // false: started but suspended (Allegro's start-sampling-p)
  bool hold_clock = false;               // program time waits for release_clock(): the caller
                                         // has more set-up before the profiled code runs
  int signal = 0;                        // the timer's signal (0: default_timer_signal())
  bool ticks_paused = false;             // the timer starts without ticks: a profile server
                                         // gives it a rate per request (set_tick_period)
  bool served = false;                   // a profile server reads the run (make_served)
  // A served run keeps its sampled blocks until freed: the in-use heap (refused where the
  // runtime cannot see every free, or the run is not served). Off by default: it sees every
  // allocation and free for the whole run.
  bool heap = false;
  std::uint64_t heap_bytes = kDefaultHeapBytes;  // its mean bytes between sampled blocks, when
                                                 // alloc_bytes gives none
};

// One option as the front ends show it.
struct RunOptionSpec {
  const char* name;  // the Lua key and the C name: "count_calls"
  const char* flag;  // luaprof's flag: "--calls" (nullptr: not on the command line)
  const char* arg;   // the flag's argument in usage text ("N", "cpu|wall"; nullptr: a switch)
  const char* help;  // one line for usage text
};

// Every run option, in the order usage text lists them.
const std::vector<RunOptionSpec>& run_option_specs();

// A value as a front end holds it: typed (a Lua value, a C field) or, for `Other`, a type the
// option can never take (its name is in `type_name`).
struct OptionValue {
  enum class Type : std::uint8_t { Boolean, Integer, Number, String, Other };
  Type type = Type::Other;
  bool boolean = false;
  std::int64_t integer = 0;
  double number = 0;
  std::string_view string;
  const char* type_name = "";

  static OptionValue of_bool(bool b) { OptionValue v; v.type = Type::Boolean; v.boolean = b; return v; }
  static OptionValue of_int(std::int64_t i) { OptionValue v; v.type = Type::Integer; v.integer = i; v.number = static_cast<double>(i); return v; }
  static OptionValue of_number(double d) { OptionValue v; v.type = Type::Number; v.number = d; return v; }
  static OptionValue of_string(std::string_view s) { OptionValue v; v.type = Type::String; v.string = s; return v; }
};

// Sets option `name` in `settings`. False, with `settings` unchanged, for an unknown name or a
// bad value; `error` then says what the option must be and what it got ("must be a number in
// (0, 100000], got 0"), for the front end to prefix with how it names the option.
bool set_run_option(RunSettings* settings, std::string_view name, const OptionValue& value, std::string* error);
// The same from text (a command line, a config file): the text is read as the option's type.
bool parse_run_option(RunSettings* settings, std::string_view name, std::string_view text, std::string* error);
// Whether `name` is a run option.
bool is_run_option(std::string_view name);
// The names, comma-separated, for "unknown option" messages.
const std::string& run_option_names();

// The timer period of a rate: false with "must be a number in (0, 100000], got X" otherwise.
bool period_of_hz(double hz, std::uint64_t* period_ns, std::string* error);

}  // namespace scriptprof
