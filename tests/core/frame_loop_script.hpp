// The frame loop of the attribution tests, as a game runs one: per frame `step` then `paint`
// over 100 entities (3:1 work, `work` iterations for step), then nap(0.001), 600 frames. The
// truth, step's share of the thread's CPU time, is left in the global `truth`. The runtime's
// test defines the globals nap(seconds) and thread_cpu() (seconds) before it runs.
#pragma once
#include <string>

namespace scriptprof::test {

inline std::string frame_loop_script(int work) {
  return "local WORK = " + std::to_string(work) + R"(
    local state = {}
    for e = 1, 100 do state[e] = e end
    local function step(e) local v = state[e] for i = 1, WORK do v = (v * 1.0000001 + i) % 1000.5 end state[e] = v end
    local function paint(e) local v = state[e] for i = 1, WORK / 3 do v = (v * 1.0000001 + i) % 1000.5 end state[e] = v end
    local t_step, t_paint = 0, 0
    for _ = 1, 600 do
      local t0 = thread_cpu()
      for e = 1, 100 do step(e) end
      local t1 = thread_cpu()
      for e = 1, 100 do paint(e) end
      t_step, t_paint = t_step + (t1 - t0), t_paint + (thread_cpu() - t1)
      nap(0.001)
    end
    truth = t_step / (t_step + t_paint))";
}

}  // namespace scriptprof::test
