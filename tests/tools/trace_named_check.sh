#!/usr/bin/env bash
# trace_named_check.sh TPUSIM SCENARIO STEPS [RUN FLAGS...]: runs SCENARIO with --out and checks
# its trace.json with trace_check.py (named tracks, a step track of STEPS device calls, kernel
# slices with FLOPs and bytes, collectives start to done, link counters over time).
set -u
tpusim="$1"; scenario="$2"; steps="$3"; shift 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/trace_named.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$tpusim" run "$scenario" --out "$tmp/out" "$@" >/dev/null || exit 1
python3 "$(dirname "$0")/trace_check.py" "$tmp/out/trace.json" --steps "$steps"
