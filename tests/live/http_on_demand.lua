-- The profile server's HTTP library (and the libssl, libcrypto and brotli cpp-httplib brings) is
-- loaded by the first serve, not by require "profiler" nor by a run that does not serve: a
-- program that never serves pays none of it. Prints "ok: ..." or raises.
local function mapped(name)
  for line in io.lines("/proc/self/maps") do
    if line:find(name, 1, true) then return true end
  end
  return false
end
local function none(when)
  for _, lib in ipairs{"libscriptprof_httplib", "libcpp-httplib", "libssl", "libcrypto", "libbrotli"} do
    assert(not mapped(lib), lib .. " is loaded " .. when)
  end
end
local profiler = require "profiler"
none("once the module is loaded")
profiler.statprof(function() local x = 0 for i = 1, 1e6 do x = x + i % 7 end return x end, {hz = 1000, display = false})
none("after a run that did not serve")
local address = assert(profiler.serve{address = "127.0.0.1:0"})
assert(mapped("libscriptprof_httplib") and mapped("libcpp-httplib"), "serving at " .. address .. " without its HTTP library")
profiler.stop_serving()
print("ok: " .. _VERSION .. " loads the HTTP library at its first serve (" .. address .. ")")
