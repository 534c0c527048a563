#!/usr/bin/env bash
# Every tool built answers --version with one line, exit status 0: its name, "(scriptprof)", the
# project's version, and for a runner the runtime it was built for.
#   versions.sh VERSION TOOL=RUNTIME...     (RUNTIME empty: a tool that runs no script)
set -u
version=$1
shift
failed=0
for spec in "$@"; do
  tool=${spec%%=*} runtime=${spec#*=}
  name=$(basename "$tool")
  out=$("$tool" --version 2>&1)
  status=$?
  want="$name (scriptprof) $version${runtime:+, $runtime}"
  if [[ $status -ne 0 || $out != "$want"* || $(printf '%s\n' "$out" | wc -l) -ne 1 ]]; then
    echo "FAIL $name --version: status $status, printed '$out', expected '$want...'"
    failed=1
  else
    echo "PASS $out"
  fi
done
exit $failed
