#include "run_guard.hpp"

extern "C" {
#include <lauxlib.h>
}
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "module_sampler.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/statprof_flat_report.hpp"

namespace scriptprof::lua {
namespace {

const char kRunGuardMeta[] = "scriptprof.run_guard";

// A run whose report is still owed.
struct PendingReport {
  ModuleSampler* sampler;
  bool to_file;
  std::string file;
};

// Runs owing a report, for the atexit handler. Guards add and remove themselves.
std::mutex g_mutex;
std::vector<PendingReport*>* g_pending = nullptr;  // never freed: atexit may run after statics die

// Stops the run and writes its report where it was asked for.
bool write_report(PendingReport* p, std::string* error) {
  p->sampler->stop();
  p->sampler->engine().mark_analyzed();
  std::string text = statprof_flat_report(p->sampler->engine().profile());
  if (p->to_file) return write_file_atomically(p->file, text, error);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  return true;
}

// The report of a run ended by an error or an exit. Nobody is left to hear of a failure but
// standard error; the error in flight, or the exit status, must not change.
void write_owed(PendingReport* p) {
  std::string error;
  if (!write_report(p, &error)) std::fprintf(stderr, "profiler: the report was not written: %s\n", error.c_str());
}

void forget(PendingReport* p) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_pending->erase(std::remove(g_pending->begin(), g_pending->end(), p), g_pending->end());
}

// os.exit(code) calls exit() with the run still going.
void write_owed_at_exit() {
  std::vector<PendingReport*> owed;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    owed.swap(*g_pending);
  }
  for (PendingReport* p : owed) {
    write_owed(p);
    delete p;
  }
}

struct Guard {
  ModuleSampler* sampler;
  PendingReport* owed;  // null once the report is not owed
};

Guard* guard_at(lua_State* L, int idx) { return static_cast<Guard*>(luaL_checkudata(L, idx, kRunGuardMeta)); }

// The report the guard owes, if any, now the caller's alone (the atexit handler forgets it).
std::unique_ptr<PendingReport> take_owed(Guard* g) {
  std::unique_ptr<PendingReport> p(g->owed);
  g->owed = nullptr;
  if (p) forget(p.get());
  return p;
}

// __close: the run ends here, by return (done already), by error, or by lua_close.
int guard_close(lua_State* L) {
  Guard* g = guard_at(L, 1);
  g->sampler->stop();
  if (auto p = take_owed(g)) write_owed(p.get());
  return 0;
}

// __gc: a run in a coroutine that was never finished nor closed owes nothing any more.
int guard_gc(lua_State* L) {
  take_owed(guard_at(L, 1));
  return 0;
}

}  // namespace

void push_run_guard(lua_State* L, ModuleSampler* sampler, bool display, const char* file) {
  auto* g = static_cast<Guard*>(lua_newuserdatauv(L, sizeof(Guard), 0));
  *g = {sampler, nullptr};
  luaL_setmetatable(L, kRunGuardMeta);
  if (!display) return;
  g->owed = new PendingReport{sampler, file != nullptr, file ? file : ""};
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_pending) {
    g_pending = new std::vector<PendingReport*>;
    std::atexit(write_owed_at_exit);
  }
  g_pending->push_back(g->owed);
}

bool run_guard_finish(lua_State* L, int idx) {
  Guard* g = guard_at(L, idx);
  g->sampler->stop();
  bool written = true;
  {
    std::string error;
    if (auto p = take_owed(g)) written = write_report(p.get(), &error);
    if (!written) lua_pushstring(L, error.c_str());
  }
  return written;
}

lua_CFunction run_guard_close_function() { return guard_close; }

void register_run_guard(lua_State* L) {
  if (luaL_newmetatable(L, kRunGuardMeta)) {
    lua_pushcfunction(L, guard_close);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, guard_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
}

}  // namespace scriptprof::lua
