#!/usr/bin/env bash
# Rewrites every generated part of the docs from the tool, after a change that moves numbers:
# the command outputs shown in README.md and docs/*.md (tests/tools/docs_blocks.py), the
# validation table (docs/validation.md) and the model's constants (docs/model.md, its generated
# part). Builds the release preset's tpusim first. Review the diff (git diff), then commit.
# The tests DocsBinary.* and ValidateBinary.*DocMatchesTheTool fail while a page is stale.
# Usage: tools/update_docs.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cmake --preset release >/dev/null
cmake --build --preset release --target tpusim
tpusim="$root/build/release/tools/tpusim"
pages=(README.md docs/*.md)
python3 tests/tools/docs_blocks.py --update "$tpusim" "$root" "${pages[@]#$root/}"
UPDATE_DOCS=1 tests/tools/docs_drift.sh docs/validation.md "$tpusim" validate --format=markdown
UPDATE_DOCS=1 tests/tools/docs_drift.sh docs/model.md "$tpusim" validate --constants --format=markdown
