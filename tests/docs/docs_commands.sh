#!/usr/bin/env bash
# The front door runs as written: every command in the ```sh blocks of README.md and
# docs/usage.md, from the repository root after ./run.sh demo (./run.sh itself excepted: this
# test runs inside it), exits 0; and the README's sample report is luaprof's: its self
# percentages add up to 100 and it names the functions a run of the sample names.
#   docs_commands.sh BUILD_DIR SOURCE_DIR
# The commands run in a scratch folder that stands in for the root (build/ and samples/ linked
# there), so the files they write do not land in the checkout.
set -u
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
ln -s "$build" "$root/build"
ln -s "$src/samples" "$root/samples"
failed=0 ran=0

# The commands of a file's ```sh blocks, one per line (a line ending in \ joins the next).
commands() {
  awk '/^```sh$/ {inside = 1; next} /^```/ {inside = 0} inside {
         if (sub(/\\$/, "")) { pending = pending $0; next }
         print pending $0; pending = "" }' "$1"
}

for doc in README.md docs/usage.md; do
  while IFS= read -r line; do
    [[ -z ${line// /} || $line == \#* || $line == ./run.sh* ]] && continue
    tool=${line%% *}
    if [[ $tool == build/bin/* && ! -x $build/bin/${tool#build/bin/} ]]; then
      echo "SKIP $doc: $tool is not built here"; continue
    fi
    ran=$((ran + 1))
    if (cd "$root" && bash -c "$line" >"$root/out" 2>&1 </dev/null); then
      echo "PASS $doc: $line"
    else
      echo "FAIL $doc: $line"; sed 's/^/    /' "$root/out" | head -8; failed=1
    fi
  done < <(commands "$src/$doc")
done
((ran >= 8)) || { echo "FAIL: only $ran commands found in the docs"; failed=1; }

# The README's sample report: the block that opens with the report's header.
report=$(sed -n '/^%     cumulative/,/^Total time/p' "$src/README.md")
if [[ -z $report ]]; then
  echo "FAIL README.md: no sample report found"; failed=1
else
  sum=$(awk '/^ *[0-9.]+ +[0-9.]+ +[0-9.]+  / {s += $1} END {printf "%.2f", s}' <<<"$report")
  awk -v s="$sum" 'BEGIN {exit !(s >= 99.95 && s <= 100.05)}' &&
    echo "PASS README.md: the sample report's self percentages add up ($sum)" ||
    { echo "FAIL README.md: the sample report's self percentages add up to $sum"; failed=1; }
  names() { sed -n 's/^ *[0-9.][0-9.]* *[0-9.][0-9.]* *[0-9.][0-9.]*  //p' | sort -u; }
  readme_names=$(names <<<"$report")
  seen=""  # the names of three runs (a function with little time can miss one run's ticks)
  for _ in 1 2 3; do seen+=$'\n'$(cd "$root" && build/bin/luaprof --hz 1000 samples/quickstart/work.lua | names); done
  missing=$(comm -23 <(echo "$readme_names") <(echo "$seen" | sort -u | sed '/^$/d'))
  [[ -z $missing ]] && echo "PASS README.md: the sample report names what a run names" ||
    { echo "FAIL README.md: the sample report names what no run does: $missing"; failed=1; }
fi
exit $failed
