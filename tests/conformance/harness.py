# tests/conformance/harness.py
#
# The shared part of the differential suite against real TensorFlow
# (tests/conformance/README.md): the TensorFlow check, running tpusim's
# `inspect-input --batch --format=json` on many scenarios in few processes,
# turning a TF element into tpusim's JSON component form, and comparing them.

import json
import os
import subprocess
import sys

PINNED_TF = "2.21.0"

# ctest's SKIP_RETURN_CODE for this suite (tests/conformance/CMakeLists.txt).
SKIP = 77


def in_ci():
    return os.environ.get("CI", "").lower() == "true"


def import_tf(logical_cpus=8):
    """Imports TensorFlow with `logical_cpus` logical CPU devices (fixed once TF
    starts), or exits: SKIP with the reason outside CI, 1 in CI (CI=true), when
    TF is missing or not the pinned version."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf  # noqa: F401
    except Exception as e:  # ImportError, or a broken install
        reason = "TensorFlow is not importable (%s: %s); run tools/setup.sh" % (
            type(e).__name__, e)
        return fail_or_skip(reason)
    if tf.__version__ != PINNED_TF:
        return fail_or_skip("TensorFlow %s is installed, the suite is pinned to %s "
                            "(tools/requirements.txt)" % (tf.__version__, PINNED_TF))
    tf.get_logger().setLevel("ERROR")
    tf.autograph.set_verbosity(0)
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpus[0], [tf.config.LogicalDeviceConfiguration()] * logical_cpus)
    return tf


class QuietStderr:
    """Sends fd 2 to a file while TF runs (its C++ logs the rewritten graphs)."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        self.f = open(self.path, "ab")
        os.dup2(self.f.fileno(), 2)
        # Python's own messages (tracebacks) still reach the real stderr.
        self.py = sys.stderr
        sys.stderr = os.fdopen(os.dup(self.saved), "w", buffering=1)

    def __exit__(self, *a):
        sys.stderr.flush()
        sys.stderr.close()
        sys.stderr = self.py
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.f.close()


def fail_or_skip(reason):
    if in_ci():
        print("conformance: FAIL: " + reason + " (CI=true: TF is required)")
        sys.exit(1)
    print("conformance: SKIP: " + reason)
    sys.exit(SKIP)


def run_tpusim_batch(tpusim, paths, workdir, tag, steps, processes=2):
    """Starts `processes` tpusim processes over `paths` (contiguous chunks);
    returns a function that waits and gives {path: result object}."""
    procs = []
    n = len(paths)
    if n == 0:
        return lambda: {}
    per = (n + processes - 1) // processes
    for p in range(processes):
        chunk = paths[p * per:(p + 1) * per]
        if not chunk:
            continue
        lst = os.path.join(workdir, "%s-%d.list" % (tag, p))
        with open(lst, "w") as f:
            f.write("\n".join(chunk) + "\n")
        out = open(os.path.join(workdir, "%s-%d.json" % (tag, p)), "w+")
        err = open(os.path.join(workdir, "%s-%d.err" % (tag, p)), "w+")
        cmd = [tpusim, "inspect-input", lst, "--batch", "--format=json",
               "--steps", str(steps), "--data-dir", os.path.join(workdir, "data")]
        procs.append((subprocess.Popen(cmd, stdout=out, stderr=err), out, err, cmd))

    def wait():
        results = {}
        for proc, out, err, cmd in procs:
            rc = proc.wait()
            out.seek(0)
            err.seek(0)
            if rc != 0:
                raise RuntimeError("%s exited %d: %s" % (" ".join(cmd), rc, err.read()))
            for item in json.load(out):
                results[item["scenario"]] = item
        return results
    return wait


# ---- TF elements in tpusim's JSON component form ----

def _value_list(np, arr):
    if isinstance(arr, bytes):  # a string scalar (np.asarray would drop trailing NULs)
        return [arr]
    arr = np.asarray(arr)
    if arr.dtype.kind in "SOU":
        return [bytes(x) for x in arr.reshape(-1).tolist()]
    if arr.dtype.kind == "f":
        return [float(x) for x in arr.reshape(-1).tolist()]
    return [int(x) for x in arr.reshape(-1).tolist()]


def tf_components(tf, element):
    """[(path, dtype, shape, values, sparse_indices or None)] in tf.nest order;
    paths as tpusim prints them ("0" for a single tensor)."""
    import numpy as np
    from tensorflow.python.util import nest
    out = []
    for path, t in nest.flatten_with_joined_string_paths(element):
        if path == "":
            path = "0"
        if isinstance(t, tf.SparseTensor):
            out.append((path, t.dtype.name, [int(d) for d in t.dense_shape.numpy()],
                        _value_list(np, t.values.numpy()),
                        [[int(i) for i in row] for row in t.indices.numpy().tolist()]))
        else:
            a = t.numpy()
            out.append((path, t.dtype.name, list(np.shape(a)), _value_list(np, a), None))
    return out


def _f32(x):
    import numpy as np
    return float(np.float32(x))


def json_components(components):
    """tpusim's JSON components in the same form as tf_components."""
    out = []
    for c in components:
        vals = c["values"]
        if c["dtype"] == "string":
            vals = [v.encode("utf-8", "surrogateescape") for v in vals]
        elif c["dtype"] in ("float32", "bfloat16"):
            vals = [_f32(v) if not isinstance(v, str) else float(v.replace("Infinity", "inf"))
                    for v in vals]
        elif c["dtype"] == "float64":
            vals = [float(v) if not isinstance(v, str) else float(v.replace("Infinity", "inf"))
                    for v in vals]
        out.append((c["path"], c["dtype"], list(c["shape"]), vals,
                    c.get("indices") if c.get("sparse") else None))
    return out


def same_components(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[:3] != y[:3] or x[4] != y[4] or len(x[3]) != len(y[3]):
            return False
        for u, v in zip(x[3], y[3]):
            if u != v and not (u != u and v != v):  # NaN == NaN here
                return False
    return True


def brief(components, limit=6):
    parts = []
    for path, dtype, shape, vals, idx in components:
        v = vals if len(vals) <= limit else vals[:limit] + ["..."]
        parts.append("%s:%s%s=%s%s" % (path, dtype, shape, v, " sparse" if idx is not None else ""))
    return "{" + ", ".join(parts) + "}"


# TF exception class -> absl code name (spec "tpusim conventions": error codes).
def tf_error_code(tf, e):
    if isinstance(e, tf.errors.OpError):
        return {
            tf.errors.InvalidArgumentError: "INVALID_ARGUMENT",
            tf.errors.OutOfRangeError: "OUT_OF_RANGE",
            tf.errors.NotFoundError: "NOT_FOUND",
            tf.errors.DataLossError: "DATA_LOSS",
            tf.errors.FailedPreconditionError: "FAILED_PRECONDITION",
            tf.errors.ResourceExhaustedError: "RESOURCE_EXHAUSTED",
            tf.errors.UnimplementedError: "UNIMPLEMENTED",
            tf.errors.InternalError: "INTERNAL",
        }.get(type(e), type(e).__name__)
    if isinstance(e, (ValueError, TypeError, AssertionError)):
        return "INVALID_ARGUMENT"
    if isinstance(e, NotImplementedError):
        return "UNIMPLEMENTED"
    if isinstance(e, RuntimeError):
        return "FAILED_PRECONDITION"
    return type(e).__name__
