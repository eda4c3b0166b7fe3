#!/usr/bin/env python3
"""trace_check.py TRACE_JSON [--steps N]: the trace a `tpusim run --out` writes (issue 21) names
every process and thread that has events (each chip's cores, each host), has a step track with
one slice per device call (N of them when given, the first marked warm_up), gives every kernel
slice (categories mxu, vector, memory) its FLOPs, bytes and fused ops in args, has each
collective from start ("b") to done ("e"), and gives every link counter one sample per device
call (the first 64) and a closing one.
Exits 1 naming the first problem."""
import json
import sys


def fail(message):
    print("trace_check: " + message)
    sys.exit(1)


def main():
    path = sys.argv[1]
    want_steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else None
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    process_names, thread_names = {}, {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            process_names[e["pid"]] = e["args"]["name"]
        if e["ph"] == "M" and e["name"] == "thread_name":
            thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] in ("X", "b", "e")}
    counters = {}
    for e in events:
        if e["ph"] == "C":
            counters.setdefault(e["name"], []).append(e)
        if e["ph"] in ("X", "b", "e", "C") and e["pid"] not in process_names:
            fail("process %d has events but no process_name" % e["pid"])
    for track in sorted(tracks):
        if track not in thread_names:
            fail("track pid %d tid %d has events but no thread_name" % track)
    cores = [t for t in tracks if 0 < t[0] < 100000]
    hosts = [t for t in tracks if 100000 <= t[0] < 200000]
    if not cores:
        fail("no core track")
    for t in cores:
        if not thread_names[t].startswith("core "):
            fail("core track %s is named %r" % (t, thread_names[t]))
    for t in hosts:
        if not process_names[t[0]].startswith("host "):
            fail("host process %d is named %r" % (t[0], process_names[t[0]]))
    steps = [e for e in events if e["ph"] == "X" and e.get("cat") == "step"]
    if not steps:
        fail("no step track")
    if want_steps is not None and len(steps) != want_steps:
        fail("%d step slices, want %d" % (len(steps), want_steps))
    if not steps[0]["args"]["warm_up"] or any(s["args"]["warm_up"] for s in steps[1:]):
        fail("the first step slice (only) must be marked warm_up")
    kernels = [e for e in events if e["ph"] == "X" and e.get("cat") in ("mxu", "vector", "memory")]
    if not kernels:
        fail("no kernel slice")
    for k in kernels:
        args = k.get("args", {})
        for key in ("flops", "bytes", "fused_ops", "category"):
            if key not in args:
                fail("kernel slice %r at %s lacks args.%s" % (k["name"], k["ts"], key))
        if args["fused_ops"] < 1 or args["bytes"] <= 0:
            fail("kernel slice %r has fused_ops %s, bytes %s" % (k["name"], args["fused_ops"],
                                                                 args["bytes"]))
    begins = [e for e in events if e["ph"] == "b"]
    ends = {(e["id"], e["pid"], e["tid"]): e for e in events if e["ph"] == "e"}
    for b in begins:
        e = ends.get((b["id"], b["pid"], b["tid"]))
        if e is None or e["ts"] < b["ts"]:
            fail("collective %r (id %s) has no done after its start" % (b["name"], b["id"]))
        for key in ("op", "algorithm", "bytes", "exposed_us", "hidden_us"):
            if key not in b["args"]:
                fail("collective %r lacks args.%s" % (b["name"], key))
    # One sample per device call (the first 64) plus the closing one: more than 2 whenever the
    # run has more than one call.
    want_samples = min(len(steps), 64) + 1
    for name, samples in counters.items():
        if len(samples) != want_samples:
            fail("counter %r has %d samples, want %d (one per device call, and the end)"
                 % (name, len(samples), want_samples))
    print("trace ok: %d core tracks, %d host tracks, %d steps, %d kernel slices, %d collectives, "
          "%d link counters" % (len(cores), len(hosts), len(steps), len(kernels), len(begins),
                                len(counters)))


main()
