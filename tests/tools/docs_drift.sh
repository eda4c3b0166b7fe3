#!/bin/sh
# Usage: docs_drift.sh PAGE COMMAND...
# Passes when COMMAND's stdout equals PAGE byte for byte (a generated docs page
# has not drifted from the tool that generates it). A page that goes on with
# written text after its generated part marks the end of that part with the
# line "<!-- end of generated part -->": then only the lines before it are
# compared. UPDATE_DOCS=1 rewrites PAGE (its generated part, keeping the rest).
page="$1"; shift
marker='<!-- end of generated part -->'
out=$(mktemp); have=$(mktemp); rest=$(mktemp)
trap 'rm -f "$out" "$have" "$rest"' EXIT
"$@" > "$out" || { echo "command failed: $*"; exit 1; }
if grep -qxF "$marker" "$page"; then
  line=$(grep -nxF "$marker" "$page" | head -1 | cut -d: -f1)
  head -n $((line - 1)) "$page" > "$have"
  tail -n +"$line" "$page" > "$rest"
else
  cp "$page" "$have"
  : > "$rest"
fi
if [ "${UPDATE_DOCS:-0}" = "1" ]; then
  cat "$out" "$rest" > "$page"
  cp "$out" "$have"
fi
if ! cmp -s "$out" "$have"; then
  echo "$page differs from the output of: $*"; diff -u "$have" "$out"; exit 1
fi
echo "$page matches the tool"
