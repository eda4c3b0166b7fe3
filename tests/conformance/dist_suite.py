# tests/conformance/dist_suite.py
#
# The distribution part of the differential suite: seeded random pipelines
# distributed over W workers x R replicas (N = W*R <= 8) by TF 2.21 and by
# tpusim (semantics "2.21", or "2.4" where the two agree), compared step by
# step, replica by replica.
#
# How TF is run (one process, 8 logical CPU devices configured once):
# * W == 1: tf.distribute.MirroredStrategy over the first R logical CPUs;
#   experimental_distribute_dataset / distribute_datasets_from_function and
#   TF's own distributed iterator, unchanged.
# * W > 1: worker w's dataset is the one TF builds for worker w of W: the
#   between-graph path of input_util.get_distributed_dataset with
#   InputContext(num_input_pipelines=W, input_pipeline_id=w,
#   num_replicas_in_sync=N) on a MirroredStrategy over R CPUs, which applies
#   TF's rebatch (batch_sizes_for_worker, or the legacy rebatch) and then TF's
#   auto-shard rewrite (_AutoShardDataset(W, w, N), policy from the dataset's
#   options) in process (`_cloned_datasets[0]`). The W worker streams are then
#   read the way TF's DistributedIterator reads them in multi-worker mode
#   (input_lib.py, 2.21): elements go round-robin to the worker's R replicas;
#   partial-batch handling (get_next_as_optional) is on when some shape is
#   not static and the dataset is not infinite (TPUStrategy's hosts are one
#   in-graph client, never "multi-worker mode", which would force it on); a step
#   ends the iteration when no replica of any worker has a value (the global
#   has-value sum is 0); a replica without a value gets the dummy of
#   _dummy_tensor_fn (unknown dims 0; a fully known shape gets dim 0 = 0).
#   Without partial-batch handling a step ends when any replica has no value.

import collections
import os
import random

import harness
import known
import tfdata_cases as tc

STEPS = 60
# Forces one semantics version for every case (default: pick_semantics).
SEMANTICS_OVERRIDE = os.environ.get("TPUSIM_CONFORMANCE_SEMANTICS", "")

POLICIES = ["AUTO", "FILE", "DATA", "OFF"]

REQUIRED_OPS = ["policy_AUTO", "policy_FILE", "policy_DATA", "policy_OFF", "partial_batches",
                "drop_remainder", "unknown_batch_size", "from_function", "empty_replica",
                "multi_worker", "file_source", "semantics_2.4", "semantics_2.21"]


class Case:
    pass


