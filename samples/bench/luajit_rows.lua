-- The LuaJIT adapter's rows, beside jit.p's, in one run (lua5.4; bench.sh calls it):
--   lua5.4 samples/bench/luajit_rows.lua BUILD_DIR [--quick]
-- On a known 75/25 split with the JIT on: the worst error of the split (percentage points),
-- the rate (samples per second of the run, asked for --hz), and the overhead (the workload's
-- own CPU time profiled / plain, medians). jit.p is `luajit -jp=fiN` (N ms between samples).
local build, quick = arg[1], arg[2] == "--quick"
local here = arg[0]:match("^(.*)/[^/]*$") or "."
local script = here .. "/luajit_split.lua"
local rounds = quick and 1 or 5
local size = quick and "1000000 10" or "2000000 20"
local luajitprof = build .. "/bin/luajitprof"
if not io.open(luajitprof) then print("luajitprof was not built (LuaJIT's headers missing); skipped") return end

local function run(cmd)
  local pipe = assert(io.popen(cmd .. " 2>&1"))
  local out = pipe:read("a")
  assert(pipe:close(), "failed: " .. cmd .. "\n" .. out)
  return out, tonumber(out:match("work_seconds ([%d.]+)"))
end
local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

print("\n== LuaJIT adapter (luajitprof, JIT on) beside jit.p (luajit -jp=fiN), 75/25 split, medians of " .. rounds)
print(string.format("%-8s %12s %10s %9s %14s %12s", "hz", "ours err pp", "ours Hz", "ours x", "jit.p err pp", "jit.p x"))
for _, hz in ipairs({100, 1000, 10000}) do
  local plain, ours, theirs, err, their_err, rate = {}, {}, {}, 0, 0, math.huge
  for _ = 1, rounds do
    local _, t = run("luajit " .. script .. " " .. size)
    plain[#plain + 1] = t
    local out, t2 = run(string.format("%s --hz %d %s %s", luajitprof, hz, script, size))
    ours[#ours + 1] = t2
    -- A function with no sample has no row (at 100 Hz a --quick run has a dozen samples).
    local heavy = tonumber(out:match("\n%s*([%d.]+)[^\n]*heavy %(")) or 0
    local light = tonumber(out:match("\n%s*([%d.]+)[^\n]*light %(")) or 0
    assert(heavy + light > 0, "no sample of heavy or light:\n" .. out)
    err = math.max(err, math.abs(100 * heavy / (heavy + light) - 75))
    local n, secs = tonumber(out:match("Sample count: (%d+)")), tonumber(out:match("Total time: ([%d.]+)"))
    local r = n / secs
    if math.abs(r - hz) > math.abs(rate - hz) or rate == math.huge then rate = r end
    local jout, t3 = run(string.format("luajit -jp=fi%d %s %s", math.max(1, 1000 // hz), script, size))
    theirs[#theirs + 1] = t3
    local jh, jl = tonumber(jout:match("(%d+)%%%s+heavy")) or 0, tonumber(jout:match("(%d+)%%%s+light")) or 0
    their_err = math.max(their_err, math.abs(100 * jh / math.max(1, jh + jl) - 75))
  end
  local p = median(plain)
  print(string.format("%-8d %12.2f %10.0f %9.3f %14.2f %12.3f%s", hz, err, rate, median(ours) / p, their_err,
                      median(theirs) / p, hz > 1000 and "   (jit.p: 1 ms is its shortest interval)" or ""))
end
