-- The torture suite under one profiling mode: `lua5.4 run_torture.lua MODE [luajit]`. Every
-- script runs plain and profiled, through luaprof (against lua5.4) and through profiler.statprof
-- (against the same driver without the profiler); stdout, stderr and the exit status must be
-- identical, and the report must have been written even when the script ends in an error or
-- os.exit. With `luajit`, the scripts that are Lua 5.1 run the same way under luajit, luajitprof
-- and the LuaJIT build of the module (environment LUAJIT, LUAJITPROF, LUAJIT_CPATH).
local mode = assert(arg[1], "usage: run_torture.lua MODE [luajit]")
local on_luajit = arg[2] == "luajit"
local lua, luaprof, cpath
if on_luajit then
  lua, luaprof, cpath = assert(os.getenv("LUAJIT")), assert(os.getenv("LUAJITPROF")), assert(os.getenv("LUAJIT_CPATH"))
else
  lua, luaprof, cpath = assert(os.getenv("LUA54")), assert(os.getenv("LUAPROF")), package.cpath
end
local luaprof_flags = ({
  cpu10k = "--hz 10000",
  wall10k = "--hz 10000 --clock wall",
  calls = "--calls",
  gc = "--gc",
  alloc = "--alloc 4096",
  all = "--hz 10000 --calls --gc --alloc 4096 --full-stacks",
})[mode]
assert(luaprof_flags, "unknown mode " .. mode)

-- Each script, with its arguments, what is fed to its standard input, and whether it is Lua 5.1
-- (the others use <close>, //, table.pack/unpack, coroutine.close or 5.4's hook fields).
local slow_stdin = "(sleep 0.1; seq 1 5; sleep 0.1; seq 6 1000)"
local all_scripts = {
  {"errors.lua"}, {"close.lua"}, {"coroutines.lua"}, {"values.lua"}, {"deep.lua", lua51 = true},
  {"hooks.lua", lua51 = true}, {"hook_fields.lua"}, {"limits.lua", lua51 = true},
  {"collected_hooks.lua", lua51 = true}, {"signals.lua", stdin = slow_stdin, lua51 = true},
  {"exit.lua", args = "plain"}, {"exit.lua", args = "close"},
}
local scripts = {}
for _, s in ipairs(all_scripts) do
  if s.lua51 or not on_luajit then scripts[#scripts + 1] = s end
end

-- Counting calls turns LuaJIT's compiler off for the run (compiled code fires no hooks), as the
-- report says: the plain run to compare with is the interpreter's, luajit -joff.
local plain_lua = lua
if on_luajit and luaprof_flags:find("--calls", 1, true) then plain_lua = lua .. " -joff" end

local dir = os.tmpname(); os.remove(dir); assert(os.execute("mkdir -p " .. dir))
local function read(path) local f = io.open(path, "rb"); if not f then return nil end local t = f:read("a"); f:close(); return t end

local function run(cmd, stdin)
  local out, err = dir .. "/out", dir .. "/err"
  local full = string.format("%s %s </dev/null >%s 2>%s", stdin and (stdin .. " |") or "", cmd, out, err)
  if stdin then full = full:gsub("</dev/null ", "") end
  local _, how, code = os.execute(full)
  return {out = read(out), err = read(err), status = (how == "exit" and "" or "signal ") .. tostring(code)}
end

-- Addresses (`function: 0x...`) differ from run to run, profiled or not.
local function unaddressed(text) return text and (text:gsub("0x%x+", "0x?")) end

local failures = 0
local function compare(what, plain, profiled)
  for _, field in ipairs{"out", "err", "status"} do
    if unaddressed(plain[field]) ~= unaddressed(profiled[field]) then
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
  local plain = run(string.format("%s %s %s", plain_lua, name, args), s.stdin)
  local profiled = run(string.format("%s %s --report %s %s %s", luaprof, luaprof_flags, report, name, args), s.stdin)
  plain.err, profiled.err = unprefixed(plain.err, lua), unprefixed(profiled.err, luaprof)
  compare("luaprof " .. what, plain, profiled)
  check_report("luaprof " .. what, report)
  -- profiler.statprof against the same driver, plain.
  local driver = "%s -e \"package.cpath='" .. cpath .. "'\" under_statprof.lua"
  plain = run(string.format(driver, plain_lua) .. string.format(" plain %s %s %s", report, name, args), s.stdin)
  profiled = run(string.format(driver, lua) .. string.format(" %s %s %s %s", mode, report, name, args), s.stdin)
  for _, field in ipairs{"out", "err"} do
    plain[field] = plain[field]:gsub("%[C%]: in function '[%w.]*gsub'", "[C]: in function 'profiler.statprof'")
  end
  compare("statprof " .. what, plain, profiled)
  check_report("statprof " .. what, report)
end
os.execute("rm -rf " .. dir)
print(string.format("%d scripts, %d failures", #scripts, failures))
os.exit(failures == 0 and 0 or 1)
