// Function identity and names for the LuaJIT adapter: one part with its own state (normal
// context: LuaJIT's profiler callback and call hook, and the module between runs).
//
// A Lua function is its prototype, keyed by its chunk (lua::LuaChunks, shared with the Lua
// adapter) and its lines (closures of one prototype merge); its name is the one its chunk's text
// declares ("Vec:new", "update"), the same in every run, else its call site's, else
// <anonymous> with its file and line; at the end of a run the name under which it is reachable
// from loaded modules and globals wins ("Vec.new"). A C function (LuaJIT's fast functions
// included) is its function object, named by the library table that holds it ("string.format").
#pragma once
extern "C" {
#include <lua.h>
}

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lua_chunks.hpp"
#include "scriptprof/sampler_engine.hpp"

namespace scriptprof::luajit {

class LuaJitFunctionTable {
 public:
  // The frames a tick's VM state adds under the Lua code that ran: (gc), (jit), (C).
  enum class Pseudo : std::uint8_t { Gc, Jit, CCode };

  explicit LuaJitFunctionTable(SamplerEngine& engine) : engine_(engine) {}
  LuaJitFunctionTable(const LuaJitFunctionTable&) = delete;
  LuaJitFunctionTable& operator=(const LuaJitFunctionTable&) = delete;

  // Forgets every function (the profiles start afresh).
  void reset();
  // A new stack to name (a walk, a thread of the chain, a call): C frames are read from a fresh
  // stack dump.
  void new_stack() { dumped_ = nullptr; }
  // Identity of the function at stack `level` of L (`ar` from lua_getstack): kNoFunction for a
  // boundary (*boundary set) or the profiler's own. Pushes nothing on L. A C frame reads L's
  // stack dump, made once down to `dump_depth` frames (a walk: the whole stack; a call hook:
  // callee and caller).
  FunctionId intern(lua_State* L, lua_Debug* ar, int level, bool* boundary, int dump_depth = 1 << 30);
  // The function value at `idx`, if it was ever met; value_id makes it when it was not.
  bool find_function_value(lua_State* L, int idx, FunctionId* out);
  FunctionId value_id(lua_State* L, int idx);
  FunctionId pseudo(Pseudo which);

  // Names: library C functions at start, every reachable Lua function at a run's end.
  void learn_library_names(lua_State* L);
  void qualify_names(lua_State* L);
  // The host's entry points (a walk stops below them) and the profiler's own C functions.
  void add_boundary(const void* f) { boundaries_.push_back(f); }
  void add_own(const void* f);
  std::size_t own_bytes() const;

 private:
  FunctionId lua_function_id(lua_State* L, lua_Debug* ar);
  static std::uint64_t function_key(std::uint32_t chunk, const lua_Debug& ar);  // chunk and lines
  FunctionId c_function_id(lua_State* L, lua_Debug* ar, std::uint64_t key);
  std::uint64_t c_value_key(lua_State* L, int idx);  // a C function value's key, as frames have it
  void dump_c_keys(lua_State* L, int depth);         // c_keys_ of L's top `depth` frames

  SamplerEngine& engine_;
  std::vector<const void*> boundaries_;
  std::vector<const void*> own_fns_;                        // the profiler's C functions: never a frame
  lua::LuaChunks chunks_;
  std::unordered_map<std::uint64_t, FunctionId> lua_ids_;   // chunk, lines -> id
  std::unordered_map<std::uint64_t, FunctionId> c_ids_;     // C function key -> id
  std::unordered_map<std::uint64_t, std::string> c_names_;  // "string.format"
  lua_State* dumped_ = nullptr;                             // c_keys_ are this thread's, this stack
  std::vector<std::uint64_t> c_keys_;                       // C function keys by stack level
  FunctionId pseudo_ids_[3] = {kNoFunction, kNoFunction, kNoFunction};
};

}  // namespace scriptprof::luajit
