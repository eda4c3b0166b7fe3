# tests/conformance/known.py
#
# The differences between tpusim and TensorFlow 2.21 that the suite knows, each
# with an id, what it is, its status and a matcher on the failing case. A
# difference that matches an entry is counted as known (not a failure) while
# `fixed` is False; set `fixed = True` (or run with --expect-fixed=ID) once the
# fix lands and the suite fails again if the difference comes back. A
# difference that matches no entry fails the suite.
#
# status: "documented" = a deliberate tpusim choice, listed in
# docs/semantics.md with its test; "pending" = a defect fixed on another
# branch (issue 22 part 2), reproducer given.

import tfdata_cases as tc


class Known:
    def __init__(self, id, status, what, reproducer, match, fixed=False):
        self.id, self.status, self.what, self.reproducer = id, status, what, reproducer
        self.match = match
        # True: the difference is fixed and must not come back (a match fails).
        self.fixed = fixed


def _has(stages, cls, pred=lambda s: True):
    return any(isinstance(s, cls) and pred(s) for s in stages)


def _stages(case):
    return getattr(case, "stages", case)


def _shard_after_repeat(suite, case, problem):
    stages = _stages(case)
    if suite == "dist" and case.api == "DISTRIBUTE_DATASET" and case.policy in ("DATA", "AUTO") \
            and _has(stages, tc.Count, lambda s: s.kind == "repeat"):
        return True  # the DATA policy's shard goes after the repeat
    seen_repeat = False
    for s in stages:
        if isinstance(s, tc.Count) and s.kind == "repeat":
            seen_repeat = True
        if isinstance(s, tc.Shard) and seen_repeat:
            return True
    return False


ENTRIES = [
    Known("shard_after_repeat", "fixed (issue 22 part 2: repeat's skip of 0 ended it)",
          "a shard after a repeat (also through a prefetch, also shard(1, 0)) yields nothing: "
          "tpusim ends at step 0, TF gives the shard's elements",
          "range(3).repeat(1).shard(2, 0): TF [0, 2], tpusim []; and through the DATA "
          "policy's shard: W=1 R=1 DATA (semantics 2.21), range(3).batch(1).repeat(1)",
          _shard_after_repeat, fixed=True),
]
ENTRIES.append(Known(
    "padded_batch_smaller_than_element", "fixed (issue 22 part 2: DATA_LOSS as in TF)",
    "padded_batch to a fixed size smaller than an element: TF DATA_LOSS, tpusim INVALID_ARGUMENT",
    "range(10).batch(3).padded_batch(2, padded_shapes=[2]): TF DATA_LOSS, tpusim "
    "INVALID_ARGUMENT",
    lambda suite, case, p: _has(_stages(case), tc.PaddedBatch, lambda s: s.shapes is not None)
    and _end(p, "DATA_LOSS", "INVALID_ARGUMENT"), fixed=True))


def _map_then_batch(stages):
    """A non-identity map directly before a dropping batch: TF's default
    map_and_batch_fusion makes them one map_and_batch."""
    return any(isinstance(a, tc.Map) and a.fn != "identity" and isinstance(b, tc.Batch) and b.drop
               for a, b in zip(stages, stages[1:]))


def _end(problem, tf_code, tp_code):
    return problem.startswith("end: TF %s" % tf_code) and (", tpusim %s" % tp_code) in problem


# Differences found in the tf.data part, with their minimal reproducers.


def _end(problem, tf_code, tp_code):
    return problem.startswith("end: TF %s" % tf_code) and (", tpusim %s" % tp_code) in problem


