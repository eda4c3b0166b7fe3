#!/usr/bin/env bash
# tests/conformance/run.sh PYTHON ARGS...: runs run_conformance.py with tpusim's Python
# environment (PYTHON = cmake's TPUSIM_PYTHON, empty when tools/setup.sh has not made it).
# Without it: exit 77 (ctest: skipped) with the reason, or 1 when CI=true.
set -uo pipefail
python="$1"
shift
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -z "$python" ] || [ ! -x "$python" ]; then
  reason="tpusim's Python environment with TensorFlow is not installed (run tools/setup.sh, then reconfigure)"
  if [ "${CI:-}" = "true" ]; then
    echo "conformance: FAIL: $reason (CI=true: TF is required)"
    exit 1
  fi
  echo "conformance: SKIP: $reason"
  exit 77
fi
exec "$python" "$here/run_conformance.py" "$@"
