// The Lua module `profiler` (require "profiler"): Guile statprof's API in Lua spelling.
#pragma once
#include <cstdint>
#include <string>

extern "C" {
#include <lua.h>
}

extern "C" int luaopen_profiler(lua_State* L);

namespace scriptprof::lua {

constexpr double kMaxHz = 100000.0;  // the highest sampling rate the module accepts

// Parses a sampling rate as the module does; returns false with a message for a bad one
// (not a number, NaN, <= 0 or > 100000).
bool parse_hz(double hz, std::uint64_t* period_ns, std::string* error);

}  // namespace scriptprof::lua
