#!/usr/bin/env bash
# The test command: installs missing dependencies, builds the release preset and runs the whole
# ctest suite (each TEST in its own process). Exits non-zero on any failure.
# Then runs every fuzz target (tools/fuzz.sh) for TPUSIM_FUZZ_SECONDS seconds each (default 20;
# 0 skips fuzzing); a fuzz crash fails the run. The fuzzers start from a fixed seed (-seed=1,
# unless TPUSIM_FUZZ_FLAGS says otherwise) so a failure found here replays with the same flags.
# Usage: tools/test.sh [extra ctest args]   (TPUSIM_PRESET=asan tools/test.sh for sanitizers)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
preset="${TPUSIM_PRESET:-release}"
jobs="$(nproc 2>/dev/null || echo 2)"

tools/setup.sh
# The PJRT backend is required (ON) where it can build: XLA's CPU plugin from the pinned wheel is
# then tested for real. The asan and fuzz presets keep it OFF (the plugin is not instrumented).
# libtpu (the XLA:TPU compiler, pinned in tools/requirements.txt) is required with it: a failed
# install fails the run instead of skipping the libtpu probe.
pjrt=()
case "$preset" in
  asan|fuzz) ;;
  *) pjrt=(-DTPUSIM_PJRT=ON -DTPUSIM_LIBTPU=ON) ;;
esac
cmake --preset "$preset" "${pjrt[@]}"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs" "$@"

fuzz_seconds="${TPUSIM_FUZZ_SECONDS:-20}"
if [ "$fuzz_seconds" = "0" ]; then
  echo "test: fuzzing skipped (TPUSIM_FUZZ_SECONDS=0)"
elif ! command -v clang++ >/dev/null 2>&1; then
  echo "test: fuzzing skipped: clang++ is not installed (tools/setup.sh installs it)"
else
  TPUSIM_FUZZ_FLAGS="${TPUSIM_FUZZ_FLAGS:--seed=1}" tools/fuzz.sh all "$fuzz_seconds"
fi
