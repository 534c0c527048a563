// The Lua adapter's function table (lua_function_table.hpp): identities and names.
extern "C" {
#include <lauxlib.h>
}

#include <algorithm>
#include <cstring>

#include "lua_reachable_names.hpp"
#include "lua_registry_keys.hpp"
#include "lua_function_table.hpp"
#include "scriptprof/heap_bytes.hpp"

namespace scriptprof::lua {
namespace {

constexpr std::uint8_t kNameTries = 4;  // sightings on which to look for a missing name
constexpr const char* kAnonymous = "<anonymous>";  // labels add the file and line

}  // namespace

void LuaFunctionTable::reset(lua_State* main) {
  lua_ids_.clear();
  c_ids_.clear();
  chunks_.clear();
  fn_chunk_.clear();
  name_tries_.clear();
  closure_no_.clear();
  closure_by_number_.clear();
  closures_seen_ = 0;
  lua_pushnil(main);
  lua_rawsetp(main, LUA_REGISTRYINDEX, &kClosuresKey);
}

FunctionId LuaFunctionTable::new_function(FunctionInfo info, std::uint32_t chunk, std::uint8_t name_tries,
                                     lua_Integer closure_no) {
  FunctionId id = engine_.add_function(std::move(info));
  // The engine makes functions of its own too ("(blocked)"): these vectors follow the ids, with
  // no chunk, name or closure number for the engine's.
  fn_chunk_.resize(id + 1, LuaChunks::kNone);
  name_tries_.resize(id + 1, 0);
  closure_no_.resize(id + 1, 0);
  fn_chunk_[id] = chunk;
  name_tries_[id] = name_tries;
  closure_no_[id] = closure_no;
  return id;
}

void LuaFunctionTable::rename_function(FunctionId id, const std::string& name) {
  std::string full = closure_no_[id] ? name + " [closure " + std::to_string(closure_no_[id]) + "]" : name;
  engine_.rename_function(id, full);
}


FunctionId LuaFunctionTable::intern(lua_State* L, lua_Debug* ar, bool* boundary, int* line) {
  lua_getinfo(L, "Sl", ar);
  if (line) *line = ar->currentline;
  if (ar->what[0] == 'C') {
    lua_getinfo(L, "f", ar);
    const void* fp = reinterpret_cast<const void*>(lua_tocfunction(L, -1));
    lua_pop(L, 1);
    if (boundaries_.count(fp)) {
      *boundary = true;
      return kNoFunction;
    }
    if (own_.count(fp)) return kNoFunction;
    auto it = c_ids_.find(fp);
    if (it != c_ids_.end()) {
      learn_name(L, ar, it->second);
      return it->second;
    }
    lua_getinfo(L, "n", ar);
    return c_function_id(fp, ar->name);
  }
  const bool closure = interpret_closures_ && ar->what[0] != 'm';
  if (closure) {
    // Allegro's :interpret-closures: the closure object is the identity. A weak-keyed table
    // maps each one to its id, so a collected closure's address cannot pass its id on.
    lua_getinfo(L, "f", ar);
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) == LUA_TTABLE) {
      lua_getfield(L, -1, "ids");
      lua_pushvalue(L, -3);
      if (lua_rawget(L, -2) == LUA_TNUMBER) {
        FunctionId id = static_cast<FunctionId>(lua_tointeger(L, -1));
        lua_pop(L, 4);
        learn_name(L, ar, id);
        return id;
      }
      lua_pop(L, 4);
    } else {
      lua_pop(L, 2);
    }
  } else {
    LuaKey key{ar->source, ar->linedefined, ar->lastlinedefined};
    auto it = lua_ids_.find(key);
    if (it != lua_ids_.end() && same_chunk(it->second, ar)) {
      learn_name(L, ar, it->second);
      return it->second;
    }
  }
  // New prototype (or a new chunk loaded where a collected one used to be), or a new closure.
  FunctionInfo info;
  info.file = ar->short_src;
  info.line = ar->linedefined;
  info.last_line = ar->lastlinedefined;
  const std::uint32_t chunk = chunks_.chunk_of(ar);
  bool unnamed = false;
  if (ar->what[0] == 'm') {
    info.kind = FunctionKind::Main;
    info.name = "main chunk";
  } else if (const std::string* declared = chunks_.declared_name(chunk, ar)) {
    // The name in the text is the same in every run; a call site's is not.
    info.name = declared->empty() ? kAnonymous : *declared;
  } else {
    // No text to read (a "=name" chunk, stripped bytecode): the call site's name, when it has one.
    lua_getinfo(L, "n", ar);
    unnamed = !ar->name;
    info.name = ar->name ? ar->name : kAnonymous;
  }
  // Closures are numbered once their prototype has two: a function made once needs no number.
  LuaKey key{ar->source, ar->linedefined, ar->lastlinedefined};
  auto sibling = lua_ids_.find(key);
  bool second = closure && sibling != lua_ids_.end() && same_chunk(sibling->second, ar);
  lua_Integer number = 0;
  if (second) {
    FunctionId first = sibling->second;
    if (!closure_no_[first]) {
      closure_no_[first] = ++closures_seen_;
      closure_by_number_.push_back(first);
      rename_function(first, engine_.profile(SampleKind::Time).functions.info(first).name);
    }
    number = ++closures_seen_;
  }
  if (number) info.name += " [closure " + std::to_string(number) + "]";
  FunctionId id = new_function(std::move(info), chunk, unnamed ? kNameTries : 0, number);
  if (number) closure_by_number_.push_back(id);
  if (closure) remember_closure(L, ar, id);
  if (!second) lua_ids_[key] = id;  // the prototype's first function (closures: its first closure)
  return id;
}

