-- Reports and files from Lua and from the command line: write, read back, convert.
local profiler = require "profiler"
local H = dofile("harness.lua")
assert(H.luaprof, "LUAPROF is not set")
local profconv = H.luaprof:gsub("luaprof$", "profconv")

local read = H.read
local dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)

local function leaf(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local function branch(n) local r = leaf(n); return r end
profiler.statprof(function() for _ = 1, 40 do branch(100000); leaf(50000) end end,
                  {hz = 1000, count_calls = true, display = false})
local flat = {}
profiler.report("flat", dir .. "/flat.txt")
local live_flat = read(dir .. "/flat.txt")
H.check(live_flat:find("Sample count", 1, true), "report('flat') wrote the flat report")

-- gprof's call graph carries the exact arc counts of the call hook: leaf is called 40 times
-- by branch and 40 times by the anonymous loop, 80 in all.
profiler.report("gprof-callgraph", dir .. "/cg.txt")
local cg = read(dir .. "/cg.txt")
local _, arcs_to_leaf = cg:gsub("\n +[%d.]+ +[%d.]+ +40/80 +leaf %(", "")
H.check(arcs_to_leaf >= 2, "two arcs of 40 of leaf's 80 calls in the call graph:\n%s", cg)
H.check(cg:find("\n%[%d+%] +[%d.]+ +[%d.]+ +[%d.]+ +80 +leaf %(") ~= nil, "leaf's primary line says 80 calls:\n%s", cg)

-- Allegro's controls: a hidden function's time goes to its caller, which is marked "...".
profiler.report("allegro", dir .. "/al.txt", {hidden = {"leaf"}, significance_threshold = 0.001})
local al = read(dir .. "/al.txt")
H.check(al:find("Times below 0.1% will be suppressed.", 1, true) and al:find("%.%.%. branch %(") and not al:find("leaf"),
        "hidden leaf folded into '... branch':\n%s", al)
local bad_ok, bad_e = pcall(profiler.report, "allegro", nil, {significance = 2})
H.check(not bad_ok and bad_e:find("unknown option 'significance'", 1, true), "%s", bad_e)
bad_ok, bad_e = pcall(profiler.report, "allegro", nil, {significance_threshold = 2})
H.check(not bad_ok and bad_e:find("must be a fraction between 0 and 1", 1, true), "%s", bad_e)

-- Every style renders; unknown and planned styles are clear errors.
for _, style in ipairs({"flat", "flat-guile2", "tree", "anomalies", "gprof", "gprof-callgraph", "allegro", "allegro-callgraph"}) do
  local path = dir .. "/" .. style .. ".txt"
  profiler.report(style, path)
  H.check((read(path) or "") ~= "", "report(%q) wrote something", style)
end
local ok, e = pcall(profiler.report, "fancy")
H.check(not ok and e:find("unknown report style 'fancy' (known: flat, flat-guile2, tree, anomalies, gprof, gprof-callgraph, allegro, allegro-callgraph, call-counts, frames)", 1, true), "%s", e)
ok, e = pcall(profiler.write, dir .. "/x", "pdf")
H.check(not ok and e:find("unknown format 'pdf'", 1, true), "%s", e)
ok, e = pcall(profiler.write, "/nonexistent-dir/x.tree", "lispworks")
H.check(not ok and e:find("cannot write '/nonexistent-dir/x.tree'", 1, true), "%s", e)

-- Write a LispWorks tree, read it back: every report prints the same as from the live run.
local live = {}
for _, style in ipairs({"flat", "tree", "anomalies"}) do profiler.report(style, dir .. "/live-" .. style) ; live[style] = read(dir .. "/live-" .. style) end
profiler.write(dir .. "/run.tree", "lispworks")
profiler.write(dir .. "/run.folded", "folded")
local warnings = profiler.read(dir .. "/run.tree")
H.check(#warnings == 0, "no warnings reading our own tree: %s", table.concat(warnings, "; "))
for _, style in ipairs({"flat", "tree", "anomalies"}) do
  profiler.report(style, dir .. "/back-" .. style)
  H.check(read(dir .. "/back-" .. style) == live[style], "%s report after a LispWorks round trip:\n%s\nvs\n%s",
          style, read(dir .. "/back-" .. style), live[style])
end
H.check(profiler.call_data_calls(profiler.fold_call_data(function(cd, acc) return acc or cd end, nil)) ~= nil,
        "call counts survive the tree file")
profiler.write(dir .. "/again.tree", "lispworks")
H.check(read(dir .. "/again.tree") == read(dir .. "/run.tree"), "write -> read -> write is byte-identical")

-- Folded read back: same tree report.
profiler.read(dir .. "/run.folded")
profiler.report("tree", dir .. "/folded-tree")
local folded_tree = read(dir .. "/folded-tree")
H.check(folded_tree:gsub("Total time.*", "") == live.tree:gsub("Total time.*", ""), "tree from folded:\n%s", folded_tree)

-- Reading rubbish is a clear error naming the file and line.
local bad = dir .. "/bad.tree"
local f = io.open(bad, "w"); f:write("LispWorks Profiler Tree: x\n0|1|0|1|0|r\n1|x|0|1|0|a\n"); f:close()
ok, e = pcall(profiler.read, bad)
H.check(not ok and e:find(bad .. ": line 3: Count must be a non-negative decimal integer, got 'x'", 1, true), "%s", e)
ok, e = pcall(profiler.read, dir .. "/missing.tree")
H.check(not ok and e:find("cannot open '" .. dir .. "/missing.tree'", 1, true), "%s", e)

-- The command line: luaprof -o writes the tree; profconv prints any report of it or converts.
local script = dir .. "/s.lua"
f = io.open(script, "w"); f:write("local function hot() local x = 0 for i = 1, 1e7 do x = x + i end return x end print(hot())"); f:close()
local out, status = H.run(string.format("%s --hz 1000 -o %s/cli.tree --style tree %s", H.luaprof, dir, script))
H.check(status == 0 and out:find("%d+%.%d%% main chunk") ~= nil, "luaprof --style tree printed a tree:\n%s", out)
H.check((read(dir .. "/cli.tree") or ""):find("^LispWorks Profiler Tree") ~= nil, "luaprof -o wrote a LispWorks tree")
out, status = H.run(string.format("%s %s/cli.tree --report flat", profconv, dir))
H.check(status == 0 and out:find("hot %(") ~= nil, "profconv printed the flat report:\n%s", out)
out, status = H.run(string.format("%s %s/cli.tree --to folded -o %s/cli.folded", profconv, dir, dir))
H.check(status == 0 and (read(dir .. "/cli.folded") or ""):find("hot %(.-%) %d+\n") ~= nil, "profconv converted to folded")
out, status = H.run(string.format("%s %s/cli.folded --report tree", profconv, dir))
H.check(status == 0 and out:find("hot (", 1, true), "profconv reads folded (guessed):\n%s", out)
out, status = H.run(string.format("%s %s", profconv, bad))
H.check(status == 1 and out:find("profconv: " .. bad .. ": line 3:", 1, true), "profconv on a bad file: %s", out)
-- profconv names the output format by -o's extension, as luaprof does.
for _, case in ipairs({{"conv.speedscope.json", '"$schema"'}, {"conv.folded", "# scriptprof "},
                       {"conv.pb.gz", "\x1f\x8b\x08"}, {"conv.sampler", "@supersamplerV1.0"}}) do
  out, status = H.run(string.format("%s %s/cli.tree -o %s/%s", profconv, dir, dir, case[1]))
  H.check(status == 0 and (read(dir .. "/" .. case[1]) or ""):sub(1, 200):find(case[2], 1, true),
          "profconv -o %s wrote that format: %s", case[1], out)
end
out, status = H.run(string.format("%s %s/cli.tree -o %s/conv.txt", profconv, dir, dir))
H.check(status == 0 and (read(dir .. "/conv.txt") or ""):find("hot %("), "profconv -o x.txt writes the flat report")
out, status = H.run(string.format("%s --hz 100 -o %s/x.unknown %s", H.luaprof, dir, script))
H.check(status == 125 and out:find("name the format with --format", 1, true), "luaprof -o without a format: %s", out)

-- The interchange formats from the command line; a Chrome trace turns full stacks on by itself.
for _, case in ipairs({{"cli.speedscope.json", '"$schema":"https://www.speedscope.app/file-format-schema.json"'},
                       {"cli.pb.gz", "\x1f\x8b\x08"}, {"cli.trace", '"traceEvents"', "--format chrome"}}) do
  out, status = H.run(string.format("%s --hz 1000 %s -o %s/%s %s", H.luaprof, case[3] or "", dir, case[1], script))
  local written = read(dir .. "/" .. case[1]) or ""
  H.check(status == 0 and written:find(case[2], 1, true), "luaprof -o %s: %s", case[1], out)
end
local ok2, e2 = pcall(profiler.write, dir .. "/x.json", "chrome")
H.check(not ok2 and e2:find("full stacks", 1, true), "chrome without full stacks: %s", tostring(e2))

-- The timeline survives a file that keeps samples in time order (speedscope, Sampler, written
-- from a run with full stacks): converted to a Chrome trace or lms CSV, it gives the stacks of
-- the trace written from the run itself, in the same order (those files keep no gaps between
-- samples, so the trace's pauses are not compared). A file that keeps none says what would.
profiler.statprof(function() for _ = 1, 40 do branch(1e5) leaf(5e4) end end, {hz = 2000, full_stacks = true, display = false})
local function events(path)  -- the trace's stacks in time order, each where it is deepest
  local text, stack, list, opened = read(path) or "", {}, {}, false
  for name, ph in text:gmatch('"name":"([^"]*)","ph":"([BE])"') do
    if ph == "B" then
      stack[#stack + 1] = name
    else
      local here = table.concat(stack, ";")
      if opened and list[#list] ~= here then list[#list + 1] = here end
      stack[#stack] = nil
    end
    opened = ph == "B"
  end
  return list
end
profiler.write(dir .. "/timeline.json", "chrome")
local direct = events(dir .. "/timeline.json")
for _, from in ipairs({"timeline.speedscope.json", "timeline.sampler"}) do
  profiler.write(dir .. "/" .. from, from:match("speedscope") and "speedscope" or "sampler")
  out, status = H.run(string.format("%s %s/%s --to chrome -o %s/from.json", profconv, dir, from, dir))
  local converted = events(dir .. "/from.json")
  local same = #direct > 4 and #converted == #direct
  for i = 1, #direct do same = same and converted[i] == direct[i] end
  H.check(status == 0 and same, "%s -> chrome: %d stacks (%d from the run): %s", from, #converted, #direct, out)
  out, status = H.run(string.format("%s %s/%s --to lms -o %s/from.csv", profconv, dir, from, dir))
  H.check(status == 0 and (read(dir .. "/from.csv") or ""):find("leaf", 1, true), "%s -> lms: %s", from, out)
end
out, status = H.run(string.format("%s %s/cli.tree --to chrome -o %s/none.json", profconv, dir, dir))
H.check(status == 1 and out:find("convert the speedscope or Sampler file of such a run", 1, true),
        "a tree to chrome says what input would do: %s", out)

os.execute("rm -rf " .. dir)
H.done()
