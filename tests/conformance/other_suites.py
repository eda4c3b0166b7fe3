# tests/conformance/other_suites.py
#
# The parts of the differential suite that are not input listings:
# * devassign: DeviceAssignment.build on TF Topology objects (rank 4, as TF
#   2.21 has it: v2/v3 shapes [x, y, 1, 2], v4 shapes [x, y, z, 1], holes =
#   whole hosts missing) against tpusim's DeviceAssignment::Build (the C++
#   driver): core assignment, replica -> host (task) and TPU ordinal, errors.
# * reduce: strategy.reduce(SUM|MEAN, value, axis) on MirroredStrategy over N
#   logical CPUs with per-replica batches of different sizes (partial and
#   empty), against tpusim's ReduceOnHost: exact for integers, within a
#   per-dtype tolerance for floats.
# * interop: TFRecord/Example files tpusim writes (file_set, plain, GZIP,
#   ZLIB) read and parsed by TF; the ConfigProto of update_config_proto
#   parsed by TF's config_pb2; from_generator (C++ API only) against
#   tf.data.Dataset.from_generator. (Files TF writes, read by tpusim, are the
#   TFRecord sources of the tf.data part.)

import collections
import glob
import json
import os
import random
import subprocess

import numpy as np

import harness
import known


def driver(path, lines):
    p = subprocess.run([path], input="\n".join(lines) + "\n", capture_output=True, text=True,
                       check=True)
    return [json.loads(l) for l in p.stdout.splitlines()]


# ---- device assignment ----

