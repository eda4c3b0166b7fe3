# tests/conformance/tfdata_cases.py
#
# Seeded random tf.data pipelines, each built twice: as a tf.data.Dataset (the
# referee) and as a tpusim scenario stage list (scenarios/scenario.proto). A
# pipeline is a list of Stage objects; each knows its TF transformation, its
# scenario text and the element spec it produces, so the generator only picks
# stages that are valid for the current spec (invalid inputs are chosen on
# purpose, with a small probability, to compare the error classes).

import os
import random

import numpy as np

# ---- element specs: a list of leaves (path, dtype, shape with None for an
# unknown dimension, sparse), and the structure kind: "single", "tuple", "dict".


class Spec:
    def __init__(self, kind, leaves):
        self.kind = kind
        self.leaves = leaves  # [(key, dtype, shape, sparse)]

    def single(self):
        return self.kind == "single"

    def int_scalar(self):
        return (self.single() and self.leaves[0][1] == "int64" and self.leaves[0][2] == []
                and not self.leaves[0][3])

    def numeric(self):
        return all(l[1] in ("int64", "float32") for l in self.leaves)

    def any_sparse(self):
        return any(l[3] for l in self.leaves)

    def min_rank(self):
        return min(len(l[2]) for l in self.leaves)

    def map_shapes(self, f):
        return Spec(self.kind, [(k, d, f(s), sp) for k, d, s, sp in self.leaves])

    def string_scalar(self):
        return self.single() and self.leaves[0][1] == "string" and len(self.leaves[0][2]) <= 1


def leaf(dtype, shape):
    return Spec("single", [("0", dtype, shape, False)])


# ---- the pieces of a scenario text ----

def lit(key, dtype, shape, values, scalar=False):
    s = "component { "
    if key is not None:
        s += 'key: "%s" ' % key
    s += 'dtype: "%s" ' % dtype
    if scalar:
        s += "scalar: true "
    for d in shape:
        s += "shape: %d " % d
    if dtype == "string":
        s += "".join('string_values: "%s" ' % v for v in values)
    elif dtype in ("float32", "float64"):
        s += "".join("float_values: %r " % float(v) for v in values)
    else:
        s += "".join("int_values: %d " % v for v in values)
    return s + "}"


class Stage:
    ops = ()  # the op names this stage counts for

    def tf(self, tf, ds):
        raise NotImplementedError

    def proto(self):
        raise NotImplementedError


class Source(Stage):
    pass


class Range(Source):
    ops = ("range",)

    def __init__(self, start, stop, step):
        self.a = (start, stop, step)

    def tf(self, tf, ds):
        return tf.data.Dataset.range(*self.a)

    def proto(self):
        return "range { start: %d stop: %d step: %d }" % self.a

    def spec(self):
        return leaf("int64", [])

    def count(self):
        return len(range(*self.a))


class Slices(Source):
    """from_tensor_slices / from_tensors of literals: comps = [(key, dtype, shape, values)]."""

    def __init__(self, comps, slices=True):
        self.comps = comps
        self.slices = slices
        self.ops = ("tensor_slices",) if slices else ("from_tensors",)

    def _np(self, dtype, shape, values):
        if dtype == "string":
            return np.array([v.encode() for v in values], dtype=object).reshape(shape)
        return np.array(values, dtype=dtype).reshape(shape)

    def tf(self, tf, ds):
        make = tf.data.Dataset.from_tensor_slices if self.slices else tf.data.Dataset.from_tensors
        arrs = [self._np(d, s, v) for _, d, s, v in self.comps]
        if self.comps[0][0] is not None:
            return make({k: a for (k, _, _, _), a in zip(self.comps, arrs)})
        if len(arrs) == 1:
            return make(arrs[0])
        return make(tuple(arrs))

    def proto(self):
        name = "from_tensor_slices" if self.slices else "from_tensors"
        return "%s { %s }" % (name, " ".join(lit(k, d, s, v) for k, d, s, v in self.comps))

    def spec(self):
        drop = 1 if self.slices else 0
        kind = "dict" if self.comps[0][0] is not None else (
            "single" if len(self.comps) == 1 else "tuple")
        leaves = []
        for i, (k, d, s, _) in enumerate(sorted(self.comps, key=lambda c: c[0] or "")
                                         if kind == "dict" else self.comps):
            leaves.append((k if k is not None else str(i), d, list(s[drop:]), False))
        return Spec(kind, leaves)

    def count(self):
        return self.comps[0][2][0] if self.slices else 1


