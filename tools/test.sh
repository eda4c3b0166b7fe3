#!/usr/bin/env bash
# The test command: installs missing dependencies, builds the release preset and runs the whole
# ctest suite (each TEST in its own process). Exits non-zero on any failure.
# Usage: tools/test.sh [extra ctest args]   (TPUSIM_PRESET=asan tools/test.sh for sanitizers)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
preset="${TPUSIM_PRESET:-release}"
jobs="$(nproc 2>/dev/null || echo 2)"

tools/setup.sh
cmake --preset "$preset"
cmake --build --preset "$preset" -j "$jobs"
ctest --preset "$preset" -j "$jobs" "$@"
