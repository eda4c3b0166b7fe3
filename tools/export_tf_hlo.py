#!/usr/bin/env python3
"""Exports a small TensorFlow training step as a serialized HloModuleProto.

This is how scenarios/run/programs/mlp_train_step_tf.hlo.pb was made: a
tf.function MLP training step (forward, mean-squared-error loss, gradients by
tf.GradientTape, SGD) compiled by XLA's front end for its argument shapes, and
written with experimental_get_compiler_ir(...)(stage='hlo_serialized'), the
PJRT format "hlo" that `tpusim run --compiler xla-tpu` reads as run.program
(docs/xla-tpu.md, "Your own program"). The module has no shardings, so tpusim
replicates it over the slice's devices; each replica trains on its own batch
of 128 examples (the step has no cross-replica reduction).

  $(tools/pyenv.sh)/bin/python tools/export_tf_hlo.py OUT.hlo.pb [--text]

--text also prints the module as HLO text (stage='hlo') to stdout.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

BATCH, IN, HIDDEN, OUT = 128, 256, 1024, 256
LEARNING_RATE = 0.01


@tf.function(jit_compile=True)
def train_step(w1, b1, w2, b2, x, y):
  with tf.GradientTape() as tape:
    tape.watch([w1, b1, w2, b2])
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    pred = tf.matmul(h, w2) + b2
    loss = tf.reduce_mean(tf.square(pred - y))
  grads = tape.gradient(loss, [w1, b1, w2, b2])
  new = [p - LEARNING_RATE * g for p, g in zip([w1, b1, w2, b2], grads)]
  return (*new, loss)


def main(argv):
  if len(argv) < 2 or argv[1].startswith("-"):
    print(__doc__, file=sys.stderr)
    return 2
  specs = [
      tf.TensorSpec([IN, HIDDEN], tf.float32),
      tf.TensorSpec([HIDDEN], tf.float32),
      tf.TensorSpec([HIDDEN, OUT], tf.float32),
      tf.TensorSpec([OUT], tf.float32),
      tf.TensorSpec([BATCH, IN], tf.float32),
      tf.TensorSpec([BATCH, OUT], tf.float32),
  ]
  args = [tf.zeros(s.shape, s.dtype) for s in specs]
  ir = train_step.experimental_get_compiler_ir(*args)
  module = ir(stage="hlo_serialized")
  # The instructions' metadata names this machine's TensorFlow source files;
  # dropped, so the file is the same wherever it is exported.
  from tensorflow.compiler.xla.service import hlo_pb2  # pylint: disable=g-import-not-at-top
  proto = hlo_pb2.HloModuleProto.FromString(module)
  for computation in proto.computations:
    for instruction in computation.instructions:
      instruction.ClearField("metadata")
  proto.ClearField("stack_frame_index")
  module = proto.SerializeToString(deterministic=True)
  with open(argv[1], "wb") as f:
    f.write(module)
  if "--text" in argv[2:]:
    print(ir(stage="hlo"))
  print(f"wrote {argv[1]}: {len(module)} bytes", file=sys.stderr)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
