#!/usr/bin/env bash
# Installs every build and test dependency of tpusim that is missing, from Debian's packages
# only. Idempotent: when everything is present it changes nothing and says so. Runs as root
# (or through sudo when available). Usage: tools/setup.sh
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libsystemc-dev        # SystemC 2.3.4 + TLM (C++17 build)
  libabsl-dev           # Abseil 20220623
  libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev
  libbenchmark-dev
  zlib1g-dev            # compressed TFRecord files (GZIP / ZLIB), found by CMake's FindZLIB
  clang libclang-rt-dev # the fuzz targets: clang++ with libFuzzer, ASan, UBSan (tools/fuzz.sh);
                        # Debian's default-version packages, so compiler and runtime match
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} dependencies are installed; nothing to do"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "setup: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 1
  fi
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: installed ${#missing[@]} package(s)"