ENTRIES += [
    Known("skip_all_reads_nothing", "fixed on this branch",
          "TF 2.21's skip(-1) ends at once without reading its input (an endless or failing "
          "input gives an empty dataset); tpusim read the input to its end",
          "range(9).batch(5).batch(5).skip(-1): TF [], tpusim INVALID_ARGUMENT (Cannot batch "
          "tensors with different shapes); range(3).repeat().skip(-1): TF [] at once",
          lambda suite, case, p: _has(_stages(case), tc.Count, lambda s: s.kind == "skip" and s.n < 0)
          and _end(p, "OUT_OF_RANGE", "INVALID_ARGUMENT"), fixed=True),
    Known("map_and_batch_checks_dropped_rows", "fixed on this branch",
          "map_and_batch copies each row into its batch as it arrives: rows of different shapes "
          "fail (InvalidArgument) even in a final partial batch that drop_remainder=true drops; "
          "tpusim (like plain batch) drops the partial batch without looking. TF's default "
          "map_and_batch_fusion gives a (non-identity) map directly followed by a batch the "
          "same check",
          "range(7).batch(5).map_and_batch(identity, 3, drop_remainder=True): TF "
          "INVALID_ARGUMENT, tpusim []",
          lambda suite, case, p: (_has(_stages(case), tc.MapAndBatch, lambda s: s.drop)
                                  or _map_then_batch(_stages(case)))
          and _end(p, "INVALID_ARGUMENT", "OUT_OF_RANGE"), fixed=True),
    Known("batch_of_batched_sparse_parse", "open",
          "a VarLen feature parsed from a batch of serialized Examples is one SparseTensor in TF "
          "(batching such elements of different batch sizes gives dense_shape [n, max rows, "
          "max values]); tpusim boxes every row separately (box shape [rows]), so a later batch "
          "of a partial batch fails with 'Cannot batch tensors with different shapes ... "
          "string[3] ... string[2]'",
          "TFRecordDataset(ex-0, 5 records).batch(3).map(parse_example({x: VarLen(float32)}))"
          ".batch(5): TF one element (dense_shape [2, 3, 2]), tpusim INVALID_ARGUMENT",
          lambda suite, case, p: _has(_stages(case), tc.ParseExample,
                                      lambda s: s.batched and any(f[3] == "var_len" for f in s.features))
          and "Cannot batch tensors with different shapes" in p and "had shape string[" in p),
    Known("window_over_failing_batch", "open (a TF quirk; tpusim keeps the error)",
          "TF 2.21's batch returns the stacking error of a final partial batch together with "
          "end-of-sequence, and window checks end-of-input before the status: the error is "
          "lost (range(9).batch(5).batch(5).window(1) is empty; an error in a full batch, "
          "range(14).batch(5).batch(3).window(1), is raised). tpusim raises it",
          "range(9).batch(5).batch(5).window(1).flat_map(lambda w: w.batch(1)): TF [], tpusim "
          "INVALID_ARGUMENT",
          lambda suite, case, p: _has(_stages(case), tc.Window)
          and _end(p, "OUT_OF_RANGE", "INVALID_ARGUMENT") and "Cannot batch" in p),
]


# Differences outside the input listings.
ENTRIES += [
    Known("reduce_mean_int_axis_none", "documented",
          "reduce(MEAN, per-replica int tensors, axis=None): TF 2.21's MirroredStrategy returns "
          "the float64 mean; TF 2.2's TPUStrategy (tpusim's target, spec (f)) scales the sum by "
          "the Python float 1/N, which fails on an int tensor, and tpusim keeps that error "
          "(InvalidArgument)",
          "reduce MEAN|none|int64|2:1,2;2:3,4: TF [2.0, 3.0] float64, tpusim INVALID_ARGUMENT",
          lambda suite, case, p: suite == "reduce" and "reduce MEAN|none|int" in case
          and "cannot be applied to int" in p),
]


def classify(suite, case, problem):
    """case: the tf.data stage list, or a dist_suite.Case."""
    for k in ENTRIES:
        if k.match(suite, case, problem):
            return k
    return None


def expect_fixed(ids):
    for i in ids:
        found = [k for k in ENTRIES if k.id == i]
        if not found:
            raise SystemExit("--expect-fixed=%s: no such known difference (have %s)"
                             % (i, ", ".join(k.id for k in ENTRIES)))
        found[0].fixed = True
