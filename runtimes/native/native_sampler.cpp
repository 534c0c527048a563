#include "native_sampler.hpp"

namespace scriptprof::native {

namespace {

void listener_before_change(void* context) { static_cast<NativeSampler*>(context)->sample_now(); }
void listener_frame(void* context) { static_cast<NativeSampler*>(context)->mark_frame(); }

}  // namespace

NativeSampler::NativeSampler() : profile_(std::make_shared<Profile>()) {}

// Signal context. Async-signal-safe: two lock-free atomic operations, nothing else.
void NativeSampler::on_tick(void* context, std::uint64_t ticks, std::uint64_t program_ns) {
  auto* self = static_cast<NativeSampler*>(context);
  if (self->pending_.fetch_add(ticks, std::memory_order_acq_rel) == 0)
    self->first_pending_ns_.store(program_ns, std::memory_order_relaxed);
}

bool NativeSampler::start(const TimerSettings& settings, bool full_stacks, std::string* error) {
  if (timer_.running()) return true;
  Profile& p = *profile_;
  p.period_ns = settings.period_ns;
  p.clock = settings.clock == TimerClock::Cpu ? ClockKind::Cpu : ClockKind::Wall;
  p.keep_samples = full_stacks;
  pending_ = 0;
  ThreadListener listener;
  listener.before_change = listener_before_change;
  listener.frame = listener_frame;
  listener.context = this;
  set_thread_listener(&listener);
  if (!timer_.start(settings, on_tick, this, error)) {
    set_thread_listener(nullptr);
    return false;
  }
  return true;
}

void NativeSampler::stop() {
  if (!timer_.running()) return;
  std::uint64_t left = timer_.stop();  // no tick runs after this
  pending_.fetch_add(left);
  sample_now();
  set_thread_listener(nullptr);
  std::uint64_t run_ns = timer_.program_ns();
  elapsed_before_ns_ += run_ns;
  profile_->total_seconds += static_cast<double>(run_ns) / 1e9;
  profile_->health.signals += timer_.signals();
}

void NativeSampler::sample_now() {
  std::uint64_t ticks = pending_.exchange(0, std::memory_order_acq_rel);
  if (ticks == 0) return;
  Profile& p = *profile_;
  const Fiber& f = *current_fiber();
  if (p.threads.empty() || p.threads.back().id != f.process)  // add_thread skips known ids
    p.add_thread(f.process, f.name, host_thread_of(f));
  frames_.clear();
  append_zone_frames(f, &zone_ids_, [&](FunctionInfo info) { return p.add_function(std::move(info)); }, &frames_);
  std::uint64_t t = elapsed_before_ns_ + first_pending_ns_.load(std::memory_order_relaxed);
  p.add_sample(f.process, t, ticks, frames_.data(), frames_.size());
  ++p.health.samples_taken;
}

void NativeSampler::mark_frame() {
  sample_now();  // the ticks so far belong to the frame that ends
  std::uint64_t t = elapsed_before_ns_ + (timer_.running() ? timer_.program_ns() : 0);
  profile_->frame_marks.push_back({current_fiber()->process, t});
}

}  // namespace scriptprof::native
