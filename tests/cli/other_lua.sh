#!/usr/bin/env bash
# luaprof --lua PATH under every Lua interpreter installed (lua5.1 to 5.4, luajit, and any
# given after the build folder): the script sees the `arg` it would see under that interpreter,
# its output, errors (with the interpreter's own traceback) and exit status are its own, the
# report and -o come out as under luaprof, and luaprof's own failures say what went wrong.
#   other_lua.sh BUILD_DIR [INTERPRETER...]
# Exit 77 (skipped) when no interpreter is found.
set -u
build=$(cd "$1" && pwd)
shift
luaprof=$build/bin/luaprof
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0 ran=0
fail() { echo "FAIL $*"; failed=1; }

cat >"$work/script.lua" <<'LUA'
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = os.clock()
local s = 0
while os.clock() - t < 0.3 do s = s + fib(20) end
print("arg", arg[0], arg[1], arg[2], #arg, _VERSION)
if arg[1] == "exit" then io.stdout:flush() os.exit(3) end
if arg[1] == "error" then error("boom") end
LUA

interpreters=(lua5.1 lua5.2 lua5.3 lua5.4 luajit)
for extra in "$@"; do  # a path is made absolute: the runs below change folder
  [[ $extra == */* && -e $extra ]] && extra=$(cd "$(dirname "$extra")" && pwd)/$(basename "$extra")
  interpreters+=("$extra")
done
for lua in "${interpreters[@]}"; do
  command -v "$lua" >/dev/null || continue
  ran=$((ran + 1))
  # A run: the script's own output, the report with the script's function, -o written.
  out=$("$luaprof" --lua "$lua" --hz 1000 -o "$work/run.folded" "$work/script.lua" x y 2>"$work/err")
  status=$?
  expected=$(cd "$work" && "$lua" "$work/script.lua" x y)
  if ((status != 0)); then fail "$lua: status $status: $(head -3 "$work/err")"
  elif [[ $out != "$expected"* ]]; then fail "$lua: the script printed '${out%%$'\n'*}', under $lua '$expected'"
  elif ! grep -qE '^ *[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9-]+ +)?fib \(' <<<"$out"; then fail "$lua: no fib line in the report: $out"
  elif ! grep -q 'fib' "$work/run.folded"; then fail "$lua: -o wrote no stack with fib"
  else echo "PASS $lua: run, report and -o"
  fi
  # os.exit(3) in the script: its status, and the report still comes out.
  out=$("$luaprof" --lua "$lua" "$work/script.lua" exit 2>&1)
  status=$?
  if ((status != 3)) || ! grep -q 'Sample count' <<<"$out"; then fail "$lua: os.exit(3): status $status, output: $out"
  else echo "PASS $lua: os.exit(3)"
  fi
  # An error: the interpreter's message and traceback (under luaprof's name; LuaJIT's main is an
# address), status 1.
  "$luaprof" --lua "$lua" "$work/script.lua" error >/dev/null 2>"$work/err"
  status=$?
  "$lua" "$work/script.lua" error >/dev/null 2>"$work/want"
  if ((status != 1)) || ! diff <(sed "s|^$luaprof:|LUA:|; s|at 0x[0-9a-f]*|at ADDRESS|" "$work/err") \
    <(sed "s|^$lua:|LUA:|; s|at 0x[0-9a-f]*|at ADDRESS|" "$work/want") >/dev/null; then
    fail "$lua: error: status $status; got:"; cat "$work/err"; echo "wanted:"; cat "$work/want"
  else echo "PASS $lua: error and traceback"
  fi
done

# luaprof's own failures: a bad option before anything runs, an interpreter that is not there,
# a luaprof with no modules beside it.
if ((ran > 0)); then
  lua=$(for l in "${interpreters[@]}"; do command -v "$l" >/dev/null && { echo "$l"; break; }; done)
  "$luaprof" --lua "$lua" --hz 0 "$work/script.lua" >/dev/null 2>"$work/err"
  status=$?
  ((status == 125)) && grep -q -- "--hz" "$work/err" && echo "PASS bad --hz refused first" || fail "--hz 0: status $status: $(cat "$work/err")"
  "$luaprof" --lua "$work/no-such-lua" "$work/script.lua" >/dev/null 2>"$work/err"
  status=$?
  ((status == 127)) && grep -q 'cannot run it' "$work/err" && echo "PASS missing interpreter: 127" || fail "missing interpreter: status $status: $(cat "$work/err")"
  mkdir -p "$work/alone/bin" && cp "$luaprof" "$work/alone/bin/"
  "$work/alone/bin/luaprof" --lua "$lua" "$work/script.lua" >/dev/null 2>"$work/err"
  status=$?
  ((status == 125)) && grep -q "no folder of Lua modules" "$work/err" && echo "PASS no modules beside luaprof" || fail "no modules: status $status: $(cat "$work/err")"
fi
((ran > 0)) || { echo "no Lua interpreter found"; exit 77; }
exit $failed
