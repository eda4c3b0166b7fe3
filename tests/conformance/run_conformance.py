#!/usr/bin/env python3
# tests/conformance/run_conformance.py
#
# The differential suite against real TensorFlow (issue 22; README in this
# folder). One TF process (this one, with 8 logical CPU devices) and a few
# tpusim processes (`inspect-input --batch --format=json`, and the C++ driver
# tpusim_conformance_driver for reduce, device assignment, from_generator and
# the ConfigProto).
#
# Usage: run_conformance.py --tpusim BUILD/tools/tpusim --driver BUILD/.../driver
#          [--seed S] [--tfdata-cases N] [--dist-cases M] [--parts tfdata,dist,...]
#          [--workdir DIR] [--expect-fixed ID]...
# Exit: 0 all cases equal or known; 1 an unexplained difference (or, with
# CI=true, TensorFlow missing or not 2.21.0); 77 skipped (no TF, not in CI).

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import known  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tpusim", required=True)
    ap.add_argument("--driver", default="")
    ap.add_argument("--seed", type=int, default=None,
                    help="default: $TPUSIM_CONFORMANCE_SEED, else 22")
    ap.add_argument("--tfdata-cases", type=int, default=2300)
    ap.add_argument("--dist-cases", type=int, default=600)
    ap.add_argument("--parts", default="tfdata,dist,interop,devassign,reduce")
    ap.add_argument("--workdir", default="")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    ap.add_argument("--expect-fixed", action="append", default=[])
    ap.add_argument("--show", type=int, default=3, help="reproducers shown per class")
    args = ap.parse_args()
    seed = args.seed
    if seed is None:
        seed = int(os.environ.get("TPUSIM_CONFORMANCE_SEED", "22"))
    known.expect_fixed(args.expect_fixed)

    tf = harness.import_tf(8)

    workdir = args.workdir or tempfile.mkdtemp(prefix="tpusim-conformance-")
    os.makedirs(workdir, exist_ok=True)
    print("conformance: TensorFlow %s, seed %d (rerun: TPUSIM_CONFORMANCE_SEED=%d), workdir %s"
          % (tf.__version__, seed, seed, workdir))
    parts = args.parts.split(",")
    failed = False
    all_diffs = []
    for part in parts:
        t0 = time.time()
        quiet = harness.QuietStderr(os.path.join(workdir, "tf-stderr.log"))
        quiet.__enter__()
        try:
            counts, ops, diffs = run_part(part, tf, args, workdir, seed)
        finally:
            quiet.__exit__()
        dt = time.time() - t0
        print("conformance[%s]: %.1f s; %s" % (part, dt, ", ".join(
            "%s %d" % kv for kv in sorted(counts.items()))))
        if ops:
            print("conformance[%s]: converted cases per op: %s" % (part, ", ".join(
                "%s %d" % kv for kv in sorted(ops.items()))))
        lacking = [o for o in getattr(sys.modules.get(part + "_suite"), "REQUIRED_OPS", [])
                   if ops.get(o, 0) < 50]
        if lacking:
            print("conformance[%s]: FAIL: fewer than 50 converted cases for %s" % (part, lacking))
            failed = True
        minimum = {"tfdata": 2000, "dist": 500}.get(part)
        if minimum and counts.get("converted", 0) < minimum and \
                args.tfdata_cases >= 2000 and args.dist_cases >= 500:
            print("conformance[%s]: FAIL: %d converted cases, fewer than %d"
                  % (part, counts.get("converted", 0), minimum))
            failed = True
        for d in diffs:
            all_diffs.append((part,) + tuple(d))
        if counts.get("different", 0):
            failed = True

    # Each difference class once, with its smallest reproducers.
    by_class = {}
    for part, kid, path, stages, problem in all_diffs:
        by_class.setdefault((part, kid), []).append((len(stages), path, stages, problem))
    for (part, kid), items in sorted(by_class.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        items.sort(key=lambda t: (t[0], t[1]))
        k = [e for e in known.ENTRIES if e.id == kid]
        label = ("KNOWN %s (%s)" % (kid, k[0].status)) if k and not k[0].fixed else (
            "UNEXPLAINED" if kid is None else "EXPECTED FIXED, STILL DIFFERENT: %s" % kid)
        print("conformance[%s]: %s: %d case(s); smallest:" % (part, label, len(items)))
        for _, path, stages, problem in items[:args.show]:
            print("  %s\n    pipeline: %s\n    %s" % (path, describe(stages), problem))
    if not args.keep and not args.workdir and not failed:
        shutil.rmtree(workdir, ignore_errors=True)
    print("conformance: %s" % ("FAIL" if failed else "PASS"))
    return 1 if failed else 0


def run_part(part, tf, args, workdir, seed):
    import tfdata_suite
    import dist_suite
    import other_suites
    if part == "tfdata":
        return tfdata_suite.run(tf, args.tpusim, workdir, seed, args.tfdata_cases, print)
    if part == "dist":
        return dist_suite.run(tf, args.tpusim, workdir, seed, args.dist_cases)
    if part in ("interop", "devassign", "reduce"):
        return other_suites.run(part, tf, args.tpusim, args.driver, workdir, seed)
    raise SystemExit("--parts: unknown part %r" % part)


def describe(stages):
    if isinstance(stages, str):
        return stages
    return " | ".join(st.proto() for st in stages)


if __name__ == "__main__":
    sys.exit(main())
