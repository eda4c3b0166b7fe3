#!/usr/bin/env bash
# expect_exit.sh CODE [CHECK]... [--] COMMAND...
# Runs COMMAND and passes when it exits with CODE and its output passes every
# CHECK:
#   --stdout-has TEXT   stdout contains TEXT (a fixed string; may span lines)
#   --stderr-has TEXT   stderr contains TEXT
#   --stdout-empty      stdout is empty
#   --stderr-empty      stderr is empty
want="$1"; shift
checks=()
while [ $# -gt 0 ]; do
  case "$1" in
    --stdout-has|--stderr-has) checks+=("$1" "$2"); shift 2 ;;
    --stdout-empty|--stderr-empty) checks+=("$1" ""); shift ;;
    --) shift; break ;;
    *) break ;;
  esac
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/expect_exit.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$@" >"$tmp/out" 2>"$tmp/err"
got=$?
cat "$tmp/out"
cat "$tmp/err" >&2
status=0
if [ "$got" -ne "$want" ]; then
  echo "expected exit code $want, got $got from: $*" >&2
  status=1
fi
for ((i = 0; i < ${#checks[@]}; i += 2)); do
  check="${checks[i]}"; text="${checks[i+1]}"
  case "$check" in
    --stdout-has) file="$tmp/out" ;;
    --stderr-has) file="$tmp/err" ;;
    --stdout-empty) file="$tmp/out" ;;
    --stderr-empty) file="$tmp/err" ;;
  esac
  case "$check" in
    *-has)
      content=$(cat "$file")
      if [[ "$content" != *"$text"* ]]; then
        echo "expected ${check#--} to contain: $text" >&2
        status=1
      fi ;;
    *-empty)
      if [ -s "$file" ]; then
        echo "expected ${check#--} to be empty" >&2
        status=1
      fi ;;
  esac
done
exit $status
