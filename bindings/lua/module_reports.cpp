// Reports and files: display, report styles, fetch_stacks, fetch_call_tree, write, read,
// save_current_profile, annotate.
#include "module_internal.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <lauxlib.h>
}

#include "lua_source_text.hpp"
#include "profile_object.hpp"
#include "scriptprof/annotated_source.hpp"
#include "scriptprof/atomic_file.hpp"
#include "scriptprof/profile_io.hpp"
#include "scriptprof/statprof_flat_report.hpp"

namespace scriptprof::lua::module {

// A saved profile object as the first argument picks the profile to show; otherwise it is the
// last run's (which is then "analyzed"). Returns the index of the next argument.
int profile_argument(lua_State* L, const Profile** p) {
  if (const Profile* saved = test_profile_object(L, 1)) {
    *p = saved;
    return 2;
  }
  ModuleSampler* s = attach_sampler(L);
  s->engine().mark_analyzed();
  *p = &s->engine().profile();
  if (s->engine().sampling()) {
    // The profile's time is added when sampling stops: a report now shows the time so far.
    Profile& live = module_state(L)->live;
    live = s->engine().profile();
    live.total_seconds = s->engine().accumulated_seconds();
    live.gc_seconds = live.collector_seconds();
    *p = &live;
  }
  return 1;
}

// profiler.display([profile,] [file [, {labels="plain"|"guile", cumulative="once"|"guile3"}]])
int l_display(lua_State* L) {
  const Profile* p;
  int a = profile_argument(L, &p);
  FlatReportOptions o = parse_report_options(L, a + 1);
  check_output(L, a);
  if (!emit(L, a, statprof_flat_report(*p, o))) return lua_error(L);  // the text is gone by now
  return 0;
}

// profiler.fetch_stacks() -> { {leaf, ..., root, weight = ticks}, ... } in sample order.
int l_fetch_stacks(lua_State* L) {
  const Profile* saved;
  profile_argument(L, &saved);
  const Profile& p = *saved;
  if (!p.keep_samples)
    luaL_error(L, "no stacks were kept: profile with full_stacks=true "
                  "(or profiler.reset(secs, usecs, count_calls, true))");
  lua_createtable(L, static_cast<int>(std::min<std::size_t>(p.samples.size(), INT32_MAX)), 0);
  lua_Integer i = 0;
  for (const SampleRecord& r : p.samples) {
    std::vector<FunctionId> frames = p.tree.stack(r.leaf);
    lua_createtable(L, static_cast<int>(frames.size()), 1);
    lua_Integer j = 0;
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      lua_pushstring(L, p.functions.label(*it).c_str());
      lua_rawseti(L, -2, ++j);
    }
    set_count(L, -1, "weight", r.weight);
    lua_rawseti(L, -2, ++i);
  }
  return 1;
}

// profiler.fetch_call_tree() -> {total = N, tree, ...}, tree = {name=, count=, self=, child, ...};
// children by count, descending (ties by label). Built without recursion: stacks can be 100k frames deep.
int l_fetch_call_tree(lua_State* L) {
  const Profile* saved;
  profile_argument(L, &saved);
  const Profile& p = *saved;
  const CallTree& t = p.tree;
  lua_createtable(L, 0, 1);
  int result = lua_gettop(L);
  set_count(L, result, "total", p.sample_weight());
  lua_createtable(L, static_cast<int>(std::min<std::size_t>(t.size(), INT32_MAX)), 0);
  int tables = lua_gettop(L);  // node id + 1 -> the table standing for it
  bool thread_level = t.roots().size() > 1;
  std::vector<NodeId> todo;
  for (auto it = t.roots().rbegin(); it != t.roots().rend(); ++it) todo.push_back(it->second);
  while (!todo.empty()) {
    NodeId n = todo.back();
    todo.pop_back();
    const CallTreeNode& node = t.node(n);
    int parent_table = result;
    if (node.parent != kNoNode) {
      lua_rawgeti(L, tables, static_cast<lua_Integer>(node.parent) + 1);
      parent_table = lua_gettop(L);
    }
    if (node.function != kNoFunction || thread_level) {
      lua_createtable(L, 0, 3);
      std::string name = node.function != kNoFunction ? p.functions.label(node.function)
                                                      : thread_label(p, n);
      lua_pushstring(L, name.c_str());
      lua_setfield(L, -2, "name");
      set_count(L, -1, "count", node.count);
      set_count(L, -1, "self", node.self);
      lua_pushvalue(L, -1);
      lua_rawseti(L, tables, static_cast<lua_Integer>(n) + 1);
      lua_rawseti(L, parent_table, static_cast<lua_Integer>(luaL_len(L, parent_table)) + 1);
    } else {
      lua_pushvalue(L, result);  // a single process: its functions hang off the result itself
      lua_rawseti(L, tables, static_cast<lua_Integer>(n) + 1);
    }
    lua_settop(L, tables);
    std::vector<NodeId> children = children_by_count(p, n);
    for (auto it = children.rbegin(); it != children.rend(); ++it) todo.push_back(*it);
  }
  lua_settop(L, result);
  return 1;
}