class Reader(Source):
    """tfrecord / text_line / fixed_length over explicit files (stage 0)."""

    def __init__(self, kind, files, compression="", record=(0, 0, 0), parallel=0, n=0):
        self.kind, self.files, self.compression = kind, files, compression
        self.record, self.parallel, self.n = record, parallel, n
        op = {"tfrecord": "tfrecord", "text_line": "text_lines", "fixed_length": "fixed_length"}[kind]
        self.ops = (op,) + (("tfrecord_" + compression.lower(),) if compression else ())

    def tf(self, tf, ds):
        kw = {}
        if self.parallel:
            kw["num_parallel_reads"] = self.parallel
        if self.kind == "tfrecord":
            return tf.data.TFRecordDataset(self.files, compression_type=self.compression, **kw)
        if self.kind == "text_line":
            return tf.data.TextLineDataset(self.files, **kw)
        rb, hb, fb = self.record
        return tf.data.FixedLengthRecordDataset(self.files, rb, header_bytes=hb, footer_bytes=fb, **kw)

    def proto(self):
        s = "%s { %s" % (self.kind, " ".join('file: "%s"' % f for f in self.files))
        if self.compression:
            s += ' compression_type: "%s"' % self.compression
        if self.kind == "fixed_length":
            s += " record_bytes: %d header_bytes: %d footer_bytes: %d" % self.record
        if self.parallel:
            s += " num_parallel_reads: %d" % self.parallel
        return s + " }"

    def spec(self):
        return leaf("string", [])

    def count(self):
        return self.n


class ListFiles(Source):
    ops = ("list_files",)

    def __init__(self, pattern, nfiles, shuffle=False, seed=0):
        self.pattern, self.n, self.shuffle, self.seed = pattern, nfiles, shuffle, seed

    def tf(self, tf, ds):
        return tf.data.Dataset.list_files(self.pattern, shuffle=self.shuffle, seed=self.seed)

    def proto(self):
        return 'list_files { pattern: "%s" shuffle: %s seed: %d }' % (
            self.pattern, "true" if self.shuffle else "false", self.seed)

    def spec(self):
        return leaf("string", [])

    def count(self):
        return self.n


class Zip(Source):
    ops = ("zip",)

    def __init__(self, inputs, keys=None):
        self.inputs, self.keys = inputs, keys  # inputs: lists of stages

    def tf(self, tf, ds):
        parts = [build_tf(tf, p) for p in self.inputs]
        if self.keys:
            return tf.data.Dataset.zip({k: p for k, p in zip(self.keys, parts)})
        return tf.data.Dataset.zip(tuple(parts))

    def proto(self):
        s = "zip { "
        for i, p in enumerate(self.inputs):
            s += "input { "
            if self.keys:
                s += 'key: "%s" ' % self.keys[i]
            s += " ".join("pipeline { %s }" % st.proto() for st in p) + " } "
        return s + "}"

    def spec(self):
        specs = [pipeline_spec(p) for p in self.inputs]
        if self.keys:
            order = sorted(range(len(self.keys)), key=lambda i: self.keys[i])
            return Spec("dict", [(self.keys[i], specs[i].leaves[0][1], specs[i].leaves[0][2], False)
                                 for i in order])
        return Spec("tuple", [(str(i), s.leaves[0][1], s.leaves[0][2], False)
                              for i, s in enumerate(specs)])

    def count(self):
        return min(pipeline_count(p) for p in self.inputs)


# ---- transformations: next_spec(spec) and next_count(n) ----

class Batch(Stage):
    ops = ("batch",)

    def __init__(self, b, drop):
        self.b, self.drop = b, drop

    def tf(self, tf, ds):
        return ds.batch(self.b, drop_remainder=self.drop)

    def proto(self):
        return "batch { batch_size: %d drop_remainder: %s }" % (self.b, str(self.drop).lower())

    def next_spec(self, s):
        return s.map_shapes(lambda sh: [self.b if self.drop else None] + sh)

    def next_count(self, n):
        return n // self.b if self.drop else -(-n // self.b)


