#!/usr/bin/env bash
# The run command: installs missing dependencies, builds the release preset with all cores, then
# runs the tpusim CLI on the default scenario and prints its report.
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
echo "== tpusim presets"
"$tpusim" presets
if [ -f "$root/scenarios/default.textproto" ]; then
  echo
  echo "== tpusim inspect-input scenarios/default.textproto --steps 3"
  "$tpusim" inspect-input "$root/scenarios/default.textproto" --steps 3
fi
echo
echo "== tpusim run scenarios/run/quickstart.textproto (the MLP on a simulated v3-8)"
"$tpusim" run "$root/scenarios/run/quickstart.textproto"