// A function first seen unnamed (called from C, or by a tail call) takes the name a later
// call site gives it.
void LuaFunctionTable::learn_name(lua_State* L, lua_Debug* ar, FunctionId id) {
  if (name_tries_[id] == 0) return;
  --name_tries_[id];
  lua_getinfo(L, "n", ar);
  std::string global;
  if (ar->name) {
    rename_function(id, ar->name);
    name_tries_[id] = 0;
  } else if (global_name(L, ar, &global)) {
    // Called from the host (lua_pcall), a function has no calling instruction to name it;
    // its global or module field does, as in Lua's own tracebacks.
    rename_function(id, global);
    name_tries_[id] = 0;
  }
}

// "think" for _G.think, "ai.think" for package.loaded.ai.think: a shallow search, no
// metamethods (raw access only), nothing allocated.
bool LuaFunctionTable::global_name(lua_State* L, lua_Debug* ar, std::string* out) {
  if (!lua_checkstack(L, 6)) return false;
  int top = lua_gettop(L);
  lua_getinfo(L, "f", ar);
  int fn = lua_gettop(L);
  bool found = false;
  if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) == LUA_TTABLE) {
    lua_pushnil(L);
    while (!found && lua_next(L, fn + 1)) {
      if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TTABLE) {
        lua_pushnil(L);
        while (lua_next(L, -2)) {
          if (lua_type(L, -2) == LUA_TSTRING && lua_rawequal(L, -1, fn)) {
            std::string module = lua_tostring(L, -4);
            *out = (module == "_G" ? "" : module + ".") + lua_tostring(L, -2);
            found = true;
            lua_pop(L, 2);
            break;
          }
          lua_pop(L, 1);
        }
      }
      lua_pop(L, 1);
    }
    if (found) lua_pop(L, 1);  // the module key lua_next left
  }
  lua_settop(L, top);
  return found;
}

// Records a closure both ways: closure -> id (weak keys) for identity, and id -> closure (weak
// values) for profiler.closure(n).
void LuaFunctionTable::remember_closure(lua_State* L, lua_Debug* ar, FunctionId id) {
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_createtable(L, 0, 2);
    for (const char* field : {"ids", "closures"}) {
      lua_createtable(L, 0, 0);
      lua_createtable(L, 0, 1);
      lua_pushstring(L, field[0] == 'i' ? "k" : "v");
      lua_setfield(L, -2, "__mode");
      lua_setmetatable(L, -2);
      lua_setfield(L, -2, field);
    }
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kClosuresKey);
  }
  int t = lua_gettop(L);
  lua_getinfo(L, "f", ar);
  lua_getfield(L, t, "ids");
  lua_pushvalue(L, -2);
  lua_pushinteger(L, static_cast<lua_Integer>(id));
  lua_rawset(L, -3);
  lua_pop(L, 1);
  lua_getfield(L, t, "closures");
  lua_pushvalue(L, -2);
  lua_rawseti(L, -2, static_cast<lua_Integer>(id));
  lua_settop(L, t - 1);
}

void LuaFunctionTable::push_closure(lua_State* L, lua_Integer n) {
  if (n < 1 || static_cast<std::size_t>(n) > closure_by_number_.size() ||
      lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) != LUA_TTABLE) {
    lua_pushnil(L);
    return;
  }
  lua_getfield(L, -1, "closures");
  lua_rawgeti(L, -1, static_cast<lua_Integer>(closure_by_number_[static_cast<std::size_t>(n) - 1]));
  lua_replace(L, -3);
  lua_pop(L, 1);
}

