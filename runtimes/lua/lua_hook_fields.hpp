// Two hook fields of a lua_State that the C API does not expose, located at run time.
//
// A sample arms Lua's hook with a count of 1 and then puts the program's hook back with
// lua_sethook, which restarts its instruction countdown: a program counting instructions would
// see its events drift. And while any hook runs, Lua counts the hook function's instructions
// against the countdown without calling hooks, so a sample armed then would eat the program's
// count. So the countdown is read and put back, and no sample is armed while a hook runs.
// Both fields are found once, in the main thread's lua_State, by setting known values and
// looking for them; when they cannot be found, counts drift slightly and nothing else changes.
#pragma once
extern "C" {
#include <lua.h>
}

namespace scriptprof::lua {

// Locates the fields using L's main thread (its hook is set and restored, and a C function is
// called under a probe hook). Once per process; false when the layout is not the one expected.
bool locate_hook_fields(lua_State* L);

// The instructions left before L's count hook fires, or nullptr if not located. A plain int in
// the state: readable and writable from a signal handler on L's own thread.
int* hook_countdown(lua_State* L);

// Whether a hook function is running on L (Lua's allowhook is off). False if not located. A
// plain byte read: usable from a signal handler on L's own thread.
bool hook_running(lua_State* L);

}  // namespace scriptprof::lua
