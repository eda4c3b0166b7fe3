#!/usr/bin/env bash
# sweep_slices_differ.sh TPUSIM SCENARIO: `tpusim sweep SCENARIO --set cluster.slice=v4-8,v4-16
# --format=csv` (issue 21) gives a header and two rows that differ: 4 chips and 4 replicas, then
# 8 and 8, and different figures (step time, examples/s), so the pod followed cluster.slice.
set -u
tpusim="$1"; scenario="$2"
out=$("$tpusim" sweep "$scenario" --jobs 2 --format=csv --set cluster.slice=v4-8,v4-16) || {
  echo "sweep failed"; exit 1; }
echo "$out"
lines=$(printf '%s\n' "$out" | wc -l)
[ "$lines" -eq 3 ] || { echo "want a header and 2 rows, got $lines lines"; exit 1; }
row0=$(printf '%s\n' "$out" | sed -n 2p); row1=$(printf '%s\n' "$out" | sed -n 3p)
case "$row0" in 0,\"cluster.slice=v4-8\",4,4,*) ;; *) echo "row 0 is not 4 chips, 4 replicas"; exit 1 ;; esac
case "$row1" in 1,\"cluster.slice=v4-16\",8,8,*) ;; *) echo "row 1 is not 8 chips, 8 replicas"; exit 1 ;; esac
# The figures after chips, replicas and batch: step_ms and examples_per_s differ.
f0=$(printf '%s\n' "$row0" | cut -d, -f6-7); f1=$(printf '%s\n' "$row1" | cut -d, -f6-7)
[ "$f0" != "$f1" ] || { echo "the two points have the same step time and throughput: $f0"; exit 1; }
echo "two different rows"
