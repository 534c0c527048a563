// The profiler adapter for the tiny interpreter: the whole of what one interpreter needs
// (docs/adapters.md). Copy it for your own language.
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "scriptprof/sampler_engine.hpp"
#include "tiny_vm.hpp"

namespace tiny {

// The tick: it runs in the timer's signal handler with only what it holds (the VM's interrupt
// flag) and the ArmContext it is given, so it cannot reach the engine's interpreter-thread
// surface. Async-signal-safe: one lock-free atomic each; the interpreter polls the flag between
// instructions (and inside long native work).
class TinyTickArm final : public scriptprof::TickArm {
 public:
  explicit TinyTickArm(std::atomic<bool>& interrupt) : interrupt_(interrupt) {}
  scriptprof::ArmResult arm(const scriptprof::ArmContext&) override {
    return interrupt_.exchange(true, std::memory_order_relaxed) ? scriptprof::ArmResult::AlreadyArmed
                                                                : scriptprof::ArmResult::Armed;
  }
  void disarm(const scriptprof::ArmContext&) override { interrupt_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool>& interrupt_;
};

class TinyAdapter final : private scriptprof::RuntimeAdapter {
 public:
  explicit TinyAdapter(Vm& vm);
  ~TinyAdapter();
  // Starts a run (false with the engine's reason), and ends it.
  bool start(const scriptprof::RunSettings& settings, std::string* error);
  void stop();
  scriptprof::Profile& profile() { return engine_.profile(); }

 private:
  // The contract: what the interpreter can do, and its tick.
  scriptprof::Capabilities capabilities() const override;
  scriptprof::TickArm& tick_arm() override { return tick_arm_; }

  // The interpreter's hooks.
  static void safe_point(void* self);
  static void on_call(void* self, int callee, int caller);

  Vm& vm_;
  TinyTickArm tick_arm_{vm_.interrupt};
  scriptprof::SamplerEngine engine_{this};
  std::vector<scriptprof::FunctionId> ids_;  // the interpreter's function index -> the engine's id
};

}  // namespace tiny