def gen_case(rng, files, i):
    c = Case()
    c.W = rng.choice([1, 1, 2, 2, 3, 4])
    c.R = rng.randint(1, 8 // c.W)
    c.N = c.W * c.R
    c.policy = rng.choice(POLICIES)
    c.api = "DISTRIBUTE_DATASET" if rng.random() < 0.85 else "DISTRIBUTE_DATASETS_FROM_FUNCTION"
    c.ops = set()
    if c.api == "DISTRIBUTE_DATASETS_FROM_FUNCTION":
        per = rng.randint(1, 4)
        c.global_batch = per * c.N
        c.stages = [tc.Range(0, rng.randint(0, 40), 1)]
        c.fn_batch = (per, rng.random() < 0.3)
        c.fn_shard = rng.random() < 0.6
        c.ops.add("from_function")
        return c
    kind = rng.choice(["range", "range", "files", "files", "interleave", "unknown"])
    B = rng.randint(1, 12)
    drop = rng.random() < 0.3
    if kind == "range":
        st = [tc.Range(0, rng.randint(0, 40), 1)]
        if rng.random() < 0.3:
            st.append(tc.Map(rng.choice(tc.MAP_FNS)))
        if rng.random() < 0.2:
            st.append(tc.Filter(rng.choice(["even", "odd"])))
    elif kind == "files":
        nf = rng.randint(1, files.NUM)
        st = [tc.Reader("tfrecord", files.tfrecord[""][:nf], n=nf * files.RECORDS)]
        c.ops.add("file_source")
    elif kind == "interleave":
        nf = rng.randint(1, files.NUM)
        st = [tc.ListFiles(os.path.join(files.dir, "ex-*.tfrecord"), files.NUM),
              tc.Interleave("tfrecord", rng.random() < 0.5, rng.randint(1, 3), 1, n=files.NUM * files.RECORDS)]
        c.ops.add("file_source")
    else:  # two batch sizes: the batch size is unknown to TF's rebatch
        a = rng.randint(0, 20)
        b1, b2 = rng.randint(1, 8), rng.randint(1, 8)
        if b1 == b2:
            b2 += 1
        st = [tc.Range(0, a, 1), tc.Batch(b1, False),
              tc.Concatenate([tc.Range(100, 100 + rng.randint(1, 20), 1), tc.Batch(b2, False)])]
        c.ops.add("unknown_batch_size")
        B = None
    if B is not None:
        st.append(tc.Batch(B, drop))
        c.ops.add("drop_remainder" if drop else "partial_batches")
    tail = rng.random()
    if tail < 0.15:
        st.append(tc.Count("repeat", rng.randint(1, 3)))
    elif tail < 0.25:
        st.append(tc.Count("take", rng.randint(0, 6)))
    elif tail < 0.35:
        st.append(tc.Prefetch(rng.choice([1, 2, -1])))
    c.stages = st
    c.ops.add("policy_" + c.policy)
    c.ops.add("W%d" % c.W)
    return c


def pick_semantics(rng, c):
    """"2.21", or "2.4" where TF 2.21 and tpusim's "2.4" are meant to agree
    (everything but one worker under DATA / AUTO: docs/semantics.md)."""
    if SEMANTICS_OVERRIDE:
        return SEMANTICS_OVERRIDE
    if c.W == 1 and c.policy in ("DATA", "AUTO") and c.api == "DISTRIBUTE_DATASET":
        return "2.21"
    return rng.choice(["2.4", "2.21"])


def scenario_text(c, name):
    lines = ['name: "%s"' % name,
             "cluster { workers: %d replicas_per_worker: %d }" % (c.W, c.R),
             'semantics: "%s"' % c.semantics, "api: %s" % c.api, "shard_policy: %s" % c.policy]
    for st in c.stages:
        lines.append("pipeline { %s }" % st.proto())
    if c.api == "DISTRIBUTE_DATASETS_FROM_FUNCTION":
        lines.append("global_batch_size: %d" % c.global_batch)
        lines.append("pipeline { batch { use_global_batch: true drop_remainder: %s } }"
                     % str(c.fn_batch[1]).lower())
        if c.fn_shard:
            lines.append("pipeline { shard { by_input_context: true } }")
    return "\n".join(lines) + "\n"


class TfDist:
    def __init__(self, tf):
        self.tf = tf
        self.strategies = {}
        from tensorflow.python.distribute import input_util  # noqa
        from tensorflow.python.distribute import distribute_lib  # noqa
        self.input_util = input_util
        self.distribute_lib = distribute_lib

    def strategy(self, R):
        if R not in self.strategies:
            self.strategies[R] = self.tf.distribute.MirroredStrategy(
                ["/device:CPU:%d" % d for d in range(R)])
        return self.strategies[R]

    def dataset(self, c):
        tf = self.tf
        ds = tc.build_tf(tf, c.stages)
        opts = tf.data.Options()
        opts.experimental_distribute.auto_shard_policy = getattr(
            tf.data.experimental.AutoShardPolicy, c.policy)
        return ds.with_options(opts)

    def fn_dataset(self, c, ctx):
        ds = tc.build_tf(self.tf, c.stages)
        ds = ds.batch(ctx.get_per_replica_batch_size(c.global_batch), drop_remainder=c.fn_batch[1])
        if c.fn_shard:
            ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id)
        return ds

    def listing(self, c):
        """([[components per replica] per step], end code)."""
        tf = self.tf
        steps = []
        try:
            s = self.strategy(c.R)
            if c.W == 1:
                if c.api == "DISTRIBUTE_DATASET":
                    dist = s.experimental_distribute_dataset(self.dataset(c))
                else:
                    dist = s.distribute_datasets_from_function(lambda ctx: self.fn_dataset(c, ctx))
                it = iter(dist)
                while len(steps) < STEPS:
                    try:
                        v = next(it)
                    except StopIteration:
                        return steps, "OUT_OF_RANGE"
                    steps.append([harness.tf_components(tf, x)
                                  for x in s.experimental_local_results(v)])
                return steps, "OK"
            return self.multi_worker(c, s, steps)
        except Exception as e:  # noqa: BLE001
            return steps, harness.tf_error_code(tf, e)

    def worker_datasets(self, c, s):
        dl = self.distribute_lib
        out = []
        for w in range(c.W):
            ctx = dl.InputContext(num_input_pipelines=c.W, input_pipeline_id=w,
                                  num_replicas_in_sync=c.N)
            if c.api == "DISTRIBUTE_DATASET":
                dd = self.input_util.get_distributed_dataset(
                    self.dataset(c), s.extended._input_workers_with_options(), s,
                    num_replicas_in_sync=c.N, input_context=ctx)
                out.append(dd._cloned_datasets[0])
            else:
                out.append(self.fn_dataset(c, ctx))
        return out

    def multi_worker(self, c, s, steps):
        tf = self.tf
        from tensorflow.python.distribute import input_lib
        wds = self.worker_datasets(c, s)
        spec = wds[0].element_spec
        infinite = any(int(d.cardinality()) == tf.data.INFINITE_CARDINALITY for d in wds)
        # TPUStrategy is never in "multi-worker mode" (its hosts are one
        # in-graph client): partial-batch handling iff some shape is not static.
        optional = not infinite and not input_lib._is_statically_shaped(spec)
        its = [iter(d) for d in wds]
        done = [False] * c.W

        def next_of(w):
            if done[w]:
                return None
            try:
                return next(its[w])
            except StopIteration:
                done[w] = True
                return None
        dummy = None
        while len(steps) < STEPS:
            vals = [[next_of(w) for _ in range(c.R)] for w in range(c.W)]
            flat = [v for ws in vals for v in ws]
            if all(v is None for v in flat) or (not optional and any(v is None for v in flat)):
                return steps, "OUT_OF_RANGE"
            if dummy is None:
                dummy = input_lib._dummy_tensor_fn(spec)
            steps.append([harness.tf_components(tf, v if v is not None else dummy) for v in flat])
        return steps, "OK"


