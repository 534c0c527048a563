// The module's options: a run's (statprof, gcprof, with_profiling, start_profiler), the flat
// display's, and the report styles'. Each is checked before any C++ object holds memory, so a
// bad option raises a Lua error that leaks nothing.
#include "module_internal.hpp"
#include "profiler_module.hpp"

#include <cmath>
#include <cstring>
#include <string>

extern "C" {
#include <lauxlib.h>
}

namespace scriptprof::lua::module {

TimerClock parse_clock(lua_State* L, int arg, const char* value) {
  if (std::strcmp(value, "cpu") == 0) return TimerClock::Cpu;
  if (std::strcmp(value, "wall") == 0) return TimerClock::Wall;
  luaL_argerror(L, arg, lua_pushfstring(L, "clock must be \"cpu\" or \"wall\", got \"%s\"", value));
  return TimerClock::Cpu;
}

void set_hz(lua_State* L, int arg, double hz, SamplerSettings* s) {
  const char* bad = nullptr;
  {
    std::string error;
    if (!parse_hz(hz, &s->period_ns, &error)) bad = lua_pushstring(L, error.c_str());
  }
  if (bad) luaL_argerror(L, arg, bad);  // the message lives on the Lua stack, error is gone
}

const char kRunOptionNames[] =
    "hz, loop, count_calls, count_list, full_stacks, clock, display, file, gc, alloc, max_samples, "
    "interpret_closures, except_processes, start_sampling";

// hz_or_options: nil, a rate in Hz, or a table of kRunOptionNames. Unknown keys are errors: a
// typo must not pass silently.
RunOptions parse_run_options(lua_State* L, int arg) {
  RunOptions o;
  arg = lua_absindex(L, arg);
  std::string error;
  set_hz(L, arg, 100.0, &o.sampler);
  switch (lua_type(L, arg)) {
    case LUA_TNONE:
    case LUA_TNIL:
      return o;
    case LUA_TNUMBER:
      set_hz(L, arg, lua_tonumber(L, arg), &o.sampler);
      return o;
    case LUA_TTABLE:
      o.table = arg;
      break;
    default:
      luaL_typeerror(L, arg, "number or table");
  }
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    if (lua_type(L, -2) != LUA_TSTRING)
      luaL_argerror(L, arg, "option names must be strings");
    const char* key = lua_tostring(L, -2);
    auto need = [&](int type) {
      if (lua_type(L, -1) != type)
        luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be a %s, got %s", key,
                                              lua_typename(L, type), luaL_typename(L, -1)));
    };
    auto list_of = [&](int type) {
      need(LUA_TTABLE);
      for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; ++i) {
        if (lua_type(L, -1) != type)
          luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be a list of %ss, item %I is a %s",
                                                key, lua_typename(L, type), i, luaL_typename(L, -1)));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);  // the nil that ended the list
    };
    // The plain on/off options.
    const struct { const char* name; bool* field; } flags[] = {
        {"count_calls", &o.sampler.count_calls},       {"full_stacks", &o.sampler.full_stacks},
        {"gc", &o.sampler.gc_samples},                 {"interpret_closures", &o.sampler.interpret_closures},
        {"start_sampling", &o.sampler.start_sampling}, {"display", &o.display},
    };
    bool* flag = nullptr;
    for (const auto& f : flags)
      if (std::strcmp(key, f.name) == 0) flag = f.field;
    if (flag) {
      need(LUA_TBOOLEAN);
      *flag = lua_toboolean(L, -1);
    } else if (std::strcmp(key, "hz") == 0) {
      if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
        o.sampler.sample_time = false;  // hz=false: no time sampling (gc or space only)
      } else {
        need(LUA_TNUMBER);
        set_hz(L, arg, lua_tonumber(L, -1), &o.sampler);
      }
    } else if (std::strcmp(key, "alloc") == 0) {
      if (lua_type(L, -1) == LUA_TBOOLEAN) {
        o.sampler.alloc_bytes = lua_toboolean(L, -1) ? kDefaultAllocBytes : 0;
      } else if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
        luaL_argerror(L, arg, "option 'alloc' must be true or the mean bytes between samples (an integer >= 1)");
      } else {
        o.sampler.alloc_bytes = static_cast<std::uint64_t>(lua_tointeger(L, -1));
      }
    } else if (std::strcmp(key, "max_samples") == 0) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0)
        luaL_argerror(L, arg, "option 'max_samples' must be an integer >= 0 (0: no bound)");
      o.sampler.max_samples = static_cast<std::uint64_t>(lua_tointeger(L, -1));
    } else if (std::strcmp(key, "count_list") == 0) {
      list_of(LUA_TFUNCTION);
    } else if (std::strcmp(key, "except_processes") == 0) {
      list_of(LUA_TTHREAD);
    } else if (std::strcmp(key, "loop") == 0) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
        luaL_argerror(L, arg, "option 'loop' must be an integer >= 1");
      o.loop = lua_tointeger(L, -1);
    } else if (std::strcmp(key, "clock") == 0) {
      need(LUA_TSTRING);
      o.sampler.clock = parse_clock(L, arg, lua_tostring(L, -1));
    } else if (std::strcmp(key, "file") == 0) {
      need(LUA_TSTRING);
      o.file = lua_tostring(L, -1);
    } else {
      luaL_argerror(L, arg, lua_pushfstring(L, "unknown option '%s' (known: %s)", key, kRunOptionNames));
    }
    lua_pop(L, 1);
  }
  return o;
}

