// A thread that wakes while the timer's thread arms it (arm_blocked) must find its program's
// hooks as it left them. These helpers make that moment last: the program sets and clears a line
// hook of its own thousands of times while another thread hands the engine a blocked thread's
// tick without pause, as the timer's thread does, as if the profiled thread woke at every one.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::test {

// Leaves in the global `result` the events the hook of tests/lua/hook_toggle.lua saw and the
// hook left at the end: the same text with or without a profiler, whatever the release.
inline std::string hook_toggle_script() {
  return std::string("local events, hook = dofile('") + SCRIPTPROF_TEST_LUA_DIR +
         "/hook_toggle.lua')()\n"
         "result = events .. ' line events, hook after: ' .. tostring(hook)";
}

// Runs `run` while another thread hands `engine` blocked ticks until it returns.
template <class Run>
void with_blocked_arms(SamplerEngine& engine, Run run) {
  std::atomic<bool> done{false};
  // Program time as the timer would give it (it began before this), so that the sampling
  // budget lets arms through as it would in a run.
  const auto start = std::chrono::steady_clock::now();
  std::thread armer([&] {
    while (!done.load(std::memory_order_relaxed)) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
      engine.on_blocked_tick(1, 1, static_cast<std::uint64_t>(ns.count()));
    }
  });
  run();
  done = true;
  armer.join();
}

}  // namespace scriptprof::test
