#!/usr/bin/env bash
# sweep_out.sh TPUSIM SCENARIO: `tpusim sweep SCENARIO --out DIR` (issue 21) writes each point's
# stats.json, stats.textproto, trace.json and report.html in DIR/point-K/ and DIR/compare.html,
# which links each point's report and holds one breakdown row per point; a second sweep into the
# same (now non-empty) DIR exits 1 before running anything and leaves DIR as it was.
set -u
tpusim="$1"; scenario="$2"
dir=$(mktemp -d "${TMPDIR:-/tmp}/sweep_out.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$tpusim" sweep "$scenario" --jobs 2 --set run.steps_per_run=1,2 --out "$dir/s" > "$dir/out.txt" ||
  { cat "$dir/out.txt"; echo "sweep failed"; exit 1; }
for k in 0 1; do
  for f in stats.json stats.textproto trace.json report.html; do
    [ -s "$dir/s/point-$k/$f" ] || { echo "missing point-$k/$f"; exit 1; }
  done
done
html="$dir/s/compare.html"
[ -s "$html" ] || { echo "missing compare.html"; exit 1; }
for want in 'href="point-0/report.html"' 'href="point-1/report.html"' 'id="breakdown"' \
            'id="per-chip"' 'id="hbm"' 'id="links"'; do
  grep -qF "$want" "$html" || { echo "compare.html lacks $want"; exit 1; }
done
rows=$(grep -o 'class="seg" data-run="[0-9]*"' "$html" | sort -u | wc -l)
[ "$rows" -eq 2 ] || { echo "want breakdown bars for 2 runs, got $rows"; exit 1; }
if grep -qE '(src|href)="https?:' "$html"; then echo "compare.html loads from the network"; exit 1; fi
before=$(ls -R "$dir/s" | md5sum)
"$tpusim" sweep "$scenario" --set run.steps_per_run=1,2 --out "$dir/s" > "$dir/out2.txt" 2> "$dir/err2.txt"
code=$?
[ "$code" -eq 1 ] || { echo "second sweep into a non-empty DIR exited $code, want 1"; exit 1; }
grep -qF "exists and is not empty" "$dir/err2.txt" || { cat "$dir/err2.txt"; exit 1; }
[ ! -s "$dir/out2.txt" ] || { echo "second sweep printed rows"; exit 1; }
[ "$(ls -R "$dir/s" | md5sum)" = "$before" ] || { echo "second sweep changed DIR"; exit 1; }
echo "sweep --out ok"
