-- A real consumer reads our pprof files: `go tool pprof -top` reports the same functions and
-- totals as our own flat report. Skipped (exit 77) only where Go is not installed.
local H = dofile("harness.lua")
local _, has_go = H.run("command -v go")
if has_go ~= 0 then print("skipped: go (Debian golang-go) is not installed"); os.exit(77) end

local dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
local script = dir .. "/s.lua"
local f = io.open(script, "w")
f:write([[
local function big() local x = 0 for i = 1, 3e7 do x = x + i % 3 end return x end
local function small() local x = 0 for i = 1, 1e7 do x = x + i % 3 end return x end
print(big() + small())
]])
f:close()
local report = H.run(string.format("%s --hz 1000 --report %s/flat.txt -o %s/p.pb.gz %s", H.luaprof, dir, dir, script))
local flat = io.open(dir .. "/flat.txt"):read("*a")
local n = tonumber(flat:match("Sample count: (%d+)"))
local top, status = H.run(string.format("HOME=%s go tool pprof -top -symbolize=none %s/p.pb.gz", dir, dir))
H.check(status == 0, "go tool pprof failed:\n%s", top)
local total = tonumber(top:match("Total samples = (%d+)ms"))
H.check(total == n, "pprof total %s ms, our sample count %s at 1 ms each", tostring(total), tostring(n))
-- Each of our rows: self samples (1 ms each) equal pprof's flat ms for that function.
for pct, self, label in flat:gmatch("\n *([%d.]+) +[%d.]+ +([%d.]+)  ([^\n]+)") do
  local name = label:match("^(%a+) %(")
  if name == "big" or name == "small" then
    local ms = tonumber(top:match("\n *(%d+)ms [^\n]*" .. name .. " %("))
    local ours = math.floor(tonumber(pct) * n / 100 + 0.5)
    H.check(ms == ours, "%s: pprof flat %s ms, ours %d samples", name, tostring(ms), ours)
  end
end
H.check(top:find("big (", 1, true) and top:find("small (", 1, true), "pprof lists big and small:\n%s", top)

-- Names come out of pprof as our reports print them, with pprof's default symbolization: a
-- name that looked like C++ to it (any of <>[] or ::) lost its "(...)" and "<...>", and
-- "<anonymous> (s.lua:3)" was printed blank.
local names_script = dir .. "/names.lua"
f = io.open(names_script, "w")
f:write([[
local t = {}
t.handler = function() local x = 0 for i = 1, 3e6 do x = x + i end return x end
local anon = (function() return function() local y = 0 for i = 1, 3e6 do y = y + i end return y end end)()
load("function chunkfn() local x = 0 for i = 1, 3e6 do x = x + i end return x end")()
for i = 1, 3 do t.handler() anon() chunkfn() end
local s = string.rep("x", 3e7)
]])
f:close()
H.run(string.format("%s --hz 1000 --report %s/names.txt -o %s/names.pb.gz %s", H.luaprof, dir, dir, names_script))
-- (-nodefraction=0: pprof would drop a 1 ms row, as our report does not.)
local names_top, names_status = H.run(string.format("HOME=%s go tool pprof -top -nodefraction=0 %s/names.pb.gz", dir, dir))
H.check(names_status == 0, "go tool pprof failed:\n%s", names_top)
local labels = 0
for label in io.open(dir .. "/names.txt"):read("*a"):gmatch("\n *[%d.]+ +[%d.]+ +[%d.]+  ([^\n]+)") do
  labels = labels + 1
  H.check(names_top:find("  " .. label .. "\n", 1, true), "pprof prints %q as we do:\n%s", label, names_top)
end
H.check(labels >= 4, "the report named the functions (%d rows)", labels)

-- Line numbers: each location is a function at the line it ran, so -lines splits a function by
-- line and -list shows per-line times (every location sat at the function's first line).
local lines_script = dir .. "/lines.lua"
f = io.open(lines_script, "w")
f:write([[
local function two_loops()
  local x = 0
  for i = 1, 3e7 do x = x + i % 3 end
  for i = 1, 1e7 do x = x + i % 5 end
  return x
end
print(two_loops())
]])
f:close()
H.run(string.format("%s --hz 1000 -o %s/lines.pb.gz %s", H.luaprof, dir, lines_script))
local by_line, lstatus = H.run(string.format("HOME=%s go tool pprof -top -lines -symbolize=none %s/lines.pb.gz", dir, dir))
H.check(lstatus == 0, "go tool pprof -lines failed:\n%s", by_line)
local ms3 = tonumber(by_line:match("\n *(%d+)ms [^\n]*two_loops [^\n]*lines%.lua:3"))
local ms4 = tonumber(by_line:match("\n *(%d+)ms [^\n]*two_loops [^\n]*lines%.lua:4"))
H.check(ms3 and ms4 and ms3 > 1.5 * ms4 and ms4 > 0, "-lines: the 3e7 loop (line 3) outweighs the 1e7 loop (line 4): %s ms, %s ms\n%s",
        tostring(ms3), tostring(ms4), by_line)
local list = H.run(string.format("HOME=%s go tool pprof -list two_loops -symbolize=none %s/lines.pb.gz", dir, dir))
H.check(list:find("\n *%d+ms +%d+ms +3:  for i = 1, 3e7") ~= nil, "-list puts time on the loop's line:\n%s", list)

-- A space profile is bytes in pprof (alloc_space/bytes, as Go's heap profiles), never time:
-- pprof's total is the bytes our report says were allocated.
local profiler = require "profiler"
local function build() local t = {} for i = 1, 2e5 do t[i] = ("x"):rep(40) .. i end return #t end
profiler.statprof(build, {hz = false, alloc = 65536, display = false})
profiler.write(dir .. "/space.pb.gz", "pprof")
profiler.display(dir .. "/space.txt")
local kbytes = tonumber(io.open(dir .. "/space.txt"):read("*a"):match("Total allocated: ([%d.]+) Kbytes"))
local stop, sstatus = H.run(string.format("HOME=%s go tool pprof -top -symbolize=none %s/space.pb.gz", dir, dir))
H.check(sstatus == 0 and stop:find("Type: alloc_space", 1, true), "space profile's pprof type:\n%s", stop)
local mb = tonumber(stop:match("Total samples = ([%d.]+)MB"))
H.check(kbytes and mb and math.abs(mb * 1024 - kbytes) <= 0.01 * kbytes,
        "pprof total %s MB, our report %s Kbytes\n%s", tostring(mb), tostring(kbytes), stop)
os.execute("rm -rf " .. dir)
H.done()
