-- The HTML flame graph opens in headless Chromium with no console error, shows the frames,
-- and shows a name such as "<script>" as text. Skipped (exit 77) where Chromium is absent.
local H = dofile("harness.lua")
local chromium
for _, c in ipairs({"chromium", "chromium-browser", "google-chrome"}) do
  local _, s = H.run("command -v " .. c)
  if s == 0 then chromium = c break end
end
if not chromium then print("skipped: Chromium is not installed (apt-get install chromium)"); os.exit(77) end

local dir = os.tmpname(); os.remove(dir); os.execute("mkdir -p " .. dir)
local script = dir .. "/s.lua"
local f = io.open(script, "w")
-- A function whose name is markup: it must be shown, never run.
f:write([[
local t = {}
t["<img src=x onerror=\"document.title='pwned'\">"] = function() local x = 0 for i = 1, 2e7 do x = x + i end return x end
local function visible_frame() local r = t["<img src=x onerror=\"document.title='pwned'\">"](); return r end
print(visible_frame())
]])
f:close()
local out, status = H.run(string.format("%s --hz 1000 -o %s/fg.html %s", H.luaprof, dir, script))
H.check(status == 0, "luaprof wrote the page: %s", out)
local flags = "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking " ..
              "--disable-component-update --disable-sync --user-data-dir=" .. dir .. "/profile"
-- The page draws synchronously at load, so --dump-dom sees the frames; `timeout` keeps a
-- wedged browser from hanging the suite.
-- The browser must not inherit the ASan runtime preloaded for the sanitizer build.
local dom, browser_status = H.run(string.format("env -u LD_PRELOAD -u ASAN_OPTIONS timeout 120 %s %s --enable-logging=stderr --v=0 --dump-dom file://%s/fg.html 2>%s/console.txt",
                                                chromium, flags, dir, dir))
H.check(browser_status == 0, "chromium exited with %s", tostring(browser_status))
local console = io.open(dir .. "/console.txt"):read("a")
H.check(dom:find('class="f"', 1, true) ~= nil, "frames were drawn:\n%s", dom:sub(1, 2000))
H.check(dom:find("visible_frame (", 1, true) ~= nil, "the frame visible_frame is on the page")
H.check(dom:find("&lt;img src=x", 1, true) ~= nil, "the markup name is shown as text")
H.check(not dom:find("<title>pwned", 1, true) and not dom:find("<img src=\"x\"", 1, true), "the markup name did not run")
H.check(not console:find("Uncaught", 1, true) and not console:find("CONSOLE", 1, true),
        "no console message:\n%s", console:sub(1, 2000))
os.execute("rm -rf " .. dir)
H.done()
