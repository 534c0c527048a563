-- The HTML viewer opens in headless Chromium with no console error: the flame graph shows the
-- frames and a name such as "<script>" as text; the function table lists the functions with
-- their shares; #function=NAME opens one function's callers and callees. A screenshot of that
-- view stays in the build's tests directory (html_viewer.png). Skipped (exit 77) without Chromium.
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
local console = io.open(dir .. "/console.txt"):read("*a")
H.check(dom:find('class="f"', 1, true) ~= nil, "frames were drawn:\n%s", dom:sub(1, 2000))
H.check(dom:find("visible_frame (", 1, true) ~= nil, "the frame visible_frame is on the page")
H.check(dom:find("&lt;img src=x", 1, true) ~= nil, "the markup name is shown as text")
H.check(not dom:find("<title>pwned", 1, true) and not dom:find("<img src=\"x\"", 1, true), "the markup name did not run")
H.check(not console:find("Uncaught", 1, true) and not console:find("CONSOLE", 1, true),
        "no console message:\n%s", console:sub(1, 2000))

-- The function table and one function's callers and callees, opened by the link's #function=.
local dom2, status2 = H.run(string.format("env -u LD_PRELOAD -u ASAN_OPTIONS timeout 120 %s %s --dump-dom 'file://%s/fg.html#function=visible_frame' 2>/dev/null",
                                          chromium, flags, dir))
H.check(status2 == 0, "chromium exited with %s", tostring(status2))
H.check(dom2:find('<table id="functions">', 1, true) ~= nil, "the function table is on the page")
local total = dom2:match('<h3 id="sandwich%-function">visible_frame %([^)]*%): total [%d.]+ s %(([%d.]+)%%%)')
H.check(total and tonumber(total) > 90, "visible_frame's callers and callees opened, nearly all the time under it: %s",
        tostring(total))
H.check(dom2:find("<h3>callers of visible_frame (", 1, true) and dom2:find("main chunk (", 1, true),
        "its caller, the main chunk, is listed")
H.check(dom2:find("&lt;img src=x", 1, true) and not dom2:find("<img src=\"x\"", 1, true), "its callee is text")
-- A screenshot of that view, kept in the build's tests directory for a person to look at.
local shot_path = (os.getenv("SCRIPTPROF_TEST_OUTPUT") or dir) .. "/html_viewer.png"
os.remove(shot_path)
local _, shot = H.run(string.format("env -u LD_PRELOAD -u ASAN_OPTIONS timeout 120 %s %s --window-size=1200,700 --screenshot=%s 'file://%s/fg.html#function=visible_frame' 2>/dev/null",
                                    chromium, flags, shot_path, dir))
local png = io.open(shot_path, "rb")
H.check(shot == 0 and png and png:read(8) == "\137PNG\r\n\26\n", "a screenshot was taken")
if png then png:close() end
-- profdiff's differential page paints by time, not share: `faster` went from 50 to 40 ms while
-- the rest shrank more, so its share grew (0.50 to 0.67); it is blue (faster), `slower` (new)
-- is red. Painted by share, `faster` was red.
local function write(path, text) local w = io.open(path, "w"); w:write(text); w:close() end
write(dir .. "/base.folded", "# scriptprof period_ns=1000000 samples=100 total_seconds=0.1 gc_seconds=0 clock=cpu\n" ..
      "main;faster 50\nmain;other 50\n")
write(dir .. "/new.folded", "# scriptprof period_ns=1000000 samples=60 total_seconds=0.06 gc_seconds=0 clock=cpu\n" ..
      "main;faster 40\nmain;other 10\nmain;slower 10\n")
local profdiff = H.luaprof:gsub("luaprof$", "profdiff")
local diff_out, diff_status = H.run(string.format("%s %s/base.folded %s/new.folded --html %s/diff.html", profdiff, dir, dir, dir))
H.check(diff_status == 0, "profdiff wrote the page: %s", diff_out)
local dom3, status3 = H.run(string.format("env -u LD_PRELOAD -u ASAN_OPTIONS timeout 120 %s %s --dump-dom file://%s/diff.html 2>/dev/null",
                                          chromium, flags, dir))
H.check(status3 == 0, "chromium exited with %s", tostring(status3))
local function colour_of(name)
  for tag, text in dom3:gmatch('(<div class="f"[^>]*>)([^<]*)</div>') do
    if text == name then
      local r, g, b = tag:match("background: rgb%((%d+), (%d+), (%d+)%)")
      return tonumber(r), tonumber(g), tonumber(b)
    end
  end
end
local r, _, b = colour_of("faster")
H.check(r and b > r, "faster is blue: rgb %s, %s", tostring(r), tostring(b))
r, _, b = colour_of("slower")
H.check(r and r > b, "slower is red: rgb %s, %s", tostring(r), tostring(b))
os.execute("rm -rf " .. dir)
H.done()
