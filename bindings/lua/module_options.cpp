// The module's options: a run's (statprof, gcprof, with_profiling, start_profiler), the flat
// display's, and the report styles'. Each is checked before any C++ object holds memory, so a
// bad option raises a Lua error that leaks nothing.
#include "module_internal.hpp"
#include "profiler_module.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

extern "C" {
#include <lauxlib.h>
}

namespace scriptprof::lua::module {

namespace {

// A Lua value as the run-option table reads it (strings stay on the stack, anchoring the view).
OptionValue option_value(lua_State* L, int index) {
  switch (lua_type(L, index)) {
    case LUA_TBOOLEAN: return OptionValue::of_bool(lua_toboolean(L, index));
    case LUA_TNUMBER:
      return lua_isinteger(L, index) ? OptionValue::of_int(lua_tointeger(L, index))
                                     : OptionValue::of_number(lua_tonumber(L, index));
    case LUA_TSTRING: return OptionValue::of_string(lua_tostring(L, index));
    default: {
      OptionValue v;
      v.type_name = luaL_typename(L, index);
      return v;
    }
  }
}

// The module's own options, beside the run options every front end shares (run_options.hpp).
const char kModuleOptionNames[] = "loop, display, file, count_list, except_processes";

}  // namespace

void set_run_option(lua_State* L, int arg, RunSettings* settings, const char* name, int value, bool positional) {
  char message[512];
  bool bad = false;
  {
    std::string error;  // freed before any Lua error unwinds past it
    if (!scriptprof::set_run_option(settings, name, option_value(L, value), &error)) {
      std::snprintf(message, sizeof message, positional ? "%s %s" : "option '%s' %s", name, error.c_str());
      bad = true;
    }
  }
  if (bad) luaL_argerror(L, arg, message);
}

// hz_or_options: nil, a rate in Hz, or a table of run options and kModuleOptionNames. Unknown
// keys are errors: a typo must not pass silently.
RunOptions parse_run_options(lua_State* L, int arg) {
  RunOptions o;
  arg = lua_absindex(L, arg);
  switch (lua_type(L, arg)) {
    case LUA_TNONE:
    case LUA_TNIL:
      return o;
    case LUA_TNUMBER:
      set_run_option(L, arg, &o.sampler, "hz", arg, true);
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
          luaL_argerror(L, arg, lua_pushfstring(L, "option '%s' must be a list of %ss, item %d is a %s",  // (not
                                                key, lua_typename(L, type), static_cast<int>(i),         // 5.3's %I)
                                                luaL_typename(L, -1)));
        lua_pop(L, 1);
      }
      lua_pop(L, 1);  // the nil that ended the list
    };
    if (is_run_option(key)) {
      set_run_option(L, arg, &o.sampler, key, -1, false);
    } else if (std::strcmp(key, "display") == 0) {
      need(LUA_TBOOLEAN);
      o.display = lua_toboolean(L, -1);
    } else if (std::strcmp(key, "count_list") == 0) {
      list_of(LUA_TFUNCTION);
    } else if (std::strcmp(key, "except_processes") == 0) {
      list_of(LUA_TTHREAD);
    } else if (std::strcmp(key, "loop") == 0) {
      if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1)
        luaL_argerror(L, arg, "option 'loop' must be an integer >= 1");
      o.loop = lua_tointeger(L, -1);
    } else if (std::strcmp(key, "file") == 0) {
      need(LUA_TSTRING);
      o.file = lua_tostring(L, -1);
    } else {
      luaL_argerror(L, arg, lua_pushfstring(L, "unknown option '%s' (known: %s, %s)", key, run_option_names().c_str(),
                                            kModuleOptionNames));
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
