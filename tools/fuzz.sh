#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang++, ASan + UBSan) and runs them.
#
#   tools/fuzz.sh                    every target, 60 s each
#   tools/fuzz.sh program 600        one target for 10 minutes
#   tools/fuzz.sh all 20             every target, 20 s each (what tools/test.sh runs)
#
# Targets: scenario, tfrecord, example, program (tests/fuzz/README.md). Each run starts from
# the seeds in the tree (tests/fuzz/corpus/<target>/, plus scenarios/*.textproto for the
# scenario target) and the corpus earlier runs grew under build/fuzz/fuzz-work/<target>/corpus;
# nothing is written into the source tree. A crash, sanitizer report, leak, timeout (10 s) or
# oversized allocation (2 GB) stops that target: its input is saved as
# build/fuzz/fuzz-work/<target>/crash-*, the log is printed, and the script exits 1 after
# running the remaining targets. Prints the executions each target reached.
# Extra libFuzzer flags can be passed in TPUSIM_FUZZ_FLAGS, e.g. "-fork=1 -ignore_crashes=1"
# to go on after a crash (the run still counts as failed) or "-runs=1000000" to stop there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

all_targets=(scenario tfrecord example program)
target="${1:-all}"
seconds="${2:-60}"
if [ "$target" = "all" ]; then
  targets=("${all_targets[@]}")
elif [[ " ${all_targets[*]} " == *" $target "* ]]; then
  targets=("$target")
else
  echo "usage: tools/fuzz.sh [all|${all_targets[*]// /|}] [SECONDS]" >&2
  exit 2
fi
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz: SECONDS must be a positive integer, got '$seconds'" >&2
  exit 2
fi

tools/setup.sh >/dev/null
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc 2>/dev/null || echo 2)"

# Per-target input size cap (bytes): a few times the largest seed.
declare -A max_len=([scenario]=4096 [tfrecord]=2048 [example]=1024 [program]=8192)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

summary=()
failed=0
for t in "${targets[@]}"; do
  work="build/fuzz/fuzz-work/$t"
  rm -rf "$work/seeds" "$work/log"
  mkdir -p "$work/corpus" "$work/seeds"
  cp tests/fuzz/corpus/"$t"/* "$work/seeds/"
  if [ "$t" = "scenario" ]; then cp scenarios/*.textproto "$work/seeds/"; fi
  dict=()
  if [ -f "tests/fuzz/dicts/$t.dict" ]; then dict=("-dict=tests/fuzz/dicts/$t.dict"); fi
  echo "fuzz: $t for ${seconds} s"
  touch "$work/started"
  rc=0
  # shellcheck disable=SC2086  # TPUSIM_FUZZ_FLAGS is a list of flags
  "build/fuzz/tests/fuzz/${t}_fuzzer" "$work/corpus" "$work/seeds" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$t]}" \
      -print_final_stats=1 -artifact_prefix="$work/" "${dict[@]}" ${TPUSIM_FUZZ_FLAGS:-} \
      >"$work/log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)"
  if [ -z "$execs" ]; then
    execs="$(sed -n 's/^#\([0-9]*\).*/\1/p' "$work/log" | tail -n 1)"
  fi
  # Inputs saved by this run (with -fork=1 -ignore_crashes=1 libFuzzer goes on after a crash
  # and exits 0, so the saved inputs decide too).
  found="$(find "$work" -maxdepth 1 -newer "$work/started" \
             \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)"
  if [ "$rc" -eq 0 ] && [ "$found" -eq 0 ]; then
    result="clean"
  else
    result="FAILED (exit $rc, $found input(s) saved in $work)"
    failed=1
    echo "fuzz: $t failed; the end of its log ($work/log):" >&2
    tail -n 60 "$work/log" >&2
  fi
  summary+=("$(printf '%-9s %6s s  %12s executions  %s' "$t" "$seconds" "${execs:-?}" "$result")")
done

echo "fuzz: summary"
printf '  %s\n' "${summary[@]}"
exit "$failed"
