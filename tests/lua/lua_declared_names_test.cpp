// The names Lua source text declares its functions under, keyed as lua_getinfo gives lines.
#include <catch2/catch.hpp>

#include "lua_declared_names.hpp"

using scriptprof::lua::declared_names;

namespace {

// The name at (line, last_line), or "(none)" when the scan has no entry there.
std::string at(const scriptprof::lua::DeclaredNames& names, int line, int last_line) {
  auto it = names.find({line, last_line});
  return it == names.end() ? "(none)" : it->second;
}

}  // namespace

TEST_CASE("declared names: every way Lua names a function in its text") {
  auto names = declared_names(
      "local function update(dt)\n"          // 1
      "end\n"                                 // 2
      "function Vec.new(x) return x end\n"   // 3
      "function Vec:len() end\n"             // 4
      "function a.b.c:d() end\n"             // 5
      "local draw = function() end\n"        // 6
      "M.handlers.click = function() end\n"  // 7
      "local t = { tick = function() end,\n" // 8
      "  [\"on-key\"] = function() end }\n"  // 9
      "local k <const> = function() end\n"   // 10
      "cfg[\"x\"].y = function() end\n"      // 11
      "pcall(function() end)\n"              // 12
      "return function() end\n");            // 13
  CHECK(at(names, 1, 2) == "update");
  CHECK(at(names, 3, 3) == "Vec.new");
  CHECK(at(names, 4, 4) == "Vec:len");
  CHECK(at(names, 5, 5) == "a.b.c:d");
  CHECK(at(names, 6, 6) == "draw");
  CHECK(at(names, 7, 7) == "M.handlers.click");
  CHECK(at(names, 8, 8) == "tick");
  CHECK(at(names, 9, 9) == "on-key");
  CHECK(at(names, 10, 10) == "k");
  CHECK(at(names, 11, 11) == "cfg.x.y");
  CHECK(at(names, 12, 12).empty());  // anonymous, and known to be
  CHECK(at(names, 13, 13).empty());
}

TEST_CASE("declared names: each function ends at its own end, past blocks, strings and comments") {
  auto names = declared_names(
      "#!/usr/bin/env lua\n"                                // 1
      "local function outer()\n"                            // 2
      "  local s = 'end function x() end' -- end\n"         // 3
      "  --[==[ function fake() end\n"                      // 4
      "  ]==]\n"                                            // 5
      "  local long = [[\n"                                 // 6
      "end]]\n"                                             // 7
      "  for i = 1, 2 do if i then repeat until true end end\n"  // 8
      "  while false do end\n"                              // 9
      "  local function inner() return \"\\z\n"             // 10
      "     \" end\n"                                       // 11
      "  return inner\n"                                    // 12
      "end\n");                                             // 13
  CHECK(at(names, 2, 13) == "outer");
  CHECK(at(names, 10, 11) == "inner");
  CHECK(names.size() == 2);  // nothing from the string, the comments or the long string
}

TEST_CASE("declared names: two functions on the same lines leave neither name") {
  auto names = declared_names("local a, b = { f = function() end }, { g = function() end }\n");
  CHECK(at(names, 1, 1).empty());
  auto same = declared_names("local x = { f = function() end, f = function() end }\n");
  CHECK(at(same, 1, 1) == "f");  // the same name twice is still sure
}

TEST_CASE("declared names: a function whose parameters start on a later line has both lines") {
  // Lua's linedefined is the `function` keyword's line for `function f`, and the parameter
  // list's for `local function f` and function expressions.
  auto names = declared_names("local function f\n(x)\nend\nlocal g = function\n(y) end\n");
  CHECK(at(names, 1, 3) == "f");
  CHECK(at(names, 2, 3) == "f");
  CHECK(at(names, 4, 5) == "g");
  CHECK(at(names, 5, 5) == "g");
}

TEST_CASE("declared names: text that is not Lua gives no names rather than wrong ones") {
  CHECK(declared_names("").empty());
  CHECK(declared_names("function").empty());     // never closed
  CHECK(declared_names("end end until").empty());  // closers without openers
  auto names = declared_names("local s = 'unfinished\nlocal function ok() end\n");
  CHECK(at(names, 2, 2) == "ok");
}
