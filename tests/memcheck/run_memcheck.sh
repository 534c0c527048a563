#!/usr/bin/env bash
# One torture script under valgrind's memcheck, through profiler.statprof with every mode on at
# once: any memcheck error (invalid read or write, use of uninitialised memory, bad free) fails.
# The script's own exit status is the torture suite's business (some end in an error on purpose).
# usage: run_memcheck.sh LUA BUILD_DIR TORTURE_DIR SCRIPT
set -u
lua=$1 build=$2 dir=$3 script=$4
log=$(mktemp) report=$(mktemp)
trap 'rm -f "$log" "$report"' EXIT
cd "$dir" || exit 2
valgrind -q --error-exitcode=99 --log-file="$log" "$lua" -e "package.cpath='$build/lib/?.so;'..package.cpath" \
  under_statprof.lua all "$report" "$script" >/dev/null 2>&1
code=$?
if [ "$code" = 99 ] || grep -q "ERROR SUMMARY: [1-9]" "$log"; then
  echo "memcheck errors in $script (all modes):"
  cat "$log"
  exit 1
fi
[ -s "$report" ] || { echo "no report written for $script"; exit 1; }
echo "memcheck clean: $script"
