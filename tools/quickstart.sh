#!/usr/bin/env bash
# The run command: installs missing dependencies, builds the release preset with all cores, then
# estimates a ResNet-50 training step on a simulated v4-32 (the README's first recipe) and
# prints its report.
# Usage: tools/quickstart.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc 2>/dev/null || echo 2)"

tools/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$jobs"
tpusim="$root/build/release/tools/tpusim"

echo
echo "== tpusim run scenarios/run/resnet50_v4_32.textproto (ResNet-50 on a simulated v4-32)"
"$tpusim" run "$root/scenarios/run/resnet50_v4_32.textproto"
echo
echo "Next: the recipes in README.md (compile, sweep, goldens); tpusim --help lists every command."
