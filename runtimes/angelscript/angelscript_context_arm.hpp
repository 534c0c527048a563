// The contexts execute() runs on one thread, outermost first, and the suspension the timer's
// thread asks of the innermost: the AngelScript adapter's tick (TickArm), a part with its own
// state. It holds no engine: a tick reaches the engine only through the ArmContext it is given.
//
// arm() runs on the timer's own thread, beside the program. It calls three asIScriptContext
// methods that only read or set the context's fields: GetState() returns its status,
// GetSystemFunction() the registered function being called, and Suspend() sets the suspend
// flags (AngelScript documents Suspend as callable from another thread). It touches a context
// only while execute() runs it: arming_ is raised before the depth is read, and execute()
// lowers the depth before waiting for arming_ to fall (take()), so a context execute() has
// left (and the host may release) is never reached. No allocation, no lock, no signal.
#pragma once
#include <angelscript.h>

#include <atomic>
#include <cstdint>

#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::angelscript {

#if defined(AS_USE_NAMESPACE) || defined(AS_DEBIAN_LIB)
using namespace AngelScript;  // a build of AngelScript in its namespace (Debian's)
#endif

class ContextArm final : public TickArm {
 public:
  static constexpr int kMaxDepth = 32;  // deeper execute() calls run unsampled (their time
                                        // is their caller's registered function's)

  // ---- the owning thread (execute()) ----
  int depth() const { return depth_.load(std::memory_order_relaxed); }  // execute() calls running
  asIScriptContext* context(int i) const { return running_[i].ctx.load(std::memory_order_relaxed); }
  std::uint32_t process(int i) const { return running_[i].process; }
  // execute() of ctx begins at depth(): arm() may reach it from now on.
  void enter(asIScriptContext* ctx, std::uint32_t process) {
    const int depth = depth_.load(std::memory_order_relaxed);
    running_[depth].ctx.store(ctx, std::memory_order_release);
    running_[depth].process = process;
    depth_.store(depth + 1, std::memory_order_seq_cst);  // after the slot: arm() reads it first
  }
  // execute() at `depth` is leaving: no new arm reaches its context (take() waits out those in
  // flight); its slot stays readable for the samples still to come, until clear().
  void lower(int depth) { depth_.store(depth, std::memory_order_seq_cst); }
  void clear(int depth) { running_[depth].ctx.store(nullptr, std::memory_order_release); }
  // After an Execute() of ctx at `depth` returned, arms in flight waited out: {whether an arm
  // of it was set, whether that arm found it stopped once its flag was set (the flag may then
  // outlive this Execute(): a stray at its next stop)}.
  std::pair<bool, bool> take(int depth, asIScriptContext* ctx);
  // The registered function the arm at `depth` found running (null: none).
  asIScriptFunction* armed_native(int depth) const { return armed_native_[depth].load(std::memory_order_relaxed); }

  // ---- the tick (the timer's thread) ----
  ArmResult arm(const ArmContext& context) override;
  // A suspension asked for cannot be taken back; execute() takes it, samples nothing (the run
  // is suspended) and goes on.
  void disarm(const ArmContext&) override {}

 private:
  struct Running {  // one execute() on this thread's stack of them
    std::atomic<asIScriptContext*> ctx{nullptr};  // read by arm() on the timer thread
    std::uint32_t process = 0;
  };
  Running running_[kMaxDepth];  // running_[depth_ - 1] runs; written before depth_ covers it
  std::atomic<int> depth_{0};
  std::atomic<int> arming_{0};  // arm() calls reading running_ now: take() waits them out
  std::atomic<asIScriptContext*> armed_[kMaxDepth] = {};          // asked to suspend, by depth
  std::atomic<asIScriptFunction*> armed_native_[kMaxDepth] = {};  // the registered function it was in
  std::atomic<bool> armed_late_[kMaxDepth] = {};  // the arm found it stopped once its flag was set
};

}  // namespace scriptprof::angelscript
