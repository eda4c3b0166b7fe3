#!/usr/bin/env bash
# compare_runs.sh TPUSIM NEAR FAR: runs `tpusim run --format=json` on two model-parallel
# scenarios (each in its own process) and passes when FAR moved more cross-core bytes over ICI
# than NEAR and its mean step time is longer, printing both figures.
set -u
tpusim="$1"; near="$2"; far="$3"
field() {  # field JSON KEY: the number after "KEY": (the first occurrence)
  sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" <<< "$1" | head -1
}
a=$("$tpusim" run "$near" --format=json 2>/dev/null) || { echo "run $near failed"; exit 1; }
b=$("$tpusim" run "$far" --format=json 2>/dev/null) || { echo "run $far failed"; exit 1; }
ici_a=$(field "$a" cross_core_ici_bytes); ici_b=$(field "$b" cross_core_ici_bytes)
step_a=$(sed -n 's/.*"step_time_ms": {[^}]*"mean": \([0-9.e+-]*\).*/\1/p' <<< "$a")
step_b=$(sed -n 's/.*"step_time_ms": {[^}]*"mean": \([0-9.e+-]*\).*/\1/p' <<< "$b")
echo "near: ICI bytes $ici_a, step $step_a ms; far: ICI bytes $ici_b, step $step_b ms"
[ -n "$ici_a" ] && [ -n "$ici_b" ] && [ -n "$step_a" ] && [ -n "$step_b" ] || {
  echo "a figure is missing"; exit 1; }
awk -v a="$ici_a" -v b="$ici_b" 'BEGIN { exit !(b > a) }' || { echo "FAR has no more ICI bytes"; exit 1; }
awk -v a="$step_a" -v b="$step_b" 'BEGIN { exit !(b > a) }' || { echo "FAR's step is not longer"; exit 1; }
echo "FAR moves more bytes over ICI and takes longer per step"