class PaddedBatch(Stage):
    ops = ("padded_batch",)

    def __init__(self, b, drop, shapes, value, ncomp):
        self.b, self.drop, self.shapes, self.value = b, drop, shapes, value
        self.ncomp = ncomp

    def tf(self, tf, ds):
        kw = {}
        spec = ds.element_spec
        if self.shapes is not None:
            kw["padded_shapes"] = self.shapes[0] if not isinstance(spec, tuple) else tuple(self.shapes)
        if self.value is not None:
            if isinstance(spec, tuple):
                kw["padding_values"] = tuple(tf.constant(self.value, s.dtype) for s in spec)
            else:
                kw["padding_values"] = tf.constant(self.value, spec.dtype)
        return ds.padded_batch(self.b, drop_remainder=self.drop, **kw)

    def proto(self):
        s = "padded_batch { batch_size: %d drop_remainder: %s" % (self.b, str(self.drop).lower())
        for sh in self.shapes or []:
            s += " padded_shape { %s }" % " ".join("dim: %d" % d for d in sh)
        if self.value is not None:
            # One per component (flattened order).
            s += "".join(" padding_value: %r" % float(self.value) for _ in range(self.ncomp))
        return s + " }"

    def next_spec(self, s):
        if self.shapes is None:
            return s.map_shapes(lambda sh: [self.b if self.drop else None] + sh)
        leaves = []
        for (k, d, sh, sp), ps in zip(s.leaves, self.shapes):
            leaves.append((k, d, [self.b if self.drop else None] +
                           [None if p == -1 else p for p in ps], sp))
        return Spec(s.kind, leaves)

    def next_count(self, n):
        return n // self.b if self.drop else -(-n // self.b)


class Unbatch(Stage):
    ops = ("unbatch",)

    def __init__(self, rows):
        self.rows = rows  # an upper bound of the leading dimension

    def tf(self, tf, ds):
        return ds.unbatch()

    def proto(self):
        return "unbatch {}"

    def next_spec(self, s):
        return s.map_shapes(lambda sh: sh[1:])

    def next_count(self, n):
        return n * self.rows


def _map_fn(tf, name):
    def one(t):
        if t.dtype == tf.string:
            return t
        if name == "square":
            return t * t
        if name == "negate":
            return -t
        if name == "add_one":
            return t + tf.constant(1, t.dtype)
        return t

    def fn(*args):
        if len(args) == 1:
            return tf.nest.map_structure(one, args[0])
        return tuple(tf.nest.map_structure(one, a) for a in args)
    return fn


class Map(Stage):
    ops = ("map",)

    def __init__(self, fn, parallel=None):
        self.fn, self.parallel = fn, parallel

    def tf(self, tf, ds):
        return ds.map(_map_fn(tf, self.fn), num_parallel_calls=self.parallel)

    def proto(self):
        s = 'map { fn: "%s"' % self.fn
        if self.parallel is not None:
            s += " num_parallel_calls: %d" % self.parallel
        return s + " }"

    def next_spec(self, s):
        return s

    def next_count(self, n):
        return n


class MapAndBatch(Stage):
    ops = ("map_and_batch", "map", "batch")

    def __init__(self, fn, b, drop):
        self.fn, self.b, self.drop = fn, b, drop

    def tf(self, tf, ds):
        return ds.apply(tf.data.experimental.map_and_batch(
            _map_fn(tf, self.fn), self.b, drop_remainder=self.drop))

    def proto(self):
        return 'map_and_batch { map { fn: "%s" } batch_size: %d drop_remainder: %s }' % (
            self.fn, self.b, str(self.drop).lower())

    next_spec = Batch.next_spec
    next_count = Batch.next_count


class ParseExample(Stage):
    ops = ("parse_example",)

    # features: [(name, dtype, shape, kind)], kind in fixed_len / var_len /
    # fixed_len_sequence
    def __init__(self, features, batched):
        self.features, self.batched = features, batched
        for f in features:
            self.ops = self.ops + ("parse_" + f[3],)

    def tf(self, tf, ds):
        spec = {}
        for name, dtype, shape, kind in self.features:
            dt = getattr(tf, dtype)
            if kind == "var_len":
                spec[name] = tf.io.VarLenFeature(dt)
            elif kind == "fixed_len_sequence":
                spec[name] = tf.io.FixedLenSequenceFeature(shape, dt, allow_missing=True)
            else:
                spec[name] = tf.io.FixedLenFeature(shape, dt)
        if self.batched:
            return ds.map(lambda s: tf.io.parse_example(s, spec))
        return ds.map(lambda s: tf.io.parse_single_example(s, spec))

    def proto(self):
        s = 'map { fn: "parse_example"'
        for name, dtype, shape, kind in self.features:
            s += ' feature { name: "%s" dtype: "%s" %s kind: "%s"%s }' % (
                name, dtype, " ".join("shape: %d" % d for d in shape), kind,
                " allow_missing: true" if kind == "fixed_len_sequence" else "")
        return s + " }"

    def next_spec(self, s):
        lead = [s.leaves[0][2][0]] if self.batched else []
        leaves = []
        for name, dtype, shape, kind in sorted(self.features):
            if kind == "var_len":
                leaves.append((name, dtype, lead + [None], True))
            elif kind == "fixed_len_sequence":
                leaves.append((name, dtype, lead + [None] + list(shape), False))
            else:
                leaves.append((name, dtype, lead + list(shape), False))
        return Spec("dict", leaves)

    def next_count(self, n):
        return n


