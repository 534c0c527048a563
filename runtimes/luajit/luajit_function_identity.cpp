// Function identity and names for the LuaJIT adapter.
//
// A Lua function is its prototype, keyed by its chunk and its lines (closures of one prototype
// merge); its name is the one its chunk's text declares ("Vec:new", "update"), the same in every
// run, else its call site's, else <anonymous> with its file and line; at the end of a run the
// name under which it is reachable from loaded modules and globals wins ("Vec.new"). A C
// function (LuaJIT's fast functions included) is its function object, named by the library
// table that holds it ("string.format").
extern "C" {
#include <lauxlib.h>
#include <luajit.h>
}

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "lua_reachable_names.hpp"
#include "lua_source_text.hpp"
#include "luajit_sampler.hpp"

namespace scriptprof::luajit {

namespace {
constexpr const char* kAnonymous = "<anonymous>";  // labels add the file and line
constexpr std::size_t kEdge = 24;                   // bytes of a source's ends kept to tell chunks apart
constexpr std::uint64_t kBuiltin = std::uint64_t{1} << 63;  // a builtin's key: its ffid with this bit
}  // namespace

// The keys of the C functions of L's top frames by level (0 for a Lua frame), from LuaJIT's own
// stack dump ("[builtin#N]" for a builtin, "@0xADDR" for any other C function, "chunk:line" for
// Lua), made once per walk. It pushes nothing on L, whose stack may be at its limit when a
// sample is taken (lua_getinfo's "f" pushes, and a push there raises "stack overflow").
void LuaJitSampler::dump_c_keys(lua_State* L, int depth) {
  std::vector<std::uint64_t>* keys = &c_keys_;
  dumped_ = L;
  keys->clear();
  std::size_t len = 0;
  const char* s = luaJIT_profile_dumpstack(L, "l\x1f", depth, &len);  // leaf first
  for (std::size_t at = 0; at < len;) {
    std::size_t end = at;
    while (end < len && s[end] != '\x1f') ++end;
    std::uint64_t key = 0;
    if (end - at > 9 && std::memcmp(s + at, "[builtin#", 9) == 0)
      key = kBuiltin | std::strtoull(std::string(s + at + 9, end - at - 9).c_str(), nullptr, 10);
    else if (end > at && s[at] == '@')
      key = std::strtoull(std::string(s + at + 1, end - at - 1).c_str(), nullptr, 16);
    keys->push_back(key);
    at = end + 1;
  }
}

// The same key for the C function value at `idx` (normal context): jit.util.funcinfo gives a
// builtin's ffid (2 and up; 0 and 1 are Lua and plain C functions) and any C function's address.
std::uint64_t LuaJitSampler::c_value_key(lua_State* L, int idx) {
  idx = idx < 0 && idx > LUA_REGISTRYINDEX ? lua_gettop(L) + idx + 1 : idx;
  const int top = lua_gettop(L);
  std::uint64_t key = 0;
  lua_getglobal(L, "require");
  lua_pushstring(L, "jit.util");
  if (lua_pcall(L, 1, 1, 0) == 0 && lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "funcinfo");
    lua_pushvalue(L, idx);
    if (lua_pcall(L, 1, 1, 0) == 0 && lua_type(L, -1) == LUA_TTABLE) {
      lua_getfield(L, -1, "ffid");
      const auto ffid = static_cast<std::uint64_t>(lua_tonumber(L, -1));
      lua_getfield(L, -2, "addr");
      const auto addr = static_cast<std::uint64_t>(lua_tonumber(L, -1));
      key = ffid >= 2 ? kBuiltin | ffid : addr;
    }
  }
  lua_settop(L, top);
  return key;
}

FunctionId LuaJitSampler::intern(lua_State* L, lua_Debug* ar, int level, bool* boundary, int dump_depth) {
  lua_getinfo(L, "Sl", ar);
  if (ar->what[0] != 'C') return lua_function_id(L, ar);
  if (dumped_ != L) dump_c_keys(L, dump_depth);
  const std::uint64_t key = static_cast<std::size_t>(level) < c_keys_.size() ? c_keys_[static_cast<std::size_t>(level)] : 0;
  const void* fp = reinterpret_cast<const void*>(key);
  if (std::find(boundaries_.begin(), boundaries_.end(), fp) != boundaries_.end()) {
    *boundary = true;
    return kNoFunction;
  }
  if (std::find(own_fns_.begin(), own_fns_.end(), fp) != own_fns_.end()) return kNoFunction;
  return c_function_id(L, ar, key);
}

std::uint64_t LuaJitSampler::function_key(std::uint32_t chunk, const lua_Debug& ar) {
  return (std::uint64_t{chunk} << 42) | (std::uint64_t(ar.linedefined & 0x1fffff) << 21) |
         std::uint64_t(ar.lastlinedefined & 0x1fffff);
}