bool LuaFunctionTable::find_function_value(lua_State* L, int idx, FunctionId* out) {
  if (lua_iscfunction(L, idx)) {
    auto it = c_ids_.find(reinterpret_cast<const void*>(lua_tocfunction(L, idx)));
    if (it == c_ids_.end()) return false;
    *out = it->second;
    return true;
  }
  if (!lua_isfunction(L, idx)) return false;
  idx = lua_absindex(L, idx);
  if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kClosuresKey) == LUA_TTABLE) {  // interpret_closures
    lua_getfield(L, -1, "ids");
    lua_pushvalue(L, idx);
    bool found = lua_rawget(L, -2) == LUA_TNUMBER;
    if (found) *out = static_cast<FunctionId>(lua_tointeger(L, -1));
    lua_pop(L, 3);
    if (found) return true;
  } else {
    lua_pop(L, 1);
  }
  lua_Debug ar;
  lua_pushvalue(L, idx);
  lua_getinfo(L, ">S", &ar);
  auto it = lua_ids_.find(LuaKey{ar.source, ar.linedefined, ar.lastlinedefined});
  if (it == lua_ids_.end() || !same_chunk(it->second, &ar)) return false;
  *out = it->second;
  return true;
}

// Names library C functions as "string.rep" from package.loaded, as the debug library's
// traceback does; call-site names ("rep", "?") are a poor second.
void LuaFunctionTable::learn_c_names(lua_State* L) {
  visit_reachable_functions(L, false, [&](const std::string& name) {
    if (!lua_iscfunction(L, -1)) return;
    const void* fp = reinterpret_cast<const void*>(lua_tocfunction(L, -1));
    auto [pos, inserted] = c_names_.emplace(fp, name);
    if (name == "collectgarbage") collector_ = fp;  // Lua 5.4's only measurable GC time
    // Prefer the global name ("print") over a module path ("_G.print").
    if (!inserted && better_name(name, pos->second)) pos->second = name;
  });
  if (push_host_entry(L)) {
    c_names_.emplace(reinterpret_cast<const void*>(lua_tocfunction(L, -1)), kHostEntryName);  // unless a table names it
    lua_pop(L, 1);
  }
}

// Whether function `id` belongs to the chunk whose source `ar` shows (filled with "S").
bool LuaFunctionTable::same_chunk(FunctionId id, const lua_Debug* ar) const {
  return chunks_.holds(fn_chunk_[id], ar);
}

const std::string* LuaFunctionTable::source_of(FunctionId f) const {
  return f < fn_chunk_.size() ? chunks_.text(fn_chunk_[f]) : nullptr;
}

bool LuaFunctionTable::credible_c_function(const void* fp) const {
  if (boundaries_.count(fp) || own_.count(fp)) return false;
  return c_ids_.count(fp) || c_names_.count(fp);
}

void LuaFunctionTable::zone_frames(const native::Fiber& f, std::vector<FunctionId>* out) {
  append_zone_frames(f, &zone_ids_, [&](FunctionInfo info) { return new_function(std::move(info)); }, out);
}

// The id of C function `fp`, made on first sight with its library name ("string.rep"), else
// the name its call site gives (null when none: it is looked for again later).
FunctionId LuaFunctionTable::c_function_id(const void* fp, const char* call_site_name) {
  const void* key = fp;
  auto it = c_ids_.find(key);
  if (it != c_ids_.end()) return it->second;
  FunctionInfo info;
  info.kind = FunctionKind::Native;
  info.collector = key == collector_;
  if (auto n = c_names_.find(key); n != c_names_.end())
    info.name = n->second;
  else
    info.name = call_site_name ? call_site_name : "?";
  bool unnamed = info.name == "?";
  FunctionId id = new_function(std::move(info), LuaChunks::kNone, unnamed ? kNameTries : 0);
  c_ids_.emplace(key, id);
  return id;
}

std::size_t LuaFunctionTable::own_bytes() const {
  std::size_t bytes = chunks_.own_bytes() + hash_table_bytes(lua_ids_) + hash_table_bytes(c_ids_) +
                      hash_table_bytes(c_names_) + hash_table_bytes(boundaries_) + hash_table_bytes(own_);
  for (const auto& [fp, name] : c_names_) bytes += heap_bytes(name);
  return bytes + heap_bytes(fn_chunk_) + heap_bytes(name_tries_) + heap_bytes(closure_no_) +
         heap_bytes(closure_by_number_) + heap_bytes(zone_ids_);
}

}  // namespace scriptprof::lua
