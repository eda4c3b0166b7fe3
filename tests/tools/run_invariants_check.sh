#!/usr/bin/env bash
# run_invariants_check.sh TPUSIM SCENARIO_DIR: runs every shipped run scenario with
# --check-invariants (the pod's physical invariants after every call) and passes when each exits 0.
# Skipped: hbm_oversubscribed (it must fail before running: its test is RunBinary.ModelTooBigForHbm...)
# resnet50_v4_8192 (8192 chips: minutes of wall time; `tpusim run` checks it on demand) and
# program_* (run.program needs --compiler xla-tpu and libtpu: the XlaTpuRun.Program* tests).
set -u
tpusim="$1"; dir="$2"
status=0
for f in "$dir"/*.textproto; do
  name=$(basename "$f" .textproto)
  case "$name" in hbm_oversubscribed|resnet50_v4_8192|program_*) continue ;; esac
  if ! out=$("$tpusim" run "$f" --check-invariants --format=json 2>&1 >/dev/null); then
    echo "$name: $(printf '%s\n' "$out" | grep -v -i 'systemc\|copyright\|rights reserved' | head -3)"
    status=1
  else
    echo "$name: invariants hold"
  fi
done
exit $status