class Filter(Stage):
    ops = ("filter",)

    def __init__(self, pred):
        self.pred = pred

    def tf(self, tf, ds):
        p = self.pred
        if p == "even":
            return ds.filter(lambda x: x % 2 == 0)
        if p == "odd":
            return ds.filter(lambda x: x % 2 != 0)
        return ds.filter(lambda x: x > 0)

    def proto(self):
        return 'filter { predicate: "%s" }' % self.pred

    def next_spec(self, s):
        return s

    def next_count(self, n):
        return n


class Count(Stage):
    def __init__(self, kind, n):
        self.kind, self.n = kind, n
        self.ops = (kind,)

    def tf(self, tf, ds):
        return getattr(ds, self.kind)(self.n)

    def proto(self):
        return "%s { count: %d }" % (self.kind, self.n)

    def next_spec(self, s):
        return s

    def next_count(self, n):
        if self.kind == "take":
            return n if self.n < 0 else min(n, self.n)
        if self.kind == "skip":
            return 0 if self.n < 0 else max(0, n - self.n)
        return n * self.n  # repeat


class Shard(Stage):
    ops = ("shard",)

    def __init__(self, n, i):
        self.n, self.i = n, i

    def tf(self, tf, ds):
        return ds.shard(self.n, self.i)

    def proto(self):
        return "shard { num_shards: %d index: %d }" % (self.n, self.i)

    def next_spec(self, s):
        return s

    def next_count(self, n):
        return n


class Cache(Stage):
    ops = ("cache",)

    def tf(self, tf, ds):
        return ds.cache()

    def proto(self):
        return "cache {}"

    def next_spec(self, s):
        return s

    def next_count(self, n):
        return n


class Prefetch(Stage):
    ops = ("prefetch",)

    def __init__(self, b):
        self.b = b

    def tf(self, tf, ds):
        return ds.prefetch(self.b)

    def proto(self):
        return "prefetch { buffer_size: %d }" % self.b

    def next_spec(self, s):
        return s

    def next_count(self, n):
        return n


class Shuffle(Stage):
    ops = ("shuffle",)

    def __init__(self, b, seed, reshuffle):
        self.b, self.seed, self.reshuffle = b, seed, reshuffle

    def tf(self, tf, ds):
        return ds.shuffle(self.b, seed=self.seed, reshuffle_each_iteration=self.reshuffle)

    def proto(self):
        return "shuffle { buffer_size: %d seed: %d reshuffle_each_iteration: %s }" % (
            self.b, self.seed, str(self.reshuffle).lower())

    def next_spec(self, s):
        return s

    def next_count(self, n):
        return n


class Interleave(Stage):
    """input.interleave(lambda f: Reader(f), cycle, block) (or flat_map)."""

    def __init__(self, reader, flat, cycle=1, block=1, record=(0, 0, 0), n=0):
        self.reader, self.flat, self.cycle, self.block, self.record = reader, flat, cycle, block, record
        self.n = n
        self.ops = ("flat_map" if flat else "interleave",)

    def tf(self, tf, ds):
        rb, hb, fb = self.record
        make = {
            "tfrecord": lambda f: tf.data.TFRecordDataset(f),
            "text_line": lambda f: tf.data.TextLineDataset(f),
            "fixed_length": lambda f: tf.data.FixedLengthRecordDataset(
                f, rb, header_bytes=hb, footer_bytes=fb),
        }[self.reader]
        if self.flat:
            return ds.flat_map(make)
        return ds.interleave(make, cycle_length=self.cycle, block_length=self.block)

    def proto(self):
        name = "flat_map" if self.flat else "interleave"
        s = '%s { reader: "%s"' % (name, self.reader)
        if not self.flat:
            s += " cycle_length: %d block_length: %d" % (self.cycle, self.block)
        if self.reader == "fixed_length":
            s += " record_bytes: %d header_bytes: %d footer_bytes: %d" % self.record
        return s + " }"

    def next_spec(self, s):
        return leaf("string", [])

    def next_count(self, n):
        return self.n


