#include "tiny_adapter.hpp"

#include <cstdio>

namespace tiny {

using namespace scriptprof;

TinyAdapter::TinyAdapter(Vm& vm) : vm_(vm) {
  // Identity: the interpreter's functions never go away, so their index is a stable key; each
  // is described once, here, outside the signal path.
  for (const Function& f : vm.functions()) ids_.push_back(engine_.add_function({f.name, "program.tiny", f.line}));
}

TinyAdapter::~TinyAdapter() { stop(); }

Capabilities TinyAdapter::capabilities() const {
  Capabilities c;
  c.runtime = "tiny";
  c.signal_arm = true;   // TinyTickArm only stores an atomic flag
  c.call_events = true;  // Vm::Hooks::on_call sees every call
  return c;              // no allocator or GC of its own: no space or gc profiles
}

bool TinyAdapter::start(const RunSettings& settings, std::string* error) {
  if (!engine_.start(settings, settings.count_calls, error)) return false;
  vm_.hooks.context = this;
  vm_.hooks.safe_point = safe_point;
  vm_.hooks.on_call = settings.count_calls ? on_call : nullptr;  // calls cost time: only when asked
  if (!engine_.resume(error, false)) {
    stop();
    return false;
  }
  return true;
}

void TinyAdapter::stop() {
  if (!engine_.active()) return;
  engine_.suspend();
  vm_.hooks = Hooks{};
  vm_.interrupt = false;
  engine_.stop();
}

// The safe point: the interpreter's frames are complete. Walk them, root first, into the
// engine's sink, and record one sample carrying every tick since the last one.
void TinyAdapter::safe_point(void* self_ptr) {
  auto* self = static_cast<TinyAdapter*>(self_ptr);
  SamplerEngine& e = self->engine_;
  self->vm_.interrupt.store(false, std::memory_order_relaxed);
  {
    const SamplerEngine::Sampling sampling(e);  // not program time; the only way to record
    PendingWeight w = e.take_pending();
    if (w.ticks) {
      e.frames().clear();
      e.lines().clear();
      for (const Frame& f : self->vm_.frames()) {
        e.frames().push_back(self->ids_[static_cast<std::size_t>(f.function)]);
        e.lines().push_back(f.line);
      }
      sampling.record(SampleKind::Time, w.ticks, 0, w.since_ns);  // stamped at its first tick
    }
  }
  if (e.finish_limit()) std::fprintf(stderr, "tiny: max_samples reached; collection stopped\n");
}

void TinyAdapter::on_call(void* self_ptr, int callee, int caller) {
  auto* self = static_cast<TinyAdapter*>(self_ptr);
  if (!self->engine_.sampling()) return;
  self->engine_.record_call(self->ids_[static_cast<std::size_t>(callee)],
                            caller < 0 ? kNoFunction : self->ids_[static_cast<std::size_t>(caller)]);
}

}  // namespace tiny
