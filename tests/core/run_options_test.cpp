// The run-option table every front end reads: each option's accepted values, its errors, and
// that a refused value leaves the settings as they were.
#include <catch2/catch.hpp>

#include <signal.h>

#include <set>
#include <string>

#include "scriptprof/run_options.hpp"

using namespace scriptprof;

namespace {

// The error for `text` given to `name`, or "" when accepted.
std::string text_error(const char* name, const char* text, RunSettings* s = nullptr) {
  RunSettings local;
  std::string error;
  return parse_run_option(s ? s : &local, name, text, &error) ? "" : error;
}

}  // namespace

TEST_CASE("run options: names are unique and every command-line flag is a long option") {
  std::set<std::string> names, flags;
  for (const auto& spec : run_option_specs()) {
    CHECK(names.insert(spec.name).second);
    CHECK(is_run_option(spec.name));
    CHECK(std::string(spec.help).size() > 10);
    if (spec.flag) {
      CHECK(std::string(spec.flag).rfind("--", 0) == 0);
      CHECK(flags.insert(spec.flag).second);
    }
    CHECK(run_option_names().find(spec.name) != std::string::npos);
  }
  CHECK_FALSE(is_run_option("loop"));  // the Lua module's own, not a run option
}

TEST_CASE("run options: rates become periods, rounded, and hz=false turns time sampling off") {
  RunSettings s;
  std::string error;
  REQUIRE(set_run_option(&s, "hz", OptionValue::of_int(1000), &error));
  CHECK(s.period_ns == 1'000'000);
  REQUIRE(set_run_option(&s, "hz", OptionValue::of_number(3.0), &error));
  CHECK(s.period_ns == 333'333'333);  // rounded, never truncated to a different rate
  REQUIRE(parse_run_option(&s, "hz", "100000", &error));
  CHECK(s.period_ns == 10'000);
  REQUIRE(set_run_option(&s, "hz", OptionValue::of_bool(false), &error));
  CHECK_FALSE(s.sample_time);
  REQUIRE(parse_run_option(&s, "hz", "250", &error));
  CHECK(s.sample_time);
  CHECK(s.period_ns == 4'000'000);
}

TEST_CASE("run options: a bad value says what the option must be and what it got") {
  CHECK(text_error("hz", "0") == "must be a number in (0, 100000], got 0");
  CHECK(text_error("hz", "100001") == "must be a number in (0, 100000], got 100001");
  CHECK(text_error("hz", "nan") == "must be a number in (0, 100000], got nan");
  CHECK(text_error("hz", "fast") == "must be a number in (0, 100000] or false, got \"fast\"");
  CHECK(text_error("hz", "true") == "must be a number in (0, 100000] or false, got true");
  CHECK(text_error("clock", "gpu") == "must be \"cpu\" or \"wall\", got \"gpu\"");
  CHECK(text_error("count_calls", "1") == "must be a boolean, got 1");
  CHECK(text_error("alloc", "0") == "must be true, false or the mean bytes between samples (an integer >= 1), got 0");
  CHECK(text_error("alloc", "1.5") ==
        "must be true, false or the mean bytes between samples (an integer >= 1), got 1.5");
  CHECK(text_error("max_samples", "-1") == "must be an integer >= 0 (0: no bound), got -1");
  CHECK(text_error("max_samples", " 5") == "must be an integer >= 0 (0: no bound), got \" 5\"");
  CHECK(text_error("max_samples", "99999999999999999999") ==
        "must be an integer >= 0 (0: no bound), got 1e+20");
  OptionValue table;
  table.type_name = "table";
  RunSettings s;
  std::string error;
  CHECK_FALSE(set_run_option(&s, "full_stacks", table, &error));
  CHECK(error == "must be a boolean, got a table");
  CHECK_FALSE(set_run_option(&s, "hx", OptionValue::of_int(10), &error));
  CHECK(error.rfind("unknown option 'hx' (known: hz, clock, ", 0) == 0);
}

TEST_CASE("run options: a refused value leaves the settings as they were") {
  RunSettings s;
  std::string error;
  REQUIRE(parse_run_option(&s, "hz", "500", &error));
  REQUIRE(parse_run_option(&s, "alloc", "4096", &error));
  REQUIRE(parse_run_option(&s, "max_samples", "7", &error));
  REQUIRE(parse_run_option(&s, "clock", "wall", &error));
  for (const char* name : {"hz", "alloc", "max_samples", "clock", "gc", "count_calls"})
    CHECK_FALSE(text_error(name, "-3.5", &s).empty());
  CHECK(s.period_ns == 2'000'000);
  CHECK(s.sample_time);
  CHECK(s.alloc_bytes == 4096);
  CHECK(s.max_samples == 7);
  CHECK(s.clock == TimerClock::Wall);
  CHECK_FALSE(s.gc_samples);
  CHECK_FALSE(s.count_calls);
}

TEST_CASE("run options: switches and alloc's default") {
  RunSettings s;
  std::string error;
  for (const char* name : {"count_calls", "full_stacks", "gc", "interpret_closures"})
    REQUIRE(parse_run_option(&s, name, "true", &error));
  CHECK(s.count_calls);
  CHECK(s.full_stacks);
  CHECK(s.gc_samples);
  CHECK(s.interpret_closures);
  REQUIRE(parse_run_option(&s, "start_sampling", "false", &error));
  CHECK_FALSE(s.start_sampling);
  REQUIRE(set_run_option(&s, "alloc", OptionValue::of_bool(true), &error));
  CHECK(s.alloc_bytes == kDefaultAllocBytes);
  REQUIRE(set_run_option(&s, "alloc", OptionValue::of_bool(false), &error));
  CHECK(s.alloc_bytes == 0);
  REQUIRE(parse_run_option(&s, "max_samples", "0", &error));
  CHECK(s.max_samples == 0);
}

TEST_CASE("signal: the timer's signal by name or number - and refused when the profiler cannot use it") {
  RunSettings s;
  std::string error;
  CHECK(s.signal == 0);  // the timer's default, SIGRTMAX-3
  REQUIRE(parse_run_option(&s, "signal", "SIGRTMIN+5", &error));
  CHECK(s.signal == SIGRTMIN + 5);
  REQUIRE(parse_run_option(&s, "signal", "SIGPROF", &error));
  CHECK(s.signal == SIGPROF);
  REQUIRE(set_run_option(&s, "signal", OptionValue::of_int(SIGRTMAX - 1), &error));
  CHECK(s.signal == SIGRTMAX - 1);
  CHECK(timer_signal_name(SIGRTMAX - 1) == "SIGRTMAX-1");
  for (const char* bad : {"SIGKILL", "9", "SIGRTMAX+1", "SIGRTMIN-1", "SIGSEGV", "rt"}) {
    INFO(bad);
    CHECK_FALSE(parse_run_option(&s, "signal", bad, &error));
    CHECK(error.find("is not a signal the profiler can use") != std::string::npos);
  }
  CHECK(s.signal == SIGRTMAX - 1);  // unchanged by the refusals
}
