// Which FunctionId a running Lua or C function is, and its name: one part of the Lua adapter,
// with its own state (normal context only: the stack walk, call counting and the module call it
// at safe points, never from a signal handler).
//
// A Lua function is its prototype, keyed by its chunk's source string and its lines (closures
// of one prototype merge, unless interpret_closures keeps them apart); a C function is its
// function pointer.
#pragma once
extern "C" {
#include <lua.h>
}

#include "lua_api_compat.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lua_chunks.hpp"
#include "scriptprof/sampler_engine.hpp"
#include "zones.hpp"

namespace scriptprof::lua {

class LuaFunctionTable {
 public:
  // Functions are added to `engine`'s profiles, which share their ids.
  explicit LuaFunctionTable(SamplerEngine& engine) : engine_(engine) {}
  LuaFunctionTable(const LuaFunctionTable&) = delete;
  LuaFunctionTable& operator=(const LuaFunctionTable&) = delete;

  // A run's choices: closures apart (Allegro's :interpret-closures), chunk text kept for
  // annotation. Set at start.
  void configure(bool interpret_closures, bool keep_chunk_text) {
    interpret_closures_ = interpret_closures;
    chunks_.keep_text(keep_chunk_text);
  }
  // Forgets every function (the profiles start afresh); `main` holds the closures' table.
  void reset(lua_State* main);

  // The function running at `ar` in L: kNoFunction for the profiler's own C functions, and
  // *boundary set at one of its entry points. `line`, when given, gets the frame's current line.
  FunctionId intern(lua_State* L, lua_Debug* ar, bool* boundary, int* line = nullptr);
  // The function value at stack index `idx`, if it was ever met.
  bool find_function_value(lua_State* L, int idx, FunctionId* out);
  // The id of C function `fp` (made on first sight), named by its library or its call site.
  FunctionId c_function_id(const void* fp, const char* call_site_name);
  // A C function a signal handler read from a frame: believed only when known by name or seen
  // on a stack, and never the profiler's own.
  bool credible_c_function(const void* fp) const;
  // The zones open on fiber `f`, as functions (outermost first), appended to `out`.
  void zone_frames(const native::Fiber& f, std::vector<FunctionId>* out);

  // Names: library C functions from package.loaded at start ("string.rep"); at a run's end
  // every reachable Lua function by where it lives ("Vec.new").
  void learn_c_names(lua_State* L);
  void qualify_names(lua_State* L);
  // The profiler's entry points (a walk stops below them), its other C functions (never a
  // frame), and fixed report names for C functions.
  void add_boundary(const void* f) { boundaries_.insert(f); }
  void add_own(const void* f) { own_.insert(f); }
  void name_c_function(const void* f, std::string name) { c_names_[f] = std::move(name); }

  // Closure number `n` of the run (interpret_closures) pushed, or nil.
  void push_closure(lua_State* L, lua_Integer n);
  // The source of a function's chunk, if kept.
  const std::string* source_of(FunctionId f) const;
  // Bytes of the table's own bookkeeping.
  std::size_t own_bytes() const;

 private:
  struct LuaKey {
    const void* source;  // the prototype's source string (stable while the prototype lives)
    int line;
    int last_line;
    bool operator==(const LuaKey& o) const {
      return source == o.source && line == o.line && last_line == o.last_line;
    }
  };
  struct LuaKeyHash {
    std::size_t operator()(const LuaKey& k) const {
      return std::hash<const void*>()(k.source) ^ (std::size_t(k.line) * 0x9e3779b97f4a7c15ull) ^
             (std::size_t(k.last_line) << 20);
    }
  };
  FunctionId new_function(FunctionInfo info, std::uint32_t chunk = LuaChunks::kNone, std::uint8_t name_tries = 0,
                          lua_Integer closure_no = 0);
  void rename_function(FunctionId id, const std::string& name);
  bool same_chunk(FunctionId id, const lua_Debug* ar) const;
  void learn_name(lua_State* L, lua_Debug* ar, FunctionId id);
  static bool global_name(lua_State* L, lua_Debug* ar, std::string* out);
  void remember_closure(lua_State* L, lua_Debug* ar, FunctionId id);

  SamplerEngine& engine_;
  bool interpret_closures_ = false;
  LuaChunks chunks_;
  std::unordered_map<LuaKey, FunctionId, LuaKeyHash> lua_ids_;
  std::unordered_map<const void*, FunctionId> c_ids_;
  std::unordered_map<const void*, std::string> c_names_;  // "string.rep" for library C functions
  const void* collector_ = nullptr;                       // collectgarbage: its samples are time in GC
  std::unordered_set<const void*> boundaries_;            // profiler entry points (C functions)
  std::unordered_set<const void*> own_;                   // other profiler C functions
  // Per FunctionId (the engine's own functions included, with none of these): its chunk or
  // LuaChunks::kNone, the call-site sightings left to find a missing name, its closure number or 0.
  std::vector<std::uint32_t> fn_chunk_;
  std::vector<std::uint8_t> name_tries_;
  std::vector<lua_Integer> closure_no_;
  lua_Integer closures_seen_ = 0;                   // interpret_closures numbering
  std::vector<FunctionId> closure_by_number_;      // closure n is closure_by_number_[n - 1]
  std::vector<FunctionId> zone_ids_;               // native zone -> its function
};

}  // namespace scriptprof::lua
