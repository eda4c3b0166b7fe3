#!/usr/bin/env bash
# Installs every build and test dependency of tpusim that is missing: Debian's packages, then the
# pinned PyPI packages of tools/requirements.txt into tpusim's own Python environment (made with
# Debian's python3 -m venv, outside the work tree, at the path tools/pyenv.sh prints).
# Idempotent: when everything is present it changes nothing and says so. Runs as root (or through
# sudo when available). Usage: tools/setup.sh
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  ccache                # rebuilds of fresh clones on the same machine (CMake uses it when found)
  libsystemc-dev        # SystemC 2.3.4 + TLM (C++17 build)
  libabsl-dev           # Abseil 20220623
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev
  libbenchmark-dev
  zlib1g-dev            # compressed TFRecord files (GZIP / ZLIB), found by CMake's FindZLIB
  python3 python3-venv   # tpusim's Python environment for the pinned PyPI packages
  chromium              # the browser test of report.html and compare.html (headless)
  clang libclang-rt-dev # the fuzz targets: clang++ with libFuzzer, ASan, UBSan (tools/fuzz.sh);
                        # Debian's default-version packages, so compiler and runtime match
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "setup: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} Debian packages are installed"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "setup: installed ${#missing[@]} Debian package(s)"
fi

# The pinned PyPI packages. The environment is complete when its marker holds the requirements
# file's hash; a half-made one (an interrupted install) is made again from scratch.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
requirements="$root/tools/requirements.txt"
venv="$("$root/tools/pyenv.sh")"
hash="$(sha256sum "$requirements" | cut -c1-64)"
marker="$venv/.tpusim-requirements-sha256"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$hash" ]; then
  echo "setup: Python environment $venv is complete ($(grep -c '==' "$requirements") pinned packages)"
  exit 0
fi
echo "setup: making Python environment $venv from tools/requirements.txt"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  -r "$requirements"
echo "$hash" > "$marker"
echo "setup: Python environment ready: $venv"