FlatReportOptions parse_report_options(lua_State* L, int arg) {
  FlatReportOptions o;
  if (lua_isnoneornil(L, arg)) return o;
  luaL_checktype(L, arg, LUA_TTABLE);
  if (lua_getfield(L, arg, "labels") != LUA_TNIL) {
    const char* v = luaL_checkstring(L, -1);
    if (std::strcmp(v, "guile") == 0) o.labels = LabelStyle::Guile;
    else if (std::strcmp(v, "plain") != 0) luaL_argerror(L, arg, "labels must be \"plain\" or \"guile\"");
  }
  if (lua_getfield(L, arg, "cumulative") != LUA_TNIL) {
    const char* v = luaL_checkstring(L, -1);
    if (std::strcmp(v, "guile3") == 0) o.cumulative = CumulativeMode::EveryFrame;
    else if (std::strcmp(v, "once") != 0) luaL_argerror(L, arg, "cumulative must be \"once\" or \"guile3\"");
  }
  lua_pop(L, 2);
  return o;
}

// {labels=, cumulative=, hidden={names...}, significance_threshold=, fractional_significance_threshold=,
// slowest=} With `o` null, only checks (and raises on a bad option, before any C++ object holds memory);
// with `o`, reads options already checked, and cannot raise.
void read_style_options(lua_State* L, int arg, ReportOptions* o) {
  lua_pushnil(L);
  while (lua_next(L, arg)) {
    const char* key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : "";
    auto fraction = [&](double* out) {
      double v = lua_tonumber(L, -1);
      if (!o && (!lua_isnumber(L, -1) || std::isnan(v) || v < 0 || v > 1))
        luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be a fraction between 0 and 1", key));
      if (o) *out = v;
    };
    if (std::strcmp(key, "labels") == 0 || std::strcmp(key, "cumulative") == 0) {
      // Same values as display()'s options.
      lua_createtable(L, 0, 1);
      lua_pushvalue(L, -2);
      lua_setfield(L, -2, key);
      FlatReportOptions f = parse_report_options(L, lua_gettop(L));
      if (o && key[0] == 'l') o->flat.labels = f.labels;
      else if (o) o->flat.cumulative = f.cumulative;
      lua_pop(L, 1);
    } else if (std::strcmp(key, "significance_threshold") == 0) {
      fraction(o ? &o->allegro.significance_threshold : nullptr);
    } else if (std::strcmp(key, "fractional_significance_threshold") == 0) {
      fraction(o ? &o->allegro.fractional_significance_threshold : nullptr);
    } else if (std::strcmp(key, "slowest") == 0) {
      lua_Integer n = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
      if (!o && (n < 1 || n > 1'000'000))
        luaL_argerror(L, arg, "option 'slowest' must be a whole number of frames from 1 to 1000000");
      if (o) o->slowest_frames = static_cast<std::size_t>(n);
    } else if (std::strcmp(key, "hidden") == 0 || std::strcmp(key, "hidden_packages") == 0) {
      const char* what = key[6] == '_' ? "a list of source or name prefixes" : "a list of function names";
      if (!lua_istable(L, -1)) luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s", key, what));
      std::vector<std::string>* names = nullptr;
      if (o) {
        names = key[6] == '_' ? &o->allegro.hidden_packages : &o->allegro.hidden;
        names->clear();
      }
      for (lua_Integer i = 1; lua_rawgeti(L, -1, i) != LUA_TNIL; ++i) {
        if (!o && lua_type(L, -1) != LUA_TSTRING)
          luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be %s", key, what));
        if (names) names->emplace_back(lua_tostring(L, -1));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    } else if (!o) {
      luaL_argerror(L, arg, lua_pushfstring(L,
          "unknown option '%s' (known: labels, cumulative, hidden, hidden_packages, "
          "significance_threshold, fractional_significance_threshold, slowest)", key));
    }
    lua_pop(L, 1);
  }
}

ReportOptions parse_style_options(lua_State* L, int arg) {
  if (!lua_isnoneornil(L, arg)) {
    luaL_checktype(L, arg, LUA_TTABLE);
    read_style_options(L, arg, nullptr);
  }
  ReportOptions o = module_state(L)->display;
  if (!lua_isnoneornil(L, arg)) read_style_options(L, arg, &o);
  return o;
}

}  // namespace scriptprof::lua::module
