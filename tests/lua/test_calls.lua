-- Exact call counts: recursion, tail calls, C functions, and identities that survive the garbage
-- collector reusing a dead closure's address for a new one.
local profiler = require "profiler"
local H = dofile("harness.lua")

local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local function tail(n) if n == 0 then return 0 end return tail(n - 1) end

profiler.statprof(function() fib(20); tail(1000); for _ = 1, 10 do string.rep("x", 3) end end,
                  {count_calls = true, display = false})
local counts = H.counts(profiler)
H.check(H.find(counts, "fib").calls == 21891, "fib(20): 21891 calls (%s)", H.find(counts, "fib").calls)
local t = H.find(counts, "tail") or H.find(counts, "?")
H.check(t and t.calls == 1001, "tail calls count as calls: %s", t and t.calls)
H.check(counts["string.rep [C]"] and counts["string.rep [C]"].calls == 10, "C functions are counted")
for label in pairs(counts) do
  H.check(not label:find("statprof", 1, true), "the profiler's own functions are not counted: %s", label)
end

-- Closures made, called and collected in turn: a new closure often lands at a dead one's
-- address. Each prototype's count must stay exact.
local function make_a()
  return function() return 1 end
end
local function make_b()
  return function() return 2 end
end
profiler.statprof(function()
  for i = 1, 3000 do
    local a = make_a(); a()
    if i % 10 == 0 then collectgarbage() end
    local b = make_b(); b(); b()
  end
end, {count_calls = true, display = false})
counts = H.counts(profiler)
-- Anonymous functions are labelled by where they are defined.
local function at(make)
  local info = debug.getinfo(make(), "S")
  return ("<anonymous> (%s:%d)"):format(info.short_src, info.linedefined)
end
local a_calls, b_calls = (counts[at(make_a)] or {}).calls, (counts[at(make_b)] or {}).calls
H.check(a_calls == 3000 and b_calls == 6000,
        "calls per prototype stay exact across collections: a %d of 3000, b %d of 6000", a_calls, b_calls)

-- Prototypes made, called and collected in turn (chunks loaded again and again): a new
-- prototype often lands at a dead one's address, and must not inherit its identity.
local chunk_a = "local pad = 1\nreturn function() return 1 end"
local chunk_b = "return function() return 2 end"
profiler.statprof(function()
  for i = 1, 600 do
    local f = (loadstring or load)(i % 3 == 0 and chunk_b or chunk_a, i % 3 == 0 and "=chunk_b" or "=chunk_a")()
    f()
    if i % 2 == 0 then collectgarbage() end
  end
end, {count_calls = true, display = false})
counts = H.counts(profiler)
local from_a, from_b = 0, 0
for label, c in pairs(counts) do
  if label:find("(chunk_a:2)", 1, true) then from_a = from_a + (c.calls or 0) end
  if label:find("(chunk_b:1)", 1, true) then from_b = from_b + (c.calls or 0) end
end
H.check(from_a == 400 and from_b == 200, "calls per prototype stay exact as chunks are reloaded: a %d of 400, b %d of 200",
        from_a, from_b)

-- Coroutines made before the run have no hook of ours: the call that resumes one (resume, a
-- wrap function, close with a to-be-closed variable) gives it ours, with nothing of ours on the
-- switch path, and every call inside is counted. So are those made during the run (they inherit
-- their maker's hook), and the many closures of one prototype are one function.
local function inner() return 1 end
local function body() for _ = 1, 5 do inner(); coroutine.yield() end end
local function make_body()
  return function() inner(); coroutine.yield(); inner() end
end
local before = coroutine.create(body)
local before_wrap = coroutine.wrap(body)
-- (5.4 on: a to-be-closed variable, whose __close runs in the coroutine that coroutine.close closes)
local closing = coroutine.close and coroutine.create(load([[
  local inner = ...
  local guard <close> = setmetatable({}, {__close = function() inner(); inner() end})
  inner()
  coroutine.yield()
]]))
if closing then coroutine.resume(closing, inner) end  -- suspended with its guard
local lib_resume, lib_wrap = coroutine.resume, coroutine.wrap
profiler.start_profiler{count_calls = true, hz = 100}
local stock = coroutine.resume == lib_resume and coroutine.wrap == lib_wrap
for _ = 1, 5 do coroutine.resume(before); before_wrap() end
if closing then coroutine.close(closing) end
local during = {}
for i = 1, 50 do during[i] = coroutine.wrap(make_body()) end
for _ = 1, 2 do for i = 1, 50 do during[i]() end end
profiler.stop_profiler()
counts = H.counts(profiler)
local expected = 5 + 5 + (closing and 2 or 0) + 100
local inner_calls = (H.find(counts, "inner") or {}).calls
H.check(inner_calls == expected, "calls in coroutines made before and during the run: inner %s of %d", inner_calls, expected)
local made = (counts[at(make_body)] or {}).calls  -- (at: the label of what make_body returns)
H.check(made == 50, "fifty closures of one prototype: one function, called 50 times (%s)", made)
-- (Where the frames are read: 5.2 on, the layout verified. Else every switch is told.)
local internals = profiler.health().internals
H.check(stock or internals == "public API only" or internals == "Lua 5.1",
        "a counting run leaves the coroutine library as it is (%s)", internals)

-- interpret_closures: each closure is its own function, in a coroutine made before the run too.
local function make_leaf(n)
  return function() return n end  -- (an upvalue each: 5.2 and 5.3 would share one closure)
end
local ca, cb = make_leaf(1), make_leaf(2)
local co_a = coroutine.wrap(function() for _ = 1, 3 do ca() end end)
profiler.start_profiler{count_calls = true, hz = 100, interpret_closures = true}
co_a()
cb(); cb()
profiler.stop_profiler()
local per_closure = {}
for label, c in pairs(H.counts(profiler)) do
  if label:match("%[closure %d+%]") then per_closure[#per_closure + 1] = c.calls end
end
table.sort(per_closure)
H.check(#per_closure == 2 and per_closure[1] == 2 and per_closure[2] == 3,
        "interpret_closures counts each closure: %s", table.concat(per_closure, ", "))

-- Counts follow collection: calls made while sampling is suspended, or inside an excluded
-- coroutine, are not counted; the others are, exactly. (The call hook's quick path decides
-- this per call from one flag: every change of state must reach it.)
local function leaf() return 1 end
local function loop_of(n) for _ = 1, n do leaf() end end
local co = coroutine.create(function() while true do loop_of(500); coroutine.yield() end end)
profiler.start_profiler{count_calls = true, hz = 100, except_processes = {co}}
loop_of(100)
profiler.stop_sampling()
loop_of(1000)  -- suspended
profiler.start_sampling()
for _ = 1, 3 do coroutine.resume(co) end  -- excluded
loop_of(20)
profiler.stop_profiler()
counts = H.counts(profiler)
local leaf_calls, loop_calls = (H.find(counts, "leaf") or {}).calls, (H.find(counts, "loop_of") or {}).calls
H.check(leaf_calls == 120 and loop_calls == 2,
        "suspended and excluded calls are not counted: leaf %s of 120, loop_of %s of 2", leaf_calls, loop_calls)

H.done()
