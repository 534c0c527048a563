// LuaJitFunctionTable (luajit_function_table.hpp).
extern "C" {
#include <lauxlib.h>
#include <luajit.h>
}

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "lua_reachable_names.hpp"
#include "luajit_function_table.hpp"
#include "scriptprof/heap_bytes.hpp"

namespace scriptprof::luajit {

namespace {
constexpr const char* kAnonymous = "<anonymous>";  // labels add the file and line
constexpr std::uint64_t kBuiltin = std::uint64_t{1} << 63;  // a builtin's key: its ffid with this bit
}  // namespace

// The keys of the C functions of L's top frames by level (0 for a Lua frame), from LuaJIT's own
// stack dump ("[builtin#N]" for a builtin, "@0xADDR" for any other C function, "chunk:line" for
// Lua), made once per walk. It pushes nothing on L, whose stack may be at its limit when a
// sample is taken (lua_getinfo's "f" pushes, and a push there raises "stack overflow").
void LuaJitFunctionTable::dump_c_keys(lua_State* L, int depth) {
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
std::uint64_t LuaJitFunctionTable::c_value_key(lua_State* L, int idx) {
  idx = lua_absindex(L, idx);
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

FunctionId LuaJitFunctionTable::intern(lua_State* L, lua_Debug* ar, int level, bool* boundary, int dump_depth) {
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

std::uint64_t LuaJitFunctionTable::function_key(std::uint32_t chunk, const lua_Debug& ar) {
  return (std::uint64_t{chunk} << 42) | (std::uint64_t(ar.linedefined & 0x1fffff) << 21) |
         std::uint64_t(ar.lastlinedefined & 0x1fffff);
}

FunctionId LuaJitFunctionTable::lua_function_id(lua_State* L, lua_Debug* ar) {
  const std::uint32_t chunk = chunks_.chunk_of(ar);
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
    if (const std::string* declared = chunks_.declared_name(chunk, ar)) {
      info.name = declared->empty() ? kAnonymous : *declared;
    } else {
      lua_getinfo(L, "n", ar);  // no text to read: the call site's name
      info.name = ar->name ? ar->name : kAnonymous;
    }
  }
  const FunctionId id = engine_.add_function(std::move(info));
  lua_ids_.emplace(key, id);
  return id;
}

FunctionId LuaJitFunctionTable::c_function_id(lua_State* L, lua_Debug* ar, std::uint64_t key) {
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

FunctionId LuaJitFunctionTable::pseudo(Pseudo which) {
  static const char* const kNames[] = {"(gc)", "(jit)", "(C)"};
  FunctionId* slot = &pseudo_ids_[static_cast<int>(which)];
  if (*slot == kNoFunction || *slot >= engine_.profile(SampleKind::Time).functions.size()) {
    FunctionInfo info;
    info.name = kNames[static_cast<int>(which)];
    info.kind = FunctionKind::Pseudo;
    info.collector = which == Pseudo::Gc;
    *slot = engine_.add_function(std::move(info));
  }
  return *slot;
}

bool LuaJitFunctionTable::find_function_value(lua_State* L, int idx, FunctionId* out) {
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
  const std::uint32_t chunk = chunks_.find(&ar);
  if (chunk == lua::LuaChunks::kNone) return false;
  auto id = lua_ids_.find(function_key(chunk, ar));
  if (id == lua_ids_.end()) return false;
  *out = id->second;
  return true;
}

void LuaJitFunctionTable::learn_library_names(lua_State* L) {
  lua::visit_reachable_functions(L, false, [&](const std::string& name) {
    if (!lua_iscfunction(L, -1)) return;
    auto [pos, inserted] = c_names_.emplace(c_value_key(L, -1), name);
    if (!inserted && lua::better_name(name, pos->second)) pos->second = name;
  });
  if (lua::push_host_entry(L)) {
    c_names_.emplace(c_value_key(L, -1), lua::kHostEntryName);  // unless a table names it
    lua_pop(L, 1);
  }
}

void LuaJitFunctionTable::qualify_names(lua_State* L) {
  std::map<FunctionId, std::string> names;
  lua::visit_reachable_functions(L, true, [&](const std::string& name) {
    FunctionId id;
    if (lua_iscfunction(L, -1) || !find_function_value(L, -1, &id)) return;
    auto it = names.find(id);
    if (it == names.end() || lua::better_name(name, it->second)) names[id] = name;
  });
  for (const auto& [id, name] : names) engine_.rename_function(id, name);
}

FunctionId LuaJitFunctionTable::value_id(lua_State* L, int idx) {
  FunctionId id;
  if (find_function_value(L, idx, &id)) return id;
  idx = lua_absindex(L, idx);
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">S", &ar);
  FunctionInfo info;
  info.name = "?";
  info.file = ar.short_src;
  info.line = ar.linedefined;
  info.last_line = ar.lastlinedefined;
  if (lua_iscfunction(L, idx)) {
    info.kind = FunctionKind::Native;
    const std::uint64_t key = c_value_key(L, idx);
    auto named = c_names_.find(key);
    if (named != c_names_.end()) info.name = named->second;
    info.file.clear();
    c_ids_[key] = id = engine_.add_function(std::move(info));
  } else {
    const std::uint32_t chunk = chunks_.chunk_of(&ar);
    id = engine_.add_function(std::move(info));
    lua_ids_[function_key(chunk, ar)] = id;
  }
  return id;
}

void LuaJitFunctionTable::add_own(const void* f) {
  if (std::find(own_fns_.begin(), own_fns_.end(), f) == own_fns_.end()) own_fns_.push_back(f);
}

void LuaJitFunctionTable::reset() {
  chunks_.clear();
  lua_ids_.clear();
  c_ids_.clear();
  for (FunctionId& id : pseudo_ids_) id = kNoFunction;
}

std::size_t LuaJitFunctionTable::own_bytes() const {
  std::size_t bytes = chunks_.own_bytes() + heap_bytes(boundaries_) + heap_bytes(own_fns_) + heap_bytes(c_keys_) +
                      hash_table_bytes(lua_ids_) + hash_table_bytes(c_ids_) + hash_table_bytes(c_names_);
  for (const auto& [fn, name] : c_names_) bytes += heap_bytes(name);
  return bytes;
}

}  // namespace scriptprof::luajit
