#!/usr/bin/env bash
# Runs every fuzz target with coverage of the library for SECONDS each, two at a time, on a copy
# of the seed corpus (tests/fuzz/corpus stays as committed), and prints each target's coverage.
#   tests/fuzz/run_fuzzers.sh BUILD_DIR [SECONDS]     (BUILD_DIR configured with -DSCRIPTPROF_FUZZ=ON)
# Exit status 1 when a target found a crash, a leak or an abort; its input is left in BUILD_DIR/fuzz-findings.
set -u
build=$(cd "$1" && pwd)
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
findings=$build/fuzz-findings
mkdir -p "$findings"
export UBSAN_OPTIONS="suppressions=$here/ubsan.supp:print_stacktrace=1:halt_on_error=1"
run() {  # run TARGET: fuzzes it on a copy of its seeds (every format's for the round trip)
  local t=$1 corpus=$work/$1
  mkdir -p "$corpus"
  if [[ $t == roundtrip ]]; then cp -n "$here"/corpus/*/* "$corpus"/; else cp "$here/corpus/$t"/* "$corpus"/; fi
  (cd "$findings" && "$build/bin/fuzz_$t" "$corpus" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      >"$work/$t.log" 2>&1)
  local rc=$?
  local cov; cov=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$work/$t.log" | tail -1 | grep -o 'cov: [0-9]*' || true)
  if ((rc != 0)); then
    echo "FAIL fuzz_$t: exit $rc; $(grep -m1 -E 'ERROR|runtime error|SUMMARY' "$work/$t.log")"
    # What a CI log must carry to reproduce a crash found there: its stack and its input.
    grep -E '^ *#[0-9]+ 0x' "$work/$t.log" | grep -v -E 'fuzzer::|__sanitizer|libc\.so|libc_start|_start ' |
      sed 's/ (BuildId: [0-9a-f]*)//' | head -20
    local input; input=$(grep -o -E "(crash|leak|oom|timeout)-[0-9a-f]+" "$work/$t.log" | tail -1)
    if [[ -n $input && -f $findings/$input ]]; then
      echo "the input ($findings/$input, $(stat -c %s "$findings/$input") bytes), base64:"
      head -c 4096 "$findings/$input" | base64
    fi
    return 1
  fi
  echo "PASS fuzz_$t: ${seconds} s, ${cov:-cov: ?} edges of the library and driver"
}
failed=0
targets=(lispworks folded speedscope sampler lms roundtrip)
for ((i = 0; i < ${#targets[@]}; i += 2)); do  # two at a time, each one's lines printed whole
  run "${targets[i]}" >"$work/a.out" & a=$!
  if ((i + 1 < ${#targets[@]})); then run "${targets[i + 1]}" >"$work/b.out" & b=$!; fi
  wait $a || failed=$((failed + 1))
  cat "$work/a.out"
  if ((i + 1 < ${#targets[@]})); then wait $b || failed=$((failed + 1)); cat "$work/b.out"; fi
done
echo "fuzzing: $((${#targets[@]} - failed)) passed, $failed failed"
((failed == 0))
