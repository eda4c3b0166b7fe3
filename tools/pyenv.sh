#!/usr/bin/env bash
# Prints the path of tpusim's Python environment (the one tools/setup.sh fills from
# tools/requirements.txt): ${XDG_CACHE_HOME:-$HOME/.cache}/tpusim/venv-<first 12 hex digits of
# the file's SHA-256>. cmake/TpusimPython.cmake computes the same path.
# Usage: tools/pyenv.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
hash="$(sha256sum "$root/tools/requirements.txt" | cut -c1-12)"
echo "${XDG_CACHE_HOME:-$HOME/.cache}/tpusim/venv-$hash"
