# tests/conformance/tfdata_suite.py
#
# The tf.data part of the differential suite: seeded random pipelines
# (tfdata_cases.py) run by TensorFlow and by tpusim (one 1x1 scenario per case,
# DISTRIBUTE_DATASETS_FROM_FUNCTION, so the dataset is used as is), compared
# element by element (dtype, shape, values, end of data, error class).
# Shuffled pipelines are compared as the multiset of each epoch plus the
# buffer-window property (tpusim's PRNG is its own, a documented difference).

import collections
import os

import harness
import known
import tfdata_cases as tc

STEPS = 300

# The ops of issue 22's list; each must appear in >= 50 converted cases
# (from_generator is C++-only: the interop part compares it).
REQUIRED_OPS = ["range", "tensor_slices", "tfrecord", "tfrecord_gzip", "tfrecord_zlib",
                "text_lines", "fixed_length", "batch", "padded_batch", "unbatch", "map",
                "map_and_batch", "filter", "take", "skip", "repeat", "shuffle",
                "list_files_shuffle", "interleave", "flat_map", "window", "zip", "concatenate",
                "shard", "cache", "prefetch", "parse_fixed_len", "parse_var_len",
                "parse_fixed_len_sequence"]  # elements compared per case (tpusim --steps; TF reads one more)


# Errors whose message is documented (tpusim's message contains TF's key
# phrase, spec "tpusim conventions"): when TF's message has one of these, so
# must tpusim's.
DOCUMENTED_MESSAGES = [
    "Cannot batch tensors with different shapes in component",
]


def tf_listing(tf, stages, steps=STEPS):
    """(elements, end code): end code OUT_OF_RANGE, OK (more than `steps`
    elements), or the error class of what TF raised (its message is kept in
    LAST_TF_ERROR)."""
    elems = []
    try:
        it = iter(tc.build_tf(tf, stages))
        while True:
            if len(elems) == steps:
                try:
                    next(it)
                    return elems, "OK"
                except StopIteration:
                    return elems, "OUT_OF_RANGE"
            elems.append(harness.tf_components(tf, next(it)))
    except StopIteration:
        return elems, "OUT_OF_RANGE"
    except Exception as e:  # noqa: BLE001 - the error class is the result
        LAST_TF_ERROR[id(stages)] = str(e)
        return elems, harness.tf_error_code(tf, e)


LAST_TF_ERROR = {}


def tp_listing(result):
    if "error" in result:
        return [], result["error"]["code"], result["error"]["message"]
    l = result["listing"]
    elems = [harness.json_components(s["replicas"][0]["components"]) for s in l["steps"]]
    return elems, l["end"]["code"], l["end"]["message"]


def key(components):
    return tuple((p, d, tuple(s), tuple(v), None if i is None else tuple(map(tuple, i)))
                 for p, d, s, v, i in components)


def shuffle_problems(ref, out, epochs, buf, reshuffle):
    """What breaks the shuffle contract: per-epoch multisets, the window."""
    n = len(ref)
    if len(out) != n * epochs:
        return "%d elements, expected %d epochs of %d" % (len(out), epochs, n)
    refk = [key(e) for e in ref]
    first = None
    for ep in range(epochs):
        got = [key(e) for e in out[ep * n:(ep + 1) * n]]
        if collections.Counter(got) != collections.Counter(refk):
            return "epoch %d is not a permutation of the input" % ep
        if buf is not None:
            # The earliest unused occurrence: if it is too far ahead, every
            # other assignment is too.
            pos = collections.defaultdict(list)
            for j, k in enumerate(refk):
                pos[k].append(j)
            for i, k in enumerate(got):
                j = pos[k].pop(0)
                if j > i + buf - 1:
                    return ("epoch %d: output %d is input %d, more than buffer_size %d ahead"
                            % (ep, i, j, buf))
        if not reshuffle:
            if first is None:
                first = got
            elif got != first:
                return "reshuffle_each_iteration=false but epoch %d differs from epoch 0" % ep
    return None


