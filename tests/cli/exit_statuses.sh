#!/usr/bin/env bash
# The exit statuses every tool shares (docs/usage.md, bindings/cli/exit_status.hpp): the script's
# own (1 after an error; for profconv and profdiff, 1 when an input cannot be read or
# converted), 124 when a report or file could not be made or written after the run, 125 for a
# bad command line or input, found before anything ran (one line naming the argument; no
# report, and the script never starts), as luaprof, luajitprof, luaprof --lua, asprof, profconv
# and profdiff give them.
#   exit_statuses.sh BUILD_DIR
set -u
bin=$(cd "$1" && pwd)/bin
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
failed=0
# expect NAME STATUS [GREP] -- COMMAND...: the status, and GREP found in the first line of stderr.
expect() {
  local name=$1 want=$2 pattern=$3
  shift 4
  "$@" >"$work/out" 2>"$work/err"
  local got=$?
  if ((got != want)); then
    echo "FAIL $name: status $got, expected $want; stderr: $(head -3 "$work/err")"
    failed=1
  elif [[ -n $pattern ]] && ! head -1 "$work/err" | grep -qF -- "$pattern"; then
    echo "FAIL $name: status $got, but stderr's first line lacks '$pattern': $(head -3 "$work/err")"
    failed=1
  else
    echo "PASS $name: $got"
  fi
}
ran() { [[ -e $work/ran ]] && rm -f "$work/ran"; }

# A script that marks that it ran, then does what its first argument says.
cat >"$work/script.lua" <<'LUA'
io.open(arg[2] .. "/ran", "w"):close()
local x = 0 for i = 1, 2e6 do x = x + i end
if arg[1] == "error" then error("boom") end
if arg[1] == "rmdir" then os.remove(arg[3] .. "/out.folded.d") os.remove(arg[3]) end
if arg[1] == "rmdir-exit" then os.remove(arg[3]) os.exit(7) end
if arg[1] == "exit" then os.exit(7) end
LUA