def topology_case(rng):
    """(mesh, coords[task][device][4]) following tpusim's host-block convention."""
    gen = rng.choice(["v3", "v3", "v4", "v4"])
    if gen == "v3":
        x, y = rng.choice([(2, 2), (4, 2), (2, 4), (4, 4), (8, 4)])
        mesh, cores = [x, y, 1, 2], 2
    else:
        x, y, z = rng.choice([(2, 2, 1), (2, 2, 2), (2, 2, 4), (4, 2, 2), (4, 4, 2), (4, 4, 4)])
        mesh, cores = [x, y, z, 1], 1
    bx, by = min(2, mesh[0]), min(2, mesh[1])
    tasks = []
    for zz in range(mesh[2]):
        for y0 in range(0, mesh[1], by):
            for x0 in range(0, mesh[0], bx):
                devs = []
                for d in range(bx * by * cores):
                    c, core = d // cores, d % cores
                    devs.append([x0 + c % bx, y0 + c // bx, zz, core])
                tasks.append(devs)
    holes = False
    if len(tasks) > 1 and rng.random() < 0.25:
        drop = rng.randrange(len(tasks))
        tasks = [t for i, t in enumerate(tasks) if i != drop]
        holes = True
    return mesh, tasks, holes


def da_cases(rng, n):
    out = []
    for _ in range(n):
        mesh, tasks, holes = topology_case(rng)
        shape = [rng.choice([1, 1, 2]) if m >= 2 else 1 for m in mesh]
        if rng.random() < 0.2:
            shape = []
        stride = [] if rng.random() < 0.8 else [rng.choice([1, 2]) if m >= 4 else 1 for m in mesh]
        total = sum(len(t) for t in tasks)
        per = int(np.prod(shape)) if shape else 1
        nrep = rng.choice([0, 1, 2, max(1, total // per), max(1, total // per // 2),
                           total // per + 1])
        out.append((mesh, tasks, shape, stride, nrep, holes))
    return out


def tf_da(tf, case):
    from tensorflow.python.tpu import device_assignment as da_lib
    from tensorflow.python.tpu import topology as topo_lib
    mesh, tasks, shape, stride, nrep, _ = case
    try:
        topo = topo_lib.Topology(mesh_shape=mesh, device_coordinates=np.array(tasks, np.int32))
        da = da_lib.DeviceAssignment.build(topo, computation_shape=shape or None,
                                           computation_stride=stride or None,
                                           num_replicas=nrep)
        ca = da.core_assignment.tolist()
        t = [[int(da.host_device(r, k).split("task:")[1].split("/")[0])
              for k in range(da.num_cores_per_replica)] for r in range(da.num_replicas)]
        o = [[int(da.tpu_ordinal(r, k)) for k in range(da.num_cores_per_replica)]
             for r in range(da.num_replicas)]
        return {"ok": True, "assignment": ca, "tasks": t, "ordinals": o}
    except Exception as e:  # noqa: BLE001
        return {"ok": False, "code": harness.tf_error_code(tf, e), "message": str(e)[:200]}


def run_devassign(tf, drv, rng, counts, diffs):
    cases = da_cases(rng, 300)
    lines = ["da %s|%s|%s|%s|%d" % (",".join(map(str, m)),
                                    ";".join(" ".join(",".join(map(str, c)) for c in t) for t in ts),
                                    ",".join(map(str, s)), ",".join(map(str, st)), n)
             for m, ts, s, st, n, _ in cases]
    got = driver(drv, lines)
    for case, line, g in zip(cases, lines, got):
        counts["generated"] += 1
        counts["converted"] += 1
        w = tf_da(tf, case)
        same = (w["ok"] == g["ok"]) and (not w["ok"] and w["code"] == g["code"] or w["ok"] and all(
            w[k] == g[k] for k in ("assignment", "tasks", "ordinals")))
        if same:
            counts["matched"] += 1
            counts["holes" if case[5] else "full"] += 1
        else:
            counts["different"] += 1
            diffs.append((None, "devassign", line, "TF %s, tpusim %s" % (
                json.dumps(w)[:300], json.dumps(g)[:300])))


# ---- reduce ----

def run_reduce(tf, drv, rng, counts, diffs):
    strategies = {}
    lines, cases = [], []
    for _ in range(200):
        n = rng.randint(1, 8)
        dtype = rng.choice(["float32", "float64", "int32", "int64"])
        op = rng.choice(["SUM", "MEAN"])
        cols = rng.choice([0, 0, 2])
        axis = rng.choice([None, 0, 0] + ([1, -1] if cols else [-1]))
        if axis is None:
            rows = [rng.randint(0, 3)] * n
        else:
            rows = [rng.choice([0, 1, 2, 3, 4]) for _ in range(n)]
        vals = []
        for r in rows:
            k = r * (cols or 1)
            if dtype.startswith("float"):
                vals.append([rng.randint(-40, 40) / 8 for _ in range(k)])
            else:
                vals.append([rng.randint(-50, 50) for _ in range(k)])
        shapes = [[r, cols] if cols else [r] for r in rows]
        cases.append((n, dtype, op, axis, shapes, vals))
        lines.append("reduce %s|%s|%s|%s" % (op, "none" if axis is None else axis, dtype, ";".join(
            "%s:%s" % ("x".join(map(str, s)), ",".join(repr(v) for v in vs))
            for s, vs in zip(shapes, vals))))
    got = driver(drv, lines)
    for case, line, g in zip(cases, lines, got):
        n, dtype, op, axis, shapes, vals = case
        counts["generated"] += 1
        counts["converted"] += 1
        if n not in strategies:
            strategies[n] = tf.distribute.MirroredStrategy(["/device:CPU:%d" % d for d in range(n)])
        s = strategies[n]
        try:
            v = s.experimental_distribute_values_from_function(
                lambda ctx: tf.constant(np.array(vals[ctx.replica_id_in_sync_group], dtype)
                                        .reshape(shapes[ctx.replica_id_in_sync_group])))
            r = s.reduce(op, v, axis=axis)
            w = {"ok": True, "dtype": r.dtype.name, "shape": list(r.shape),
                 "values": np.asarray(r).reshape(-1).tolist()}
        except Exception as e:  # noqa: BLE001
            w = {"ok": False, "code": harness.tf_error_code(tf, e), "message": str(e)[:200]}
        same = w["ok"] == g["ok"]
        if same and w["ok"]:
            same = w["dtype"] == g["dtype"] and w["shape"] == g["shape"] and \
                len(w["values"]) == len(g["values"])
            tol = {"float32": 1e-6, "float64": 1e-12}.get(w["dtype"], 0)
            for a, b in zip(w["values"], g["values"]):
                a, b = float(a), float(b)
                if not (a == b or (a != a and b != b) or abs(a - b) <= tol * max(1, abs(a))):
                    same = False
        elif same:
            same = w["code"] == g["code"]
        if same:
            counts["matched"] += 1
            if any(len(x) == 0 for x in vals):
                counts["with_empty_replica"] += 1
            if len(set(tuple(x) for x in shapes)) > 1:
                counts["with_partial_batches"] += 1
        else:
            problem = "TF %s, tpusim %s" % (json.dumps(w)[:300], json.dumps(g)[:300])
            k = known.classify("reduce", line, problem)
            if k is not None and not k.fixed:
                counts["known:" + k.id] += 1
            else:
                counts["different"] += 1
            diffs.append((k.id if k else None, "reduce", line, problem))


# ---- interop ----

def run_interop(tf, tpusim, drv, workdir, rng, counts, diffs):
    from tensorflow.core.protobuf import config_pb2
    # 1. update_config_proto's ConfigProto in TF's own config_pb2.
    for slice_name, hosts in (("v3-8", 1), ("v3-32", 4), ("v4-16", 2), ("v2-512", 64)):
        counts["generated"] += 1
        counts["converted"] += 1
        g = driver(drv, ["config " + slice_name])[0]
        c = config_pb2.ConfigProto()
        c.ParseFromString(bytes.fromhex(g["hex"]))
        jobs = {j.name: dict(j.tasks) for j in c.cluster_def.job}
        want = {"worker": {i: "tpu-worker-%d:8470" % i for i in range(hosts)}}
        if c.isolate_session_state and jobs == want:
            counts["matched"] += 1
        else:
            counts["different"] += 1
            diffs.append((None, "interop", "config " + slice_name,
                          "TF parses isolate_session_state=%s jobs=%s" % (c.isolate_session_state, jobs)))
    # 2. TFRecord files of tf.train.Example that tpusim writes, read by TF.
    d = os.path.join(workdir, "interop")
    os.makedirs(d, exist_ok=True)
    paths, sets = [], []
    for i, comp in enumerate(["", "GZIP", "ZLIB", "", "GZIP", "ZLIB"]):
        nf, rpf = rng.randint(1, 3), rng.randint(0, 6)
        name = "interop%d" % i
        path = os.path.join(d, name + ".textproto")
        with open(path, "w") as f:
            f.write('name: "%s"\ncluster { workers: 1 replicas_per_worker: 1 }\n'
                    "api: DISTRIBUTE_DATASETS_FROM_FUNCTION\n"
                    'file_set { name: "%s" num_files: %d records_per_file: %d float_feature: true '
                    'label_feature: true varlen_feature: true compression_type: "%s" }\n'
                    'pipeline { tfrecord { file_set: "%s" compression_type: "%s" } }\n'
                    % (name, name, nf, rpf, comp, name, comp))
        paths.append(path)
        sets.append((name, nf, rpf, comp))
    got = harness.run_tpusim_batch(tpusim, paths, workdir, "interop", 1000, processes=1)()
    feats = {"id": tf.io.FixedLenFeature([], tf.int64), "file": tf.io.FixedLenFeature([], tf.int64),
             "x": tf.io.FixedLenFeature([], tf.float32), "y": tf.io.FixedLenFeature([], tf.float32),
             "tokens": tf.io.VarLenFeature(tf.int64)}
    for path, (name, nf, rpf, comp) in zip(paths, sets):
        counts["generated"] += 1
        counts["converted"] += 1
        files = sorted(glob.glob(os.path.join(workdir, "data", "**", "%s-*.tfrecord" % name),
                                 recursive=True))
        problem = None
        if len(files) != nf:
            problem = "found %d files of set %s, expected %d" % (len(files), name, nf)
        else:
            try:
                recs = [r.numpy() for r in tf.data.TFRecordDataset(files, compression_type=comp)]
                tp = got[path]["listing"]["steps"]
                tp_recs = [s["replicas"][0]["components"][0]["values"][0].encode(
                    "utf-8", "surrogateescape") for s in tp]
                if recs != tp_recs:
                    problem = "TF reads other records than tpusim lists"
                for f in range(nf):
                    for r in range(rpf):
                        ex = tf.io.parse_single_example(recs[f * rpf + r], feats)
                        i = f * rpf + r
                        want = (i, f, i / 2, i % 4, [10 * i + j for j in range(i % 4)])
                        have = (int(ex["id"]), int(ex["file"]), float(ex["x"]), float(ex["y"]),
                                ex["tokens"].values.numpy().tolist())
                        if want != have and problem is None:
                            problem = "record %d: TF parses %s, the file set defines %s" % (i, have, want)
            except Exception as e:  # noqa: BLE001
                problem = "TF cannot read the files: %s: %s" % (type(e).__name__, str(e)[:200])
        if problem is None:
            counts["matched"] += 1
        else:
            counts["different"] += 1
            diffs.append((None, "interop", path, problem))
    # 3. from_generator (C++ API only) against tf.data.Dataset.from_generator.
    gcases = []
    for _ in range(60):
        a = rng.randint(-3, 10)
        gcases.append((a, a + rng.randint(0, 12), rng.choice([0, 1, 3]), rng.choice([0, 1, 2, 5])))
    got = driver(drv, ["generator %d|%d|%d|%d" % c for c in gcases])
    for c, g in zip(gcases, got):
        a, b, width, batch = c
        counts["generated"] += 1
        counts["converted"] += 1

        def gen(a=a, b=b, width=width):
            for i in range(a, b):
                yield np.int64(i) if width == 0 else np.arange(i, i + width, dtype=np.int64)
        ds = tf.data.Dataset.from_generator(
            gen, output_signature=tf.TensorSpec([] if width == 0 else [width], tf.int64))
        if batch:
            ds = ds.batch(batch)
        want = [{"dtype": "int64", "shape": list(e.shape), "values": e.numpy().reshape(-1).tolist()}
                for e in ds]
        if g.get("ok") and g["elements"] == want:
            counts["matched"] += 1
            counts["generator"] += 1
        else:
            counts["different"] += 1
            diffs.append((None, "interop", "generator %d|%d|%d|%d" % c,
                          "TF %s, tpusim %s" % (str(want)[:200], str(g)[:200])))


def run(part, tf, tpusim, drv, workdir, seed):
    counts = collections.Counter()
    diffs = []
    if not drv:
        raise SystemExit("--driver (tpusim_conformance_driver) is needed for part %s" % part)
    rng = random.Random(seed * 104729 + len(part))
    if part == "devassign":
        run_devassign(tf, drv, rng, counts, diffs)
    elif part == "reduce":
        run_reduce(tf, drv, rng, counts, diffs)
    else:
        run_interop(tf, tpusim, drv, workdir, rng, counts, diffs)
    # (kid, path, stages-or-text, problem) as the other parts report them.
    return counts, None, [(k, p, s, prob) for k, p, s, prob in diffs]
