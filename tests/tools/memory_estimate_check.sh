#!/usr/bin/env bash
# memory_estimate_check.sh TPUSIM SCENARIO_DIR
# Runs every run scenario of SCENARIO_DIR (each in its own process, with --out, the larger
# footprint) and passes when each run's memory estimate (sim/memory_estimate.h, printed on
# stderr next to the measured peak RSS) is within 2x of that peak, either way, and --out wrote
# at most 100 MB. A scenario that
# fails by design (exit 1 with RESOURCE_EXHAUSTED before its step runs) is skipped, and so are
# program_* (run.program needs --compiler xla-tpu and libtpu: the XlaTpuRun.Program* tests).
set -u
tpusim="$1"; dir="$2"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/memory_estimate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0; checked=0
for s in "$dir"/*.textproto; do
  name=$(basename "$s" .textproto)
  case "$name" in program_*) continue ;; esac
  "$tpusim" run "$s" --out "$tmp/$name" >/dev/null 2>"$tmp/$name.err"
  rc=$?
  if [ $rc -ne 0 ]; then
    if grep -q "RESOURCE_EXHAUSTED: program" "$tmp/$name.err"; then
      echo "$name: skipped (does not fit in HBM, by design)"; continue
    fi
    echo "$name: exit $rc"; cat "$tmp/$name.err"; status=1; continue
  fi
  line=$(grep -o "peak RSS [0-9]* MiB (estimated [0-9]* MiB)" "$tmp/$name.err")
  rss=$(echo "$line" | awk '{print $3}'); est=$(echo "$line" | awk '{print $6}')
  if [ -z "$rss" ] || [ -z "$est" ]; then
    echo "$name: no memory line on stderr"; cat "$tmp/$name.err"; status=1; continue
  fi
  checked=$((checked + 1))
  written=$(du -sb "$tmp/$name" | cut -f1)
  if [ $((est * 2)) -lt "$rss" ] || [ $((rss * 2)) -lt "$est" ]; then
    echo "$name: estimate $est MiB is not within 2x of the peak RSS $rss MiB"; status=1
  elif [ "$written" -gt 100000000 ]; then
    echo "$name: --out wrote $written bytes, more than 100 MB"; status=1
  else
    echo "$name: estimate $est MiB, peak RSS $rss MiB, --out wrote $written bytes"
  fi
done
[ $checked -gt 0 ] || { echo "no scenario checked"; status=1; }
exit $status
