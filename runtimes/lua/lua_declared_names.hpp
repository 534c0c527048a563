// The names functions are declared under in Lua source text: "update" for `local function
// update`, "Vec:new" for `function Vec:new`, "handlers.click" for `handlers.click = function`.
// They depend on the text alone, so a function has the same name in every run, however it is
// called (call-site names are "?" from pcall, from C and after tail calls).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace scriptprof::lua {

// Key: (line the function is defined on, line of its `end`), as lua_getinfo's linedefined and
// lastlinedefined give them. Value: its declared name, or "" for an anonymous function (a
// function expression passed or returned, or two different functions sharing both lines).
using DeclaredNames = std::map<std::pair<int, int>, std::string>;

// Scans a chunk's text (comments, strings and long brackets skipped). Text that does not
// parse as Lua gives fewer names, never a wrong line.
DeclaredNames declared_names(std::string_view text);

}  // namespace scriptprof::lua
