// ContextArm (angelscript_context_arm.hpp).
#include "angelscript_context_arm.hpp"

#include <thread>

namespace scriptprof::angelscript {

// The timer's thread: see the header for what it may touch.
ArmResult ContextArm::arm(const ArmContext&) {
  arming_.fetch_add(1, std::memory_order_seq_cst);
  ArmResult r = ArmResult::NotNow;  // the host runs: sampled at the next execute()
  int depth = depth_.load(std::memory_order_seq_cst);
  if (depth > 0 && depth <= kMaxDepth) {
    const int i = depth - 1;
    asIScriptContext* ctx = running_[i].ctx.load(std::memory_order_acquire);
    if (armed_[i].load(std::memory_order_acquire)) {
      r = ArmResult::AlreadyArmed;
    } else if (ctx && ctx->GetState() == asEXECUTION_ACTIVE) {
      // Only an active context: its Execute() either stops at the flag or clears it as it ends;
      // a flag set as it stopped is a stray execute() records (take()).
      armed_native_[i].store(ctx->GetSystemFunction(), std::memory_order_relaxed);
      armed_[i].store(ctx, std::memory_order_seq_cst);
      ctx->Suspend();
      // A full barrier (a locked RMW), so that the flag is visible before the status is read
      // again: still active means the VM will stop at the flag or clear it as Execute() ends;
      // otherwise it stopped first, and the flag may outlive that Execute() (take()).
      arming_.fetch_add(0, std::memory_order_seq_cst);
      if (ctx->GetState() != asEXECUTION_ACTIVE) armed_late_[i].store(true, std::memory_order_seq_cst);
      r = ArmResult::Armed;
    }
  }
  arming_.fetch_sub(1, std::memory_order_seq_cst);
  return r;
}

// Waits for arms in flight first, so that their flags are set when it decides.
std::pair<bool, bool> ContextArm::take(int depth, asIScriptContext* ctx) {
  while (arming_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  const bool armed = armed_[depth].exchange(nullptr, std::memory_order_seq_cst) == ctx;
  const bool late = armed_late_[depth].exchange(false, std::memory_order_seq_cst);
  return {armed, late};
}

}  // namespace scriptprof::angelscript
