// The profiler adapter for the tiny interpreter: the whole of what one interpreter needs
// (docs/adapters.md). Copy it for your own language.
#pragma once
#include <string>
#include <vector>

#include "scriptprof/sampler_engine.hpp"
#include "tiny_vm.hpp"

namespace tiny {

class TinyAdapter final : private scriptprof::RuntimeAdapter {
 public:
  explicit TinyAdapter(Vm& vm);
  ~TinyAdapter();
  // Starts a run (false with the engine's reason), and ends it.
  bool start(const scriptprof::RunSettings& settings, std::string* error);
  void stop();
  scriptprof::Profile& profile() { return engine_.profile(); }

 private:
  // The contract. arm() runs in the timer's signal handler.
  scriptprof::Capabilities capabilities() const override;
  scriptprof::ArmResult arm(const scriptprof::ArmContext& context) override;
  void disarm(const scriptprof::ArmContext& context) override;

  // The interpreter's hooks.
  static void safe_point(void* self);
  static void on_call(void* self, int callee, int caller);

  Vm& vm_;
  scriptprof::SamplerEngine engine_{this};
  std::vector<scriptprof::FunctionId> ids_;  // the interpreter's function index -> the engine's id
};

}  // namespace tiny
