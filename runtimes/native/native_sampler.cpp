#include "native_sampler.hpp"

namespace scriptprof::native {

namespace {

void listener_before_change(void* context) { static_cast<NativeSampler*>(context)->sample_now(); }
void listener_frame(void* context) { static_cast<NativeSampler*>(context)->mark_frame(); }

}  // namespace

NativeSampler::NativeSampler() = default;

Capabilities NativeSampler::capabilities() const {
  Capabilities c;
  c.runtime = "native code";
  return c;  // polled at zone changes; no call, allocation or GC events
}

bool NativeSampler::start(const RunSettings& settings, std::string* error) {
  if (engine_.sampling()) return true;
  ThreadListener listener;
  listener.before_change = listener_before_change;
  listener.frame = listener_frame;
  listener.context = this;
  if (!engine_.active() && !engine_.start(settings, false, error)) return false;
  set_thread_listener(&listener);
  if (!engine_.resume(error, false)) {
    set_thread_listener(nullptr);
    engine_.stop();
    return false;
  }
  return true;
}

void NativeSampler::stop() {
  if (!engine_.active()) return;  // (still active after max_samples suspended the collection)
  sample_now();  // the ticks so far belong to the zones open now
  set_thread_listener(nullptr);
  engine_.stop();
}

void NativeSampler::sample_now() {
  if (!engine_.sampling() || engine_.pending_ticks() == 0) return;
  {
    const SamplerEngine::Sampling sampling(engine_);
    std::uint64_t at = engine_.pending_since_ns();
    std::uint64_t ticks = engine_.take_ticks();
    const Fiber& f = *current_fiber();
    engine_.name_process(f.process, f.name, host_thread_of(f));
    std::vector<FunctionId>& frames = engine_.frames();
    frames.clear();
    engine_.lines().clear();
    append_zone_frames(f, &zone_ids_, [&](FunctionInfo info) { return engine_.add_function(std::move(info)); }, &frames);
    sampling.record(SampleKind::Time, ticks, f.process, at);
  }
  engine_.finish_limit();  // max_samples: collection stops (the profile says limit_reached)
}

void NativeSampler::mark_frame() {
  sample_now();  // the ticks so far belong to the frame that ends
  engine_.mark_frame(current_fiber()->process);
}

}  // namespace scriptprof::native