def run(tf, tpusim, workdir, seed, cases):
    files = tc.Files(tf, os.path.join(workdir, "files"))
    rng = random.Random(seed * 7919 + 1)
    cdir = os.path.join(workdir, "dist")
    os.makedirs(cdir, exist_ok=True)
    counts = collections.Counter()
    op_counts = collections.Counter()
    items = []
    for i in range(cases):
        c = gen_case(rng, files, i)
        c.semantics = pick_semantics(rng, c)
        c.ops.add("semantics_" + c.semantics)
        counts["generated"] += 1
        counts["converted"] += 1
        path = os.path.join(cdir, "case-%05d.textproto" % i)
        with open(path, "w") as f:
            f.write(scenario_text(c, "dist-%d-%d" % (seed, i)))
        items.append((path, c))
    wait = harness.run_tpusim_batch(tpusim, [p for p, _ in items], workdir, "dist", STEPS)
    td = TfDist(tf)
    trace = os.environ.get("TPUSIM_CONFORMANCE_TRACE")
    tf_results = []
    for path, c in items:
        if trace:
            print("conformance: TF runs", path, flush=True)
        tf_results.append(td.listing(c))
    tp = wait()
    diffs = []
    for (path, c), (want, wcode) in zip(items, tf_results):
        r = tp[path]
        if "error" in r:
            got, code, msg = [], r["error"]["code"], r["error"]["message"]
        else:
            l = r["listing"]
            got = [[harness.json_components(rep["components"]) for rep in st["replicas"]]
                   for st in l["steps"]]
            code, msg = l["end"]["code"], l["end"]["message"]
        problem = None
        for s in range(min(len(got), len(want))):
            for rep in range(c.N):
                if rep >= len(got[s]) or not harness.same_components(got[s][rep], want[s][rep]):
                    problem = "step %d replica %d: TF %s, tpusim %s" % (
                        s, rep, harness.brief(want[s][rep]),
                        harness.brief(got[s][rep]) if rep < len(got[s]) else "-")
                    break
            if problem:
                break
        if problem is None and (code != wcode or len(got) != len(want)):
            problem = "end: TF %s after %d steps, tpusim %s after %d (%s)" % (
                wcode, len(want), code, len(got), msg)
        desc = describe(c)
        if any(comp[2] and comp[2][0] == 0 for st in want for rep in st for comp in rep):
            c.ops.add("empty_replica")
        if c.W > 1:
            c.ops.add("multi_worker")
        if problem is None:
            counts["matched"] += 1
            op_counts.update(c.ops)
            continue
        k = known.classify("dist", c, problem)
        if k is not None and not k.fixed:
            counts["known:" + k.id] += 1
            op_counts.update(c.ops)
        else:
            counts["different"] += 1
        diffs.append((k.id if k else None, path, desc, problem))
    return counts, op_counts, diffs


def describe(c):
    s = "W=%d R=%d %s %s semantics %s: " % (c.W, c.R, c.api, c.policy, c.semantics)
    s += " | ".join(st.proto() for st in c.stages)
    if c.api == "DISTRIBUTE_DATASETS_FROM_FUNCTION":
        s += " | batch(global %d / N, drop=%s)%s" % (c.global_batch, c.fn_batch[1],
                                                    " | shard(ctx)" if c.fn_shard else "")
    return s
