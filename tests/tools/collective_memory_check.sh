#!/usr/bin/env bash
# collective_memory_check.sh TPUSIM
# A collective's memory does not grow with its message size: an all-reduce of
# 64 MiB per device in 4 KiB packets on v4-128 (16384 packets per device) peaks
# within 25% of the same at 4 MiB (1024 packets). Before a message's packets
# waiting at their sender became one entry, the 64 MiB run needed 3x the 4 MiB
# one (51 MB against 17 MB).
set -u
tpusim="$1"
# Peak RSS in KiB of one run (the child's ru_maxrss).
rss() {
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' \
    "$tpusim" collective --slice=v4-128 --bytes="$1" --packet-bytes=4096
}
small=$(rss 4MiB); large=$(rss 64MiB)
echo "peak RSS: 4 MiB messages ${small} KiB, 64 MiB messages ${large} KiB"
case "$small$large" in *[!0-9]*|"") echo "no RSS figure"; exit 1;; esac
[ $((large * 4)) -le $((small * 5)) ] || { echo "64 MiB run is over 1.25x the 4 MiB run"; exit 1; }
