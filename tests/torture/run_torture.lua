-- The torture suite under one profiling mode: `lua5.4 run_torture.lua MODE`. Every script runs
-- plain and profiled, through luaprof (against lua5.4) and through profiler.statprof (against
-- the same driver without the profiler); stdout, stderr and the exit status must be identical,
-- and the report must have been written even when the script ends in an error or os.exit.
local mode = assert(arg[1], "usage: run_torture.lua MODE")
local lua, luaprof = assert(os.getenv("LUA54")), assert(os.getenv("LUAPROF"))
local luaprof_flags = ({
  cpu10k = "--hz 10000",
  wall10k = "--hz 10000 --clock wall",
  calls = "--calls",
  gc = "--gc",
  alloc = "--alloc 4096",
  all = "--hz 10000 --calls --gc --alloc 4096 --full-stacks",
})[mode]
assert(luaprof_flags, "unknown mode " .. mode)

-- Each script, with its arguments and what is fed to its standard input.
local slow_stdin = "(sleep 0.1; seq 1 5; sleep 0.1; seq 6 1000)"
local scripts = {
  {"errors.lua"}, {"close.lua"}, {"coroutines.lua"}, {"values.lua"}, {"deep.lua"}, {"hooks.lua"},
  {"hook_fields.lua"}, {"limits.lua"}, {"collected_hooks.lua"},
  {"signals.lua", stdin = slow_stdin}, {"exit.lua", args = "plain"}, {"exit.lua", args = "close"},
}

local dir = os.tmpname(); os.remove(dir); assert(os.execute("mkdir -p " .. dir))
local function read(path) local f = io.open(path, "rb"); if not f then return nil end local t = f:read("a"); f:close(); return t end

local function run(cmd, stdin)
  local out, err = dir .. "/out", dir .. "/err"
  local full = string.format("%s %s </dev/null >%s 2>%s", stdin and (stdin .. " |") or "", cmd, out, err)
  if stdin then full = full:gsub("</dev/null ", "") end
  local _, how, code = os.execute(full)
  return {out = read(out), err = read(err), status = (how == "exit" and "" or "signal ") .. tostring(code)}
end

local failures = 0
local function compare(what, plain, profiled)
  for _, field in ipairs{"out", "err", "status"} do
    if plain[field] ~= profiled[field] then
      failures = failures + 1
      io.stderr:write(string.format("FAIL %s [%s]: %s differs\n--- plain\n%s\n--- profiled\n%s\n", what, mode, field,
                                    plain[field], profiled[field]))
    end
  end
end

local function check_report(what, path)
  local text = read(path)
  if not text or #text == 0 then
    failures = failures + 1
    io.stderr:write(string.format("FAIL %s [%s]: no report written to %s\n", what, mode, path))
  end
  os.remove(path)
end

-- lua.c and luaprof prefix their messages with their own argv[0].
local function unprefixed(text, prog)
  return (text:gsub(prog:gsub("%p", "%%%0") .. ": ", "PROGRAM: "))
end

for _, s in ipairs(scripts) do
  local name, args = s[1], s.args or ""
  local what = name .. (args ~= "" and (" " .. args) or "")
  local report = dir .. "/report.txt"
  -- luaprof against lua5.4.
  local plain = run(string.format("%s %s %s", lua, name, args), s.stdin)
  local profiled = run(string.format("%s %s --report %s %s %s", luaprof, luaprof_flags, report, name, args), s.stdin)
  plain.err, profiled.err = unprefixed(plain.err, lua), unprefixed(profiled.err, luaprof)
  compare("luaprof " .. what, plain, profiled)
  check_report("luaprof " .. what, report)
  -- profiler.statprof against the same driver, plain.
  local driver = string.format("%s -e \"package.cpath='%s'\" under_statprof.lua", lua, package.cpath)
  plain = run(string.format("%s plain %s %s %s", driver, report, name, args), s.stdin)
  profiled = run(string.format("%s %s %s %s %s", driver, mode, report, name, args), s.stdin)
  for _, field in ipairs{"out", "err"} do
    plain[field] = plain[field]:gsub("%[C%]: in function 'string%.gsub'", "[C]: in function 'profiler.statprof'")
  end
  compare("statprof " .. what, plain, profiled)
  check_report("statprof " .. what, report)
end
os.execute("rm -rf " .. dir)
print(string.format("%d scripts, %d failures", #scripts, failures))
os.exit(failures == 0 and 0 or 1)