def run(tf, tpusim, workdir, seed, cases, log):
    files = tc.Files(tf, os.path.join(workdir, "files"))
    gen = tc.Generator(seed, files)
    cdir = os.path.join(workdir, "tfdata")
    os.makedirs(cdir, exist_ok=True)
    counts = collections.Counter()
    op_counts = collections.Counter()
    items = []  # (path, kind, payload)
    for i in range(cases):
        counts["generated"] += 1
        shuffled = gen.chance(0.12)
        if shuffled:
            prefix, sh, epochs = gen.shuffle_case()
            stages = list(prefix) + ([sh] if sh else []) + (
                [tc.Count("repeat", epochs)] if epochs > 1 else [])
        else:
            stages = gen.pipeline()
        if any(isinstance(s, tc.TfOnly) for s in stages):
            counts["inexpressible"] += 1
            continue
        counts["converted"] += 1
        path = os.path.join(cdir, "case-%05d.textproto" % i)
        with open(path, "w") as f:
            f.write(tc.scenario_text(stages, "tfdata-%d-%d" % (seed, i)))
        items.append((path, stages, (prefix, sh, epochs) if shuffled else None))
    wait = harness.run_tpusim_batch(tpusim, [p for p, _, _ in items], workdir, "tfdata", STEPS)

    tf_results = []
    trace = os.environ.get("TPUSIM_CONFORMANCE_TRACE")
    for path, stages, sh in items:
        if trace:
            print("conformance: TF runs", path, flush=True)
        if sh is None:
            tf_results.append(tf_listing(tf, stages))
        else:
            prefix, shs, epochs = sh
            ref_stages = prefix if shs else [tc.ListFiles(prefix[0].pattern, prefix[0].n)]
            tf_results.append((tf_listing(tf, ref_stages), tf_listing(tf, stages)))
    tp = wait()

    diffs = []
    for (path, stages, sh), tfr in zip(items, tf_results):
        got, code, msg = tp_listing(tp[path])
        problem = None
        if sh is None:
            want, wcode = tfr
            if code != wcode:
                problem = "end: TF %s after %d elements, tpusim %s after %d (%s)" % (
                    wcode, len(want), code, len(got), msg)
            else:
                tf_msg = LAST_TF_ERROR.get(id(stages), "")
                for phrase in DOCUMENTED_MESSAGES:
                    if phrase in tf_msg and phrase not in msg:
                        problem = "message: TF says %r, tpusim %r" % (phrase, msg)
            if problem is None or len(got) != len(want):
                for j in range(min(len(got), len(want))):
                    if not harness.same_components(got[j], want[j]):
                        problem = "element %d: TF %s, tpusim %s" % (
                            j, harness.brief(want[j]), harness.brief(got[j]))
                        break
                else:
                    if len(got) != len(want) and problem is None:
                        problem = "TF %d elements, tpusim %d" % (len(want), len(got))
        else:
            (ref, rcode), (tfout, tcode) = tfr
            prefix, shs, epochs = sh
            buf = shs.b if shs else None
            resh = shs.reshuffle if shs else True
            tf_problem = shuffle_problems(ref, tfout, epochs, buf, resh) if rcode == tcode == "OUT_OF_RANGE" else None
            if tf_problem:
                problem = "the suite's shuffle property fails on TF itself: " + tf_problem
            elif code != tcode:
                problem = "end: TF %s, tpusim %s (%s)" % (tcode, code, msg)
            elif code == "OUT_OF_RANGE":
                problem = shuffle_problems(ref, got, epochs, buf, resh)
        ops = set(op for st in stages for op in st.ops)
        for st in stages:
            if isinstance(st, tc.Concatenate) or isinstance(st, tc.Zip):
                for sub in (st.other if isinstance(st, tc.Concatenate) else sum(st.inputs, [])):
                    ops.update(sub.ops)
        if sh is not None:
            ops.add("shuffle" if sh[1] else "list_files_shuffle")
        if problem is None:
            counts["matched"] += 1
            op_counts.update(ops)
            continue
        k = known.classify("tfdata", stages, problem)
        if k is not None and not k.fixed:
            counts["known:" + k.id] += 1
            op_counts.update(ops)
            diffs.append((k.id, path, stages, problem))
        else:
            counts["different"] += 1
            diffs.append((k.id if k else None, path, stages, problem))
    return counts, op_counts, diffs
