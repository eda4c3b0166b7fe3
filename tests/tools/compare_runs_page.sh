#!/usr/bin/env bash
# compare_runs_page.sh TPUSIM SCENARIO: two `tpusim run --out` of SCENARIO (steps_per_run 1 and
# 2), then `tpusim compare A B --out page.html` (issue 21): the text has a header and a row per
# run with the runs' own chips and replicas; the page links both reports relative to itself and
# has breakdown bars for both runs; compare's --out naming a directory exits 1 before reading.
set -u
tpusim="$1"; scenario="$2"
dir=$(mktemp -d "${TMPDIR:-/tmp}/compare_runs.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$tpusim" run "$scenario" --out "$dir/a" > /dev/null 2>&1 || { echo "run a failed"; exit 1; }
"$tpusim" run "$scenario" --set run.steps_per_run=2 --out "$dir/b" > /dev/null 2>&1 ||
  { echo "run b failed"; exit 1; }
mkdir "$dir/page"
out=$(cd "$dir" && "$tpusim" compare a b/stats.json --out page/compare.html) ||
  { echo "compare failed"; exit 1; }
echo "$out"
printf '%s\n' "$out" | grep -q '^  #  run  ' || { echo "no header row"; exit 1; }
printf '%s\n' "$out" | grep -q '^  0  a      *4        8        32 ' || { echo "bad row 0"; exit 1; }
printf '%s\n' "$out" | grep -q '^  1  b/stats.json  *4        8        32 ' || { echo "bad row 1"; exit 1; }
html="$dir/page/compare.html"
grep -qF 'href="../a/report.html"' "$html" || { echo "no link to a's report"; exit 1; }
grep -qF 'href="../b/report.html"' "$html" || { echo "no link to b's report"; exit 1; }
rows=$(grep -o 'class="seg" data-run="[0-9]*"' "$html" | sort -u | wc -l)
[ "$rows" -eq 2 ] || { echo "want breakdown bars for 2 runs, got $rows"; exit 1; }
"$tpusim" compare "$dir/a" "$dir/b" --out "$dir/page" > "$dir/o" 2> "$dir/e"
[ $? -eq 1 ] && grep -qF "not a directory" "$dir/e" && [ ! -s "$dir/o" ] ||
  { cat "$dir/e"; echo "--out DIR should exit 1 before printing"; exit 1; }
echo "compare ok"
