#!/usr/bin/env bash
# trace_devices_check.sh TPUSIM SCENARIO EXPECTED_DEVICES [RUN FLAGS...]
# Runs SCENARIO with --out and the flags, and passes when trace.json holds kernel spans of exactly
# EXPECTED_DEVICES distinct devices (chip processes and core threads) and stats.textproto holds no
# span (the summary only).
set -u
tpusim="$1"; scenario="$2"; want="$3"; shift 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trace_devices.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$tpusim" run "$scenario" --out "$tmp/out" "$@" >/dev/null || exit 1
got=$(grep '"ph": "X"' "$tmp/out/trace.json" | grep -o '"pid": [0-9]*, "tid": [0-9]*' |
      awk '$2 + 0 < 100000' | sort -u | wc -l)
if [ "$got" -ne "$want" ]; then
  echo "trace.json has spans of $got devices, expected $want"; exit 1
fi
if grep -q "^spans" "$tmp/out/stats.textproto"; then
  echo "stats.textproto holds spans"; exit 1
fi
echo "trace.json has spans of $got devices"
