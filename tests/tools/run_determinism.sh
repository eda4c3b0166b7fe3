#!/usr/bin/env bash
# run_determinism.sh TPUSIM SCENARIO GOLDEN: runs `tpusim run SCENARIO --out DIR` twice (each its
# own process: SystemC elaborates once per process) and passes when stats.json, stats.textproto,
# trace.json and report.html are byte-identical between the runs and stats.json equals GOLDEN.
# UPDATE_GOLDEN=1 rewrites GOLDEN.
set -u
tpusim="$1"; scenario="$2"; golden="$3"
dir=$(mktemp -d "${TMPDIR:-/tmp}/run_determinism.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for i in 1 2; do
  "$tpusim" run "$scenario" --out "$dir/run$i" > "$dir/report$i.txt" 2> "$dir/err$i.txt" || {
    cat "$dir/err$i.txt"; exit 1; }
done
for f in stats.json stats.textproto trace.json report.html; do
  if ! cmp -s "$dir/run1/$f" "$dir/run2/$f"; then
    echo "$f differs between two runs"; exit 1
  fi
done
cmp -s "$dir/report1.txt" "$dir/report2.txt" || { echo "text reports differ"; exit 1; }
if [ "${UPDATE_GOLDEN:-0}" = "1" ]; then cp "$dir/run1/stats.json" "$golden"; fi
if ! cmp -s "$dir/run1/stats.json" "$golden"; then
  echo "stats.json differs from $golden:"; diff "$golden" "$dir/run1/stats.json"; exit 1
fi
echo "2 runs identical and equal to the golden stats"
