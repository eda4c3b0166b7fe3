#!/bin/sh
# Usage: docs_drift.sh PAGE COMMAND...
# Passes when COMMAND's stdout equals PAGE byte for byte (a generated docs page
# has not drifted from the tool that generates it). UPDATE_DOCS=1 rewrites PAGE.
page="$1"; shift
out=$(mktemp); trap 'rm -f "$out"' EXIT
"$@" > "$out" || { echo "command failed: $*"; exit 1; }
if [ "${UPDATE_DOCS:-0}" = "1" ]; then cp "$out" "$page"; fi
if ! cmp -s "$out" "$page"; then
  echo "$page differs from the output of: $*"; diff -u "$page" "$out"; exit 1
fi
echo "$page matches the tool"