runners=("$bin/luaprof")
[[ -x $bin/luajitprof ]] && runners+=("$bin/luajitprof")
command -v lua5.3 >/dev/null && runners+=("$bin/luaprof --lua lua5.3")
for runner in "${runners[@]}"; do
  name=${runner##*/}
  read -ra r <<<"$runner"
  rm -f "$work/ran"
  expect "$name: unknown option" 125 "--frobnicate" -- "${r[@]}" --frobnicate "$work/script.lua"
  expect "$name: --hz false" 125 "--hz takes N, got false" -- "${r[@]}" --hz false "$work/script.lua" ok "$work"
  ran && { echo "FAIL $name: the script ran after a bad --hz"; failed=1; }
  expect "$name: missing script" 125 "cannot open $work/missing.lua" -- "${r[@]}" "$work/missing.lua"
  [[ -s $work/out ]] && { echo "FAIL $name: a report for a missing script: $(head -2 "$work/out")"; failed=1; }
  expect "$name: unwritable -o" 125 "-o: cannot write '$work/none/out.folded'" -- \
    "${r[@]}" -o "$work/none/out.folded" "$work/script.lua" ok "$work"
  ran && { echo "FAIL $name: the script ran though -o could not be written"; failed=1; }
  expect "$name: unwritable --report" 125 "--report: cannot write" -- \
    "${r[@]}" --report "$work/none/report.txt" "$work/script.lua" ok "$work"
  expect "$name: a run" 0 "" -- "${r[@]}" "$work/script.lua" ok "$work"
  ran || { echo "FAIL $name: the script did not run"; failed=1; }
  expect "$name: the script's error" 1 "boom" -- "${r[@]}" "$work/script.lua" error "$work"
  expect "$name: the script's os.exit(7)" 7 "" -- "${r[@]}" "$work/script.lua" exit "$work"
  mkdir -p "$work/gone"
  expect "$name: -o lost after the run" 124 "" -- "${r[@]}" -o "$work/gone/out.folded" "$work/script.lua" rmdir "$work" "$work/gone"
  grep -qF "$work/gone/out.folded" "$work/err" || { echo "FAIL $name: no message names the lost file"; failed=1; }
  mkdir -p "$work/gone"
  expect "$name: -o lost after os.exit(7)" 124 "" -- "${r[@]}" -o "$work/gone/out.folded" "$work/script.lua" rmdir-exit "$work" "$work/gone"
  "${r[@]}" --help | grep -q "^exit status: " || { echo "FAIL $name --help says nothing of exit statuses"; failed=1; }
done

if [[ -x $bin/asprof ]]; then
  printf 'void main() {\n  int x = 0;\n  for (int i = 0; i < 100000; i++) x += i;\n  if (arg_count() > 0) { array<int> a; a[3] = x; }\n}\n' >"$work/script.as"
  for option in --calls --gc --interpret-closures "--signal SIGPROF"; do
    # shellcheck disable=SC2086
    expect "asprof: $option" 125 "${option%% *}: " -- "$bin/asprof" $option "$work/script.as"
    "$bin/asprof" --help | grep -qE -- "^  ${option%% *}( |$)" && { echo "FAIL asprof --help lists ${option%% *}"; failed=1; }
  done
  expect "asprof: missing script" 125 "cannot open $work/missing.as" -- "$bin/asprof" "$work/missing.as"
  expect "asprof: unwritable -o" 125 "-o: cannot write" -- "$bin/asprof" -o "$work/none/x.folded" "$work/script.as"
  expect "asprof: a run" 0 "" -- "$bin/asprof" "$work/script.as"
  expect "asprof: the script's exception" 1 "" -- "$bin/asprof" "$work/script.as" fail
fi

"$bin/luaprof" -o "$work/run.folded" "$work/script.lua" ok "$work" >/dev/null
expect "profconv: unknown option" 125 "--frobnicate" -- "$bin/profconv" --frobnicate "$work/run.folded"
expect "profconv: no input" 125 "no input file" -- "$bin/profconv"
expect "profconv: missing input" 125 "$work/missing.folded" -- "$bin/profconv" "$work/missing.folded"
printf 'LispWorks Profiler Tree: x\n0|1|0|1|0|r\n1|x|0|1|0|a\n' >"$work/bad.tree"
expect "profconv: a malformed input" 1 "$work/bad.tree: line 3" -- "$bin/profconv" "$work/bad.tree"
expect "profconv: unknown --to, before the input is read" 125 "--to: " -- "$bin/profconv" "$work/missing.folded" --to nonsense
expect "profconv: unknown --report" 125 "--report: " -- "$bin/profconv" "$work/run.folded" --report nonsense
expect "profconv: unwritable -o" 125 "-o: cannot write" -- "$bin/profconv" "$work/run.folded" -o "$work/none/x.tree"
expect "profconv: a conversion" 0 "" -- "$bin/profconv" "$work/run.folded" -o "$work/run.tree"
expect "profconv: a conversion that cannot be made" 1 "needs the samples in time order" -- \
  "$bin/profconv" "$work/run.tree" --to chrome -o "$work/run.json"
"$bin/profconv" --help | grep -q "^exit status: " || { echo "FAIL profconv --help says nothing of exit statuses"; failed=1; }

expect "profdiff: no inputs" 125 "base is required" -- "$bin/profdiff"
expect "profdiff: missing input" 125 "$work/missing.tree" -- "$bin/profdiff" "$work/missing.tree" "$work/run.tree"
expect "profdiff: unwritable --html" 125 "--html: cannot write" -- "$bin/profdiff" "$work/run.tree" "$work/run.tree" --html "$work/none/d.html"
expect "profdiff: a malformed input" 1 "$work/bad.tree: line 3" -- "$bin/profdiff" "$work/bad.tree" "$work/run.tree"
expect "profdiff: a comparison" 0 "" -- "$bin/profdiff" "$work/run.tree" "$work/run.tree"
expect "profdiff: --help" 0 "" -- "$bin/profdiff" --help
grep -q "^exit status: " "$work/out" || { echo "FAIL profdiff --help says nothing of exit statuses"; failed=1; }
exit $failed
