// Sampling a thread that runs no script runtime: its samples are the running fiber's zones.
//
// A polling adapter of the engine: the timer's signal only counts ticks (nothing is armed). The
// zones cannot change without the thread telling us (a zone begin or end, a fiber switch), so
// the ticks wait there, or at stop(), and become one sample of the zone stack they were taken
// on: the same stack the tick saw, with no work in signal context beyond an atomic add.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "scriptprof/profile.hpp"
#include "scriptprof/sampler_engine.hpp"
#include "zones.hpp"

namespace scriptprof::native {

class NativeSampler final : private RuntimeAdapter {
 public:
  NativeSampler();
  ~NativeSampler() { stop(); }
  NativeSampler(const NativeSampler&) = delete;
  NativeSampler& operator=(const NativeSampler&) = delete;

  // Starts sampling the calling thread (and becomes its zone listener). False with a reason
  // (a run that asks for calls, bytes or GC cycles: native code reports none of them).
  bool start(const RunSettings& settings, std::string* error);
  // Stops; ticks still waiting become a sample of the zones open now. Call on the same thread.
  void stop();
  bool running() const { return engine_.active(); }

  // Turns waiting ticks into one sample of the running fiber's zones (normal context, on the
  // sampled thread: the zone listener calls it before every change).
  void sample_now();
  // Marks a frame boundary (a game's frame) at the current program time.
  void mark_frame();

  std::shared_ptr<Profile> profile() { return engine_.shared_profile(SampleKind::Time); }
  // The run's engine (to serve it: scriptprof/profile_server.hpp).
  SamplerEngine& engine() { return engine_; }

 private:
  // The adapter contract: nothing to arm (the zones are the stack), so the engine only counts.
  Capabilities capabilities() const override;
  TickArm& tick_arm() override { return no_arm_; }

  PollingArm no_arm_;
  SamplerEngine engine_{this};
  std::vector<FunctionId> zone_ids_;            // zone -> function in the profiles
};

}  // namespace scriptprof::native
