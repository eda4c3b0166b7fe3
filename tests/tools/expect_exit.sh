#!/usr/bin/env bash
# expect_exit.sh CODE COMMAND...: runs COMMAND and passes when it exits with CODE.
want="$1"; shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expected exit code $want, got $got from: $*" >&2
  exit 1
fi
