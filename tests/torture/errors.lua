-- Errors: messages, positions, levels, non-string values, handlers and tracebacks.
-- Every case runs many times so that samples land inside it; its output is printed once.
local out = {}
local function say(...) local t = table.pack(...) for i = 1, t.n do t[i] = tostring(t[i]) end out[#out + 1] = table.concat(t, " ", 1, t.n) end
local function kind(v) return type(v) == "table" and ("table " .. tostring(v.tag)) or type(v) .. " " .. tostring(v) end

local obj = {tag = "obj"}
local values = {"msg", 42, 4.5, true, false, obj, setmetatable({tag = "meta"}, {__tostring = function() return "custom" end})}
local function thrower(v, level) error(v, level) end
local function depth(n, v) if n == 0 then thrower(v) end return (depth(n - 1, v)) end

local function round()
  for i, v in ipairs(values) do
    local ok, e = pcall(depth, 30, v)
    say("pcall", i, ok, kind(e), rawequal(e, v) or e)
  end
  say("nil", pcall(error))
  say("nil2", pcall(error, nil))
  for level = 0, 3 do say("level", level, pcall(thrower, "at level", level)) end
  -- Runtime errors name the variable or field at fault.
  local t = {}
  say(pcall(function() return t.x.y end))
  say(pcall(function() return undefined_global() end))
  say(pcall(function() return t < t end))
  say(pcall(function() return "a" .. {} end))
  say(pcall(function() return 1 // 0 end))
  say(pcall(function() return math.tointeger(2^53) | 1.5 end))
  say(pcall(function() for i = 1, 10, 0 do end end))
  say(pcall(string.rep))
  say(pcall(string.format, "%d", 1.5))
  say(pcall(setmetatable, 1, nil))
  -- xpcall: the handler sees the original value and runs before unwinding.
  say(xpcall(depth, function(e) return "handled " .. kind(e) .. " " .. debug.traceback("tb", 1):gsub("\n", " | ") end, 3, obj))
  say(xpcall(depth, function(e) return select("#", e), kind(e) end, 2, nil))
  say(xpcall(error, function(e) error("in handler") end, "first"))
  say(xpcall(function(...) return select("#", ...), ... end, print, 1, nil, 3, nil))
  -- Errors through nested protected calls, rethrown at each level.
  local function rethrow(n) if n == 0 then error({tag = "deep"}) end local ok, e = pcall(rethrow, n - 1) error(e, 0) end
  local ok, e = pcall(rethrow, 50)
  say("rethrown", ok, kind(e))
  -- assert with messages of every kind.
  say(pcall(assert, false))
  say(pcall(assert, nil, obj) == false and "assert keeps the object")
  say(pcall(assert, 1, 2, 3))
  -- tostring and error in __tostring, __index errors with positions.
  local proxy = setmetatable({}, {__index = function(_, k) error("no field " .. k, 2) end})
  say(pcall(function() return proxy.missing end))
  say(debug.traceback("message", 1):gsub("\n", " | "))
  say(debug.traceback(obj) == obj)
end

dofile("rounds.lua")(300, function() out = {} round() return table.concat(out, "\n") end)
-- Uncaught: the interpreter's own message and traceback, and exit status 1.
local function last() error(setmetatable({}, {__tostring = function() return "uncaught object" end})) end
last()
