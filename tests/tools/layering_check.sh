#!/usr/bin/env bash
# layering_check.sh REPO_ROOT: enforces the folder rules of architecture.md that the compiler
# cannot: no product code outside sim/ includes SystemC, and no code uses std::string_view
# (Debian's Abseil does not convert it to absl::string_view; style B3).
set -u
root="$1"
status=0
bad=$(grep -rlE '#include *[<"](systemc|systemc\.h|tlm|tlm\.h|sysc/|tlm_utils/)' \
        "$root/common" "$root/strategy" "$root/models" "$root/scenarios" "$root/tools" \
        --include='*.h' --include='*.cc' 2>/dev/null)
if [ -n "$bad" ]; then
  echo "SystemC included outside sim/:"; echo "$bad"; status=1
fi
bad=$(grep -rln 'std::string_view' "$root/common" "$root/strategy" "$root/sim" "$root/models" \
        "$root/scenarios" "$root/tools" "$root/tests" --include='*.h' --include='*.cc' 2>/dev/null)
if [ -n "$bad" ]; then
  echo "std::string_view used (use absl::string_view):"; echo "$bad"; status=1
fi
[ $status -eq 0 ] && echo "layering ok"
exit $status