FunctionId LuaJitSampler::lua_function_id(lua_State* L, lua_Debug* ar) {
  const std::uint32_t chunk = chunk_of(*ar);
  const std::uint64_t key = function_key(chunk, *ar);
  auto it = lua_ids_.find(key);
  if (it != lua_ids_.end()) return it->second;
  FunctionInfo info;
  info.file = ar->short_src;
  info.line = ar->linedefined;
  info.last_line = ar->lastlinedefined;
  if (ar->what[0] == 'm') {
    info.kind = FunctionKind::Main;
    info.name = "main chunk";
  } else {
    Chunk& c = chunks_[chunk];
    if (!c.scanned) {
      c.scanned = true;
      std::string text, error;
      if (lua::source_text(ar->source, &text, &error)) c.declared = lua::declared_names(text);
    }
    auto d = c.declared.find({ar->linedefined, ar->lastlinedefined});
    if (d != c.declared.end()) {
      info.name = d->second.empty() ? kAnonymous : d->second;
    } else {
      lua_getinfo(L, "n", ar);  // no text to read: the call site's name
      info.name = ar->name ? ar->name : kAnonymous;
    }
  }
  const FunctionId id = engine_.add_function(std::move(info));
  lua_ids_.emplace(key, id);
  return id;
}

FunctionId LuaJitSampler::c_function_id(lua_State* L, lua_Debug* ar, std::uint64_t key) {
  auto it = c_ids_.find(key);
  if (it != c_ids_.end()) return it->second;
  FunctionInfo info;
  info.kind = FunctionKind::Native;
  auto named = c_names_.find(key);
  if (named != c_names_.end()) {
    info.name = named->second;
  } else {
    lua_getinfo(L, "n", ar);
    info.name = ar->name ? ar->name : "?";
  }
  const FunctionId id = engine_.add_function(std::move(info));
  c_ids_.emplace(key, id);
  return id;
}

// The chunk of a Lua function: its source string's address, checked against the length and
// ends recorded (a chunk loaded later may reuse a collected chunk's address).
std::uint32_t LuaJitSampler::chunk_of(const lua_Debug& ar) {
  const std::size_t length = std::strlen(ar.source);
  const std::size_t edge = std::min(length, kEdge);
  auto found = chunk_index_.find(ar.source);
  if (found != chunk_index_.end()) {
    const Chunk& c = chunks_[found->second];
    if (c.length == length && c.head.compare(0, edge, ar.source, edge) == 0 &&
        c.tail.compare(0, edge, ar.source + length - edge, edge) == 0)
      return found->second;
  }
  Chunk c;
  c.source = ar.source;
  c.length = length;
  c.head.assign(ar.source, edge);
  c.tail.assign(ar.source + length - edge, edge);
  chunks_.push_back(std::move(c));
  const auto index = static_cast<std::uint32_t>(chunks_.size() - 1);
  chunk_index_[ar.source] = index;
  return index;
}

FunctionId LuaJitSampler::pseudo_function(FunctionId* slot, const char* name, bool collector) {
  if (*slot == kNoFunction || *slot >= engine_.profile(SampleKind::Time).functions.size()) {
    FunctionInfo info;
    info.name = name;
    info.kind = FunctionKind::Pseudo;
    info.collector = collector;
    *slot = engine_.add_function(std::move(info));
  }
  return *slot;
}

bool LuaJitSampler::find_function_value(lua_State* L, int idx, FunctionId* out) {
  if (lua_type(L, idx) != LUA_TFUNCTION) return false;
  if (lua_iscfunction(L, idx)) {
    auto it = c_ids_.find(c_value_key(L, idx));
    if (it == c_ids_.end()) return false;
    *out = it->second;
    return true;
  }
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">S", &ar);
  auto chunk = chunk_index_.find(ar.source);
  if (chunk == chunk_index_.end()) return false;
  auto id = lua_ids_.find(function_key(chunk->second, ar));
  if (id == lua_ids_.end()) return false;
  *out = id->second;
  return true;
}

void LuaJitSampler::learn_library_names(lua_State* L) {
  lua::visit_reachable_functions(L, false, [&](const std::string& name) {
    if (!lua_iscfunction(L, -1)) return;
    auto [pos, inserted] = c_names_.emplace(c_value_key(L, -1), name);
    if (!inserted && lua::better_name(name, pos->second)) pos->second = name;
  });
}

void LuaJitSampler::qualify_names(lua_State* L) {
  std::map<FunctionId, std::string> names;
  lua::visit_reachable_functions(L, true, [&](const std::string& name) {
    FunctionId id;
    if (lua_iscfunction(L, -1) || !find_function_value(L, -1, &id)) return;
    auto it = names.find(id);
    if (it == names.end() || lua::better_name(name, it->second)) names[id] = name;
  });
  for (const auto& [id, name] : names) engine_.rename_function(id, name);
}

}  // namespace scriptprof::luajit
