#!/usr/bin/env bash
# run_threads_identical.sh TPUSIM SCENARIO [--set PATH=VALUE ...]: runs `tpusim run SCENARIO
# --out DIR` with the network model on 1, 2 and 3 host threads (run.pod.options.sim_threads;
# each run its own process) and passes when stats.json, stats.textproto, trace.json and
# report.html (but for the scenario's sim_threads it quotes) are byte-identical across them:
# threads change wall time only.
set -u
tpusim="$1"; scenario="$2"; shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/run_threads.XXXXXX")
trap 'rm -rf "$dir"' EXIT
for t in 1 2 3; do
  "$tpusim" run "$scenario" "$@" --set "run.pod.options.sim_threads=$t" --out "$dir/t$t" \
    > "$dir/report$t.txt" 2> "$dir/err$t.txt" || { cat "$dir/err$t.txt"; exit 1; }
done
for t in 2 3; do
  for f in stats.json stats.textproto trace.json; do
    if ! cmp -s "$dir/t1/$f" "$dir/t$t/$f"; then
      echo "$f differs between 1 and $t threads"; exit 1
    fi
  done
  # The report quotes the scenario, whose sim_threads differs.
  if ! cmp -s <(sed 's/sim_threads: [0-9]*//' "$dir/t1/report.html") \
              <(sed 's/sim_threads: [0-9]*//' "$dir/t$t/report.html"); then
    echo "report.html differs between 1 and $t threads"; exit 1
  fi
  cmp -s "$dir/report1.txt" "$dir/report$t.txt" || {
    echo "text reports differ between 1 and $t threads"; exit 1; }
done
echo "1, 2 and 3 threads: identical outputs"
