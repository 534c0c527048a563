#include "angelscript_memory.hpp"

#include <atomic>
#include <cstdlib>

#include "angelscript_sampler.hpp"

namespace scriptprof::angelscript {

namespace {
asALLOCFUNC_t g_host_alloc = nullptr;  // the host's own memory functions, called in turn
asFREEFUNC_t g_host_free = nullptr;
std::atomic<bool> g_installed{false};
}  // namespace

// The sampler's side of an allocation (a friend: it reaches the engine and the tick arm).
struct AllocationHook {
  static void allocated(std::size_t bytes) {
    AngelScriptSampler* s = AngelScriptSampler::current();  // this thread's run only
    if (!s || s->in_sample_) return;                        // the walk's own names are not the program's
    if (!s->engine_.on_alloc(bytes)) return;
    // A space sample is due: arm as a tick does, so the stack is walked at the next statement,
    // never inside the allocator. Inside the critical section: the timer's signal keeps off.
    SamplerEngine::ArmMove move(s->engine_);
    s->contexts_.arm(move.context());
  }
};

namespace {

void* profiled_alloc(std::size_t bytes) {
  void* p = g_host_alloc ? g_host_alloc(bytes) : std::malloc(bytes);
  if (p) AllocationHook::allocated(bytes);
  return p;
}

void profiled_free(void* p) {
  if (g_host_free) g_host_free(p);
  else std::free(p);
}

}  // namespace

bool install_memory_functions(asALLOCFUNC_t alloc, asFREEFUNC_t free) {
  if (g_installed.load()) return true;
  g_host_alloc = alloc;
  g_host_free = free;
  if (asSetGlobalMemoryFunctions(profiled_alloc, profiled_free) < 0) return false;
  g_installed.store(true);
  return true;
}

bool memory_functions_installed() { return g_installed.load(); }

}  // namespace scriptprof::angelscript
