#!/usr/bin/env bash
# A reader's memory stays under 16 times its input plus 64 MiB (the host-safety issue's bound),
# measured as profconv's peak resident size while it reads a file and writes it again as
# folded text, for the inputs that cost a reader most per byte: many distinct stacks, many
# distinct functions, and one very deep stack. usage: reader_memory.sh PROFCONV
set -u
profconv=$1
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
status=0
check() {  # check NAME FILE
  local name=$1 file=$2 size peak bound
  size=$(stat -c %s "$file")
  rm -f "$dir/out.folded"
  /usr/bin/time -o "$dir/peak" -f '%M' "$profconv" "$file" --from folded -o "$dir/out.folded" >/dev/null 2>&1
  peak=$(tail -1 "$dir/peak")
  bound=$(( (16 * size + 64 * 1024 * 1024) / 1024 ))
  if ! [[ $peak =~ ^[0-9]+$ ]] || [ ! -s "$dir/out.folded" ]; then
    echo "FAIL $name: profconv did not finish ($peak)"; status=1
  elif (( peak > bound )); then
    echo "FAIL $name: $((size / 1024)) KiB of input took $peak KiB at peak (bound $bound KiB)"; status=1
  else
    echo "ok   $name: $((size / 1024)) KiB of input, $peak KiB at peak (bound $bound KiB)"
  fi
}
# 400,000 distinct stacks of three frames over 1,000 callers.
awk 'BEGIN { for (i = 0; i < 400000; i++) printf "main;caller_%d;leaf_%d 1\n", i % 1000, i }' >"$dir/stacks.folded"
check "400k distinct stacks" "$dir/stacks.folded"
# 1,000,000 distinct functions named as profiles name them.
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "update_%d (game/entities.lua:%d) 1\n", i, i % 5000 }' >"$dir/names.folded"
check "1M distinct functions" "$dir/names.folded"
# 1,000,000 distinct functions with the shortest names: a file's bytes buy the most records.
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "f%06d 1\n", i }' >"$dir/short.folded"
check "1M distinct short names" "$dir/short.folded"
# One stack 1,000,000 frames deep.
awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "%sf%d", (i ? ";" : ""), i % 7; print " 3" }' >"$dir/deep.folded"
check "a stack 1M frames deep" "$dir/deep.folded"
exit $status
