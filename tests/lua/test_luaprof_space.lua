-- luaprof's options for space, GC and the Allegro controls.
local H = dofile("harness.lua")
assert(H.luaprof, "LUAPROF is not set")

local read = H.read
local dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
local function run(args)
  local out, err = dir .. "/out", dir .. "/err"
  local ok, how, code = os.execute(string.format("%s %s >%s 2>%s", H.luaprof, args, out, err))
  return read(out), read(err), how == "exit" and code or -code
end
local script = dir .. "/work.lua"
local f = assert(io.open(script, "w"))
f:write([[
local sink
local function churn(n)
  for i = 1, n do sink = {i, tostring(i)} end
end
local function spin(n)
  local x = 0
  for i = 1, n do x = x + i % 7 end
  return x
end
for _ = 1, 3 do churn(1e5); spin(1e6) end
print("done")
]])
f:close()

-- Time, GC and space together: one report each, titled.
local out, err, code = run("--hz 1000 --gc --alloc 4096 --annotate churn " .. script)
H.check(code == 0 and out:find("^done\n"), "runs the script: %s %s", code, err)
local time_at = out:find("== time ==\n", 1, true)
local gc_at = out:find("== garbage collections (a sample after each) ==\n", 1, true)
local space_at = out:find("== space (bytes allocated) ==\n", 1, true)
H.check(time_at and gc_at and space_at and time_at < gc_at and gc_at < space_at, "three titled reports:\n%s", out)
H.check(out:find("space    Kbytes     Kbytes", 1, true), "the space report is in Kbytes")
H.check(out:find("churn %(.-work%.lua:2%): [%d.]+%% of the samples") and
        out:find("\n%s+[%d.]+%s+[%d.]+%s+3%s+  for i = 1, n do sink = {i, tostring%(i%)} end\n"),
        "--annotate prints churn's lines with shares:\n%s", out)

-- --gc alone: no time profile, the gcprof display only.
out, err, code = run("--gc " .. script)
H.check(code == 0 and not out:find("== time", 1, true) and out:find("churn", 1, true), "--gc alone:\n%s%s", out, err)

-- --max-samples: stops early and says so on stderr. The count is of ticks: a sample taken late
-- (a tick inside a long allocation) carries the ticks that waited, so ten samples are 10 or
-- more ticks, far fewer than the whole run's (about 3000).
out, err, code = run("--hz 1000 --max-samples 10 " .. script)
local count = tonumber(out:match("Sample count: (%d+)\n"))
H.check(code == 0 and count and count >= 10 and count < 100 and err:find("max_samples (10) reached", 1, true),
        "--max-samples:\n%s%s", out, err)

-- Hidden functions in the allegro styles, and the call counts listing.
out = run("--hz 1000 --calls --style allegro --hide spin --hide-package string. " .. script)
H.check(out:find("... main chunk", 1, true) and not out:find("spin", 1, true), "--hide:\n%s", out)
out = run("--calls --style call-counts " .. script)
H.check(out:find("\n3 #<Function churn %(") and out:find("\n3 #<Function spin %("), "call-counts:\n%s", out)

-- Bad values name the option.
out, err, code = run("--alloc 0 " .. script)
H.check(code ~= 0 and err:find("--alloc must be true, false or the mean bytes between samples (an integer >= 1), got 0", 1, true), "%s", err)
out, err, code = run("--max-samples lots " .. script)
H.check(code ~= 0 and err:find('--max-samples must be an integer >= 0 (0: no bound), got "lots"', 1, true), "%s", err)

-- -o with time, GC and space: each profile written, the first at the path, the others beside
-- it tagged by kind, and the report says where.
do
  local base = dir .. "/all.folded"
  local out, err, code = run("--hz 1000 --gc --alloc 4096 -o " .. base .. " " .. script)
  H.check(code == 0, "-o with three profiles: %s %s", code, err)
  for _, path in ipairs({base, dir .. "/all.gc.folded", dir .. "/all.space.folded"}) do
    local text = read(path) or ""
    H.check(text:find("work%.lua") ~= nil, "%s holds its profile:\n%s", path, text)
    H.check(out:find(path, 1, true) ~= nil, "the report names %s:\n%s", path, out)
  end
  -- --gc alone: its profile is the one at the path.
  local gc_only = dir .. "/gc_only.folded"
  out, err, code = run("--gc -o " .. gc_only .. " " .. script)
  H.check(code == 0 and (read(gc_only) or ""):find("work%.lua") ~= nil and not read(dir .. "/gc_only.gc.folded"),
          "--gc alone writes the gc profile at the path: %s %s", code, err)
end

os.execute("rm -rf " .. dir)
H.done()