// profiler.report(style [, file [, options]]): any report style of the last run (or of a
// profile read).
int l_report(lua_State* L) {
  const Profile* p;
  int a = profile_argument(L, &p);
  const char* style = luaL_checkstring(L, a);
  check_output(L, a + 1);
  const char* bad_style = nullptr;
  bool written = true;
  {
    ReportOptions options = parse_style_options(L, a + 2);  // raises only before it holds memory
    std::string text, error;
    if (!render_report(*p, style, &text, &error, options)) bad_style = lua_pushstring(L, error.c_str());
    else written = emit(L, a + 1, text);
  }
  if (bad_style) luaL_argerror(L, a, bad_style);
  if (!written) return lua_error(L);
  return 0;
}

// profiler.display_defaults(options): what every report uses unless told otherwise (hidden,
// hidden_packages, significance thresholds, labels, cumulative); reset_display_defaults()
// puts back the built-in ones (Allegro's reset-profiler-display-defaults).
int l_display_defaults(lua_State* L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  module_state(L)->display = parse_style_options(L, 1);
  return 0;
}

int l_reset_display_defaults(lua_State* L) {
  module_state(L)->display = ReportOptions{};
  return 0;
}

// profiler.write(path, format [, {evented=, thread_level=}]): a file of the last run, written
// atomically.
int l_write(lua_State* L) {
  const Profile* p;
  int a = profile_argument(L, &p);
  const char* path = luaL_checkstring(L, a);
  const char* format = luaL_checkstring(L, a + 1);
  FormatOptions options;
  if (!lua_isnoneornil(L, a + 2)) {
    luaL_checktype(L, a + 2, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, a + 2)) {
      const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
      if (std::strcmp(key, "evented") == 0) options.evented = lua_toboolean(L, -1);
      else if (std::strcmp(key, "thread_level") == 0) options.thread_level = lua_toboolean(L, -1);
      else luaL_argerror(L, a + 2, lua_pushfstring(L, "unknown option '%s' (known: evented, thread_level)", key));
      lua_pop(L, 1);
    }
  }
  const char* bad_format = nullptr;
  const char* failure = nullptr;
  {
    std::string text, error;
    if (!render_format(*p, format, &text, &error, options)) bad_format = lua_pushstring(L, error.c_str());
    else if (!write_file_atomically(path, text, &error)) failure = lua_pushstring(L, error.c_str());
  }
  if (bad_format) luaL_argerror(L, a + 1, bad_format);
  if (failure) return lua_error(L);
  return 0;
}

// profiler.read(path [, format]) -> warnings: loads a saved profile as the last run, so display,
// report and write work on it. The format is guessed from the contents when not given.
int l_read(lua_State* L) {
  const char* path = luaL_checkstring(L, 1);
  const char* format = luaL_optstring(L, 2, "");
  ModuleSampler* s = attach_sampler(L);
  if (s->engine().active()) luaL_error(L, "cannot read a profile while the profiler is active");
  bool ok;
  {
    auto profile = std::make_shared<Profile>();
    std::string error;
    std::vector<std::string> warnings;
    ok = read_profile_file(path, format, profile.get(), &error, &warnings);
    if (ok) {
      s->adopt(std::move(profile));
      lua_createtable(L, static_cast<int>(warnings.size()), 0);  // may raise only on memory
      for (std::size_t i = 0; i < warnings.size(); ++i) {
        lua_pushstring(L, warnings[i].c_str());
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
      }
    } else {
      lua_pushstring(L, error.c_str());
    }
  }
  return ok ? 1 : lua_error(L);
}

// profiler.save_current_profile([kind]) -> a profile object ("time", "gc" or "space"; by
// default the run's main one) that every report and writer takes, so runs can be compared.
int l_save_current_profile(lua_State* L) {
  static const char* const kinds[] = {"time", "gc", "space", nullptr};
  ModuleSampler* s = attach_sampler(L);
  if (s->engine().active()) luaL_error(L, "stop the profiler before saving its profile");
  int k = lua_isnoneornil(L, 1) ? static_cast<int>(s->engine().primary_kind()) : luaL_checkoption(L, 1, nullptr, kinds);
  s->engine().mark_analyzed();
  push_profile_object(L, std::make_shared<const Profile>(s->engine().profile(static_cast<SampleKind>(k))), kinds[k]);
  return 1;
}

// profiler.annotate(fn [, file]): fn's source with the share of the last run's samples on
// each line (the analogue of Allegro's disassemble-profile).
int l_annotate(lua_State* L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  check_output(L, 2);
  ModuleSampler* s = attach_sampler(L);
  lua_Debug ar;
  lua_pushvalue(L, 1);
  lua_getinfo(L, ">S", &ar);
  FunctionId f;
  bool found = s->find_function_value(L, 1, &f);
  s->engine().mark_analyzed();
  bool written;
  {
    std::string text;
    if (!found) {
      text = std::string(ar.short_src) + ":" + std::to_string(ar.linedefined) + ": not sampled in the last run\n";
    } else {
      std::vector<std::string> lines;
      std::string error;
      if (!source_lines(ar.source, &lines, &error)) text = "(" + error + ": only the sampled lines)\n";
      text += annotated_source(s->engine().profile(), f, lines);
    }
    written = emit(L, 2, text);
  }
  return written ? 0 : lua_error(L);
}

}  // namespace scriptprof::lua::module