class Window(Stage):
    ops = ("window",)

    def __init__(self, size, shift, stride, drop, body_batch):
        self.a = (size, shift, stride, drop)
        self.body_batch = body_batch  # None or a batch size >= size

    def tf(self, tf, ds):
        size, shift, stride, drop = self.a
        w = ds.window(size, shift=shift, stride=stride, drop_remainder=drop)
        bb = self.body_batch
        single = not isinstance(ds.element_spec, (tuple, dict))

        def body(*ws):
            if single:
                d = ws[0]
            elif isinstance(ds.element_spec, dict):
                d = tf.data.Dataset.zip(ws[0])
            else:
                d = tf.data.Dataset.zip(tuple(ws))
            return d.batch(bb) if bb else d
        return w.flat_map(body)

    def proto(self):
        size, shift, stride, drop = self.a
        s = "window { size: %d shift: %d stride: %d drop_remainder: %s" % (
            size, shift, stride, str(drop).lower())
        if self.body_batch:
            s += " flat_map { batch { batch_size: %d } }" % self.body_batch
        return s + " }"

    def next_spec(self, s):
        if self.body_batch:
            return s.map_shapes(lambda sh: [None] + sh)
        return s

    def next_count(self, n):
        size, shift, stride, drop = self.a
        windows = -(-n // shift)
        return windows if self.body_batch else windows * size


class Concatenate(Stage):
    ops = ("concatenate",)

    def __init__(self, other):
        self.other = other

    def tf(self, tf, ds):
        return ds.concatenate(build_tf(tf, self.other))

    def proto(self):
        return "concatenate { %s }" % " ".join("pipeline { %s }" % st.proto() for st in self.other)

    def next_spec(self, s):
        o = pipeline_spec(self.other)
        leaves = []
        for (k, d, sh, sp), (_, _, osh, _) in zip(s.leaves, o.leaves):
            leaves.append((k, d, [a if a == b else None for a, b in zip(sh, osh)], sp))
        return Spec(s.kind, leaves)

    def next_count(self, n):
        return n + pipeline_count(self.other)


class TfOnly(Stage):
    """A transformation no scenario can express (counts as inexpressible)."""

    def __init__(self, name):
        self.name = name
        self.ops = ()

    def next_spec(self, s):
        return s

    def next_count(self, n):
        return n


def build_tf(tf, stages):
    ds = None
    for st in stages:
        ds = st.tf(tf, ds)
    return ds


def pipeline_spec(stages):
    s = stages[0].spec()
    for st in stages[1:]:
        s = st.next_spec(s)
    return s


def pipeline_count(stages):
    n = stages[0].count()
    for st in stages[1:]:
        n = st.next_count(n)
    return n


# ---- test files (written once per run, by Python and TF's writers) ----

class Files:
    """Record files the reader sources use: TFRecord files of tf.train.Example
    (plain, GZIP, ZLIB), text files and fixed-length record files."""

    NUM = 3
    RECORDS = 5

    def __init__(self, tf, d):
        self.dir = d
        os.makedirs(d, exist_ok=True)
        self.tfrecord = {"": [], "GZIP": [], "ZLIB": []}
        for comp, ext in (("", "tfrecord"), ("GZIP", "tfrecord.gz"), ("ZLIB", "tfrecord.zz")):
            for f in range(self.NUM):
                path = os.path.join(d, "ex-%d.%s" % (f, ext))
                opts = tf.io.TFRecordOptions(compression_type=comp)
                with tf.io.TFRecordWriter(path, opts) as w:
                    for r in range(self.RECORDS):
                        w.write(self.example(tf, f * self.RECORDS + r))
                self.tfrecord[comp].append(path)
        self.text = []
        lines = [["alpha", "beta", "", "gamma delta"], ["one\r", "two", "three"], ["x" * 40, "", "y"]]
        for f, ls in enumerate(lines):
            path = os.path.join(d, "text-%d.txt" % f)
            with open(path, "wb") as o:
                body = "\n".join(ls)
                o.write((body if f == 2 else body + "\n").encode())  # file 2: no final newline
            self.text.append(path)
        self.text_count = sum(len(ls) for ls in lines)
        self.fixed = []
        self.fixed_record = (3, 2, 1)
        for f in range(self.NUM):
            path = os.path.join(d, "fixed-%d.bin" % f)
            with open(path, "wb") as o:
                o.write(b"HH" + b"".join(bytes([65 + f, 97 + r, 48 + r]) for r in range(4)) + b"F")
            self.fixed.append(path)
        self.fixed_count = 4 * self.NUM

    @staticmethod
    def example(tf, i):
        feats = {
            "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 2.0, -i / 4.0])),
            "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"n%d" % i])),
        }
        if i % 3:
            feats["tokens"] = tf.train.Feature(
                int64_list=tf.train.Int64List(value=[10 * i + j for j in range(i % 3)]))
        return tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString()


# ---- the generator ----

MAP_FNS = ["identity", "square", "negate", "add_one"]


class Generator:
    def __init__(self, seed, files):
        self.rng = random.Random(seed)
        self.files = files

    def r(self, a, b):
        return self.rng.randint(a, b)

    def chance(self, p):
        return self.rng.random() < p

    # -- sources --
    def source(self):
        f = self.files
        kind = self.rng.choice(["range", "range", "slices", "slices", "tfrecord", "tfrecord",
                                "examples", "examples", "text", "fixed", "list_files", "zip",
                                "interleave", "tensors"])
        if kind == "examples":  # TFRecord files of tf.train.Example, parsed
            comp = self.rng.choice(["", "GZIP", "ZLIB"])
            files = self.rng.sample(f.tfrecord[comp], self.r(1, f.NUM))
            stages = [Reader("tfrecord", files, comp, n=len(files) * f.RECORDS)]
            if self.chance(0.5):
                stages.append(Batch(self.r(1, 4), self.chance(0.2)))
            stages.append(self.parse(stages))
            return stages
        if kind == "range":
            step = self.rng.choice([1, 1, 1, 2, 3, -1])
            if step > 0:
                a = self.r(-3, 5)
                return [Range(a, a + self.r(0, 30), step)]
            a = self.r(5, 25)
            return [Range(a, a - self.r(0, 20), step)]
        if kind in ("slices", "tensors"):
            n = self.r(1, 12)
            which = self.rng.choice(["int", "int2", "float", "tuple", "dict", "string"])
            vals = lambda k: [self.r(-9, 20) for _ in range(k)]
            if which == "int":
                comps = [(None, "int64", [n], vals(n))]
            elif which == "int2":
                k = self.r(1, 3)
                comps = [(None, "int64", [n, k], vals(n * k))]
            elif which == "float":
                comps = [(None, "float32", [n], [self.r(-20, 20) / 4 for _ in range(n)])]
            elif which == "tuple":
                comps = [(None, "int64", [n], vals(n)),
                         (None, "float32", [n], [self.r(-8, 8) / 2 for _ in range(n)])]
            elif which == "dict":
                comps = [("b", "int64", [n], vals(n)),
                         ("a", "string", [n], ["s%d" % self.r(0, 5) for _ in range(n)])]
            else:
                comps = [(None, "string", [n], ["w%d" % self.r(0, 9) for _ in range(n)])]
            return [Slices(comps, slices=(kind == "slices"))]
        if kind == "tfrecord":
            comp = self.rng.choice(["", "GZIP", "ZLIB"])
            files = self.rng.sample(f.tfrecord[comp], self.r(1, f.NUM))
            par = self.rng.choice([0, 0, 0, 2])
            return [Reader("tfrecord", files, comp, parallel=par, n=len(files) * f.RECORDS)]
        if kind == "text":
            files = self.rng.sample(f.text, self.r(1, len(f.text)))
            return [Reader("text_line", files, n=f.text_count)]
        if kind == "fixed":
            files = self.rng.sample(f.fixed, self.r(1, len(f.fixed)))
            return [Reader("fixed_length", files, record=f.fixed_record, n=f.fixed_count)]
        if kind == "list_files":
            which = self.rng.choice(["ex-*.tfrecord", "text-*.txt", "fixed-*.bin"])
            src = ListFiles(os.path.join(f.dir, which), f.NUM)
            reader = {"ex": "tfrecord", "te": "text_line", "fi": "fixed_length"}[which[:2]]
            count = {"ex": f.NUM * f.RECORDS, "te": f.text_count, "fi": f.fixed_count}[which[:2]]
            if self.chance(0.3):
                return [src]
            if self.chance(0.5):
                return [src, Interleave(reader, True, record=f.fixed_record, n=count)]
            return [src, Interleave(reader, False, self.r(1, 4), self.r(1, 3), f.fixed_record, n=count)]
        if kind == "interleave":
            reader = self.rng.choice(["tfrecord", "text_line", "fixed_length"])
            files = {"tfrecord": f.tfrecord[""], "text_line": f.text, "fixed_length": f.fixed}[reader]
            files = self.rng.sample(files, self.r(1, len(files)))
            count = {"tfrecord": f.NUM * f.RECORDS, "text_line": f.text_count,
                     "fixed_length": f.fixed_count}[reader]
            src = Slices([(None, "string", [len(files)], files)])
            flat = self.chance(0.4)
            return [src, Interleave(reader, flat, self.r(1, 4), self.r(1, 3), f.fixed_record, n=count)]
        # zip
        k = self.r(2, 3)
        inputs = []
        for _ in range(k):
            a = self.r(0, 10)
            p = [Range(a, a + self.r(1, 15), 1)]
            if self.chance(0.4):
                p.append(Map(self.rng.choice(MAP_FNS)))
            inputs.append(p)
        keys = ["k%d" % i for i in self.rng.sample(range(5), k)] if self.chance(0.4) else None
        return [Zip(inputs, keys)]

    # -- one transformation valid for `spec` (None: none fits) --
    def transform(self, stages, spec, n):
        choices = ["batch", "batch", "take", "skip", "repeat", "shard", "cache", "prefetch",
                   "map", "map_and_batch", "padded_batch", "window"]
        if self.chance(0.012):
            choices = ["tf_only"]
        # TF 2.21 crashes (SIGSEGV) in unbatch of a tensor with a zero-sized
        # inner dimension, e.g. from_tensors(np.zeros((1, 0))).unbatch(): no
        # unbatch after a parse that can make one (a FixedLenSequence).
        zero_inner = any(isinstance(st, ParseExample) and
                         any(f[3] == "fixed_len_sequence" for f in st.features) for st in stages)
        if spec.min_rank() >= 1 and not spec.any_sparse() and not zero_inner:
            choices += ["unbatch", "unbatch"]
        if spec.int_scalar():
            choices += ["filter", "filter", "filter", "concatenate", "concatenate"]
        if spec.string_scalar() and self._is_examples(stages):
            choices += ["parse", "parse", "parse"]
        op = self.rng.choice(choices)
        if op == "batch":
            return Batch(self.r(1, 6), self.chance(0.3))
        if op == "take":
            return Count("take", self.rng.choice([-1, 0, 1, 2, 3, 5, 8, 13]))
        if op == "skip":
            return Count("skip", self.rng.choice([-1, 0, 1, 2, 3, 5]))
        if op == "repeat":
            if n > 60:
                return Count("take", self.r(0, 20))
            return Count("repeat", self.r(0, 3))
        if op == "shard":
            k = self.r(1, 4)
            return Shard(k, self.r(0, k - 1))
        if op == "cache":
            return Cache()
        if op == "prefetch":
            return Prefetch(self.rng.choice([-1, 0, 1, 2, 8]))
        if op == "map":
            if spec.any_sparse() or not spec.numeric():
                return Map("identity")
            return Map(self.rng.choice(MAP_FNS), self.rng.choice([None, None, 2, -1]))
        if op == "map_and_batch":
            if spec.any_sparse():
                return Batch(self.r(1, 5), False)
            if not spec.numeric():
                return MapAndBatch("identity", self.r(1, 5), self.chance(0.3))
            return MapAndBatch(self.rng.choice(MAP_FNS), self.r(1, 5), self.chance(0.3))
        if op == "padded_batch":
            if spec.any_sparse() or spec.kind == "dict" or not spec.numeric():
                return Batch(self.r(1, 5), self.chance(0.2))
            shapes = None
            if self.chance(0.5):
                shapes = []
                for _, _, sh, _ in spec.leaves:
                    # An unknown dimension padded to a small fixed size can be
                    # smaller than an element (an error TF raises at run time).
                    shapes.append([(self.r(1, 2) if self.chance(0.15) else -1) if d is None
                                   else (-1 if self.chance(0.5) else d + self.r(0, 2))
                                   for d in sh])
            value = self.rng.choice([None, -1, 7])
            return PaddedBatch(self.r(1, 4), self.chance(0.2), shapes, value, len(spec.leaves))
        if op == "window":
            if spec.any_sparse():
                return Prefetch(1)
            size = self.r(1, 4)
            bb = None if self.chance(0.4) else size + self.r(0, 1)
            return Window(size, self.r(1, 4), self.r(1, 2), self.chance(0.3), bb)
        if op == "unbatch":
            rows = 1
            for st in stages:
                if isinstance(st, (Batch, PaddedBatch, MapAndBatch)):
                    rows = max(rows, st.b)
                if isinstance(st, Window) and st.body_batch:
                    rows = max(rows, st.body_batch)
            for _, _, sh, _ in spec.leaves:
                if sh and sh[0] is not None:
                    rows = max(rows, sh[0])
            if isinstance(stages[0], Slices) and stages[0].comps[0][2][1:]:
                rows = max(rows, max(stages[0].comps[0][2][1:]))
            return Unbatch(rows)
        if op == "filter":
            return Filter(self.rng.choice(["even", "odd", "positive"]))
        if op == "concatenate":
            a = self.r(-5, 10)
            return Concatenate([Range(a, a + self.r(0, 8), 1)])
        if op == "parse":
            return self.parse(stages)
        return TfOnly(self.rng.choice(["enumerate", "map(lambda x: x * 3)", "scan", "take_while"]))

    def parse(self, stages):
        spec = pipeline_spec(stages)
        if True:
            feats = []
            pool = [("id", "int64", [], "fixed_len"), ("x", "float32", [2], "fixed_len"),
                    ("name", "string", [], "fixed_len"), ("tokens", "int64", [], "var_len"),
                    ("tokens", "int64", [], "fixed_len_sequence"), ("x", "float32", [], "var_len"),
                    ("id", "int64", [], "var_len")]
            used = set()
            for _ in range(self.r(1, 3)):
                f = self.rng.choice(pool)
                if f[0] not in used:
                    used.add(f[0])
                    feats.append(f)
            if self.chance(0.06):  # an invalid spec: a FixedLen over a feature of other length
                feats = [("tokens", "int64", [], "fixed_len")]
            return ParseExample(feats, batched=bool(spec.leaves[0][2]))

    @staticmethod
    def _is_examples(stages):
        s0 = stages[0]
        if isinstance(s0, Reader) and s0.kind == "tfrecord":
            pass
        elif isinstance(s0, ListFiles) and len(stages) > 1 and getattr(stages[1], "reader", None) == "tfrecord":
            pass
        elif (isinstance(s0, Slices) and len(stages) > 1 and isinstance(stages[1], Interleave)
              and stages[1].reader == "tfrecord"):
            pass
        else:
            return False
        # Only ops that keep records whole since the source.
        return all(isinstance(st, (Count, Shard, Cache, Prefetch, Shuffle, Interleave, Batch))
                   for st in stages[1:]) and sum(isinstance(st, Batch) for st in stages) <= 1

    def pipeline(self):
        stages = self.source()
        spec = pipeline_spec(stages)
        n = pipeline_count(stages)
        for _ in range(self.r(1, 5)):
            st = self.transform(stages, spec, n)
            stages.append(st)
            spec = st.next_spec(spec)
            n = st.next_count(n)
            if n > 150:
                stages.append(Count("take", self.r(20, 60)))
                n = stages[-1].next_count(n)
        return stages

    def shuffle_case(self):
        """(prefix stages, shuffle stage, epochs): the prefix is deterministic."""
        f = self.files
        if self.chance(0.35):
            prefix = [ListFiles(os.path.join(f.dir, self.rng.choice(
                ["ex-*.tfrecord", "text-*.txt", "fixed-*.bin"])), f.NUM,
                shuffle=True, seed=self.r(0, 1000))]
            return prefix, None, 1
        while True:
            prefix = self.pipeline()
            if not any(isinstance(s, TfOnly) for s in prefix) and pipeline_count(prefix) <= 60:
                break
        sh = Shuffle(self.rng.choice([1, 2, 3, 5, 8, 64]), self.r(0, 2 ** 31), self.chance(0.7))
        return prefix, sh, self.r(1, 3)


def scenario_text(stages, name, tail=()):
    lines = ['name: "%s"' % name, "cluster { workers: 1 replicas_per_worker: 1 }",
             "api: DISTRIBUTE_DATASETS_FROM_FUNCTION"]
    for st in list(stages) + list(tail):
        lines.append("pipeline { %s }" % st.proto())
    return "\n".join(lines) + "\n"


def describe(stages):
    """The pipeline as one line of tf.data-like text (for reproducers)."""
    return " | ".join(st.proto() for st in stages)
