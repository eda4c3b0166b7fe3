#!/usr/bin/env bash
# collective_determinism.sh TPUSIM: runs the same `tpusim collective` sweep
# twice with the chips built forward and twice built in reverse, each in its
# own process (SystemC elaborates once per process), and passes when the four
# JSON reports are byte-identical once the wall times are removed.
set -u
tpusim="$1"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(collective --generation=v5e --shape=8x4 --wrap=on --op=all_reduce
      --bytes=1KiB..4MiB --step-factor=16 --groups=4 --format=json)
i=0
for order in forward forward reverse reverse; do
  "$tpusim" "${args[@]}" --construction-order=$order > "$dir/raw$i.json" || exit 1
  sed -E 's/"wall_time_s": [^,}]*/"wall_time_s": 0/g' "$dir/raw$i.json" > "$dir/run$i.json"
  i=$((i + 1))
done
for i in 1 2 3; do
  if ! cmp -s "$dir/run0.json" "$dir/run$i.json"; then
    echo "run $i differs from run 0:"; diff "$dir/run0.json" "$dir/run$i.json"; exit 1
  fi
done
grep -q '"sim_time_ps"' "$dir/run0.json" || { echo "no results"; exit 1; }
echo "4 runs identical"
