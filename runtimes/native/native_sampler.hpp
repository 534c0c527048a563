// Sampling a thread that runs no script runtime: its samples are the running fiber's zones.
//
// The timer's signal only counts ticks. The zones cannot change without the thread telling us
// (a zone begin or end, a fiber switch), so the ticks wait there, or at stop(), and become one
// sample of the zone stack they were taken on: the same stack the tick saw, with no work in
// signal context beyond an atomic add.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"
#include "scriptprof/sampling_timer.hpp"
#include "zones.hpp"

namespace scriptprof::native {

class NativeSampler {
 public:
  NativeSampler();
  ~NativeSampler() { stop(); }
  NativeSampler(const NativeSampler&) = delete;
  NativeSampler& operator=(const NativeSampler&) = delete;

  // Starts sampling the calling thread (and becomes its zone listener). False with a reason.
  bool start(const TimerSettings& settings, bool full_stacks, std::string* error);
  // Stops; ticks still waiting become a sample of the zones open now. Call on the same thread.
  void stop();
  bool running() const { return timer_.running(); }

  // Turns waiting ticks into one sample of the running fiber's zones (normal context, on the
  // sampled thread: the zone listener calls it before every change).
  void sample_now();
  // Marks a frame boundary (a game's frame) at the current program time.
  void mark_frame();

  std::shared_ptr<Profile> profile() const { return profile_; }

 private:
  static void on_tick(void* context, std::uint64_t ticks, std::uint64_t program_ns);

  SamplingTimer timer_;
  std::shared_ptr<Profile> profile_;
  std::atomic<std::uint64_t> pending_{0};       // ticks not yet recorded
  std::atomic<std::uint64_t> first_pending_ns_{0};  // program time of the oldest of them
  std::vector<FunctionId> zone_ids_;            // zone -> function in profile_
  std::vector<FunctionId> frames_;              // scratch
  std::uint64_t elapsed_before_ns_ = 0;         // program time of earlier start/stop pairs
};

}  // namespace scriptprof::native
