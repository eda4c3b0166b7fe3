#!/usr/bin/env python3
"""json_keys_check.py TPUSIM ROOT: runs every `--format=json` output of the CLI
and passes when each key is snake_case (lower-case letters, digits and '_':
no spaces, no units in parentheses) and no concept is spelled two ways across
the outputs (utilisation/utilization, colour/color, ...)."""
import json
import re
import subprocess
import sys

tpusim, root = sys.argv[1], sys.argv[2]
S = root + "/scenarios/"
COMMANDS = [
    ["presets", "--format=json"],
    ["inspect-input", S + "default.textproto", "--steps", "1", "--format=json"],
    ["collective", "--slice", "v4-16", "--format=json"],
    ["run", S + "run/quickstart.textproto", "--format=json"],
    ["run", S + "run/model_parallel_v3_8.textproto", "--format=json"],
    ["run", S + "run/partial_batch_mean.textproto", "--format=json"],
    ["sweep", S + "run/quickstart.textproto", "--set", "run.steps=1,2",
     "--format=json", "--jobs=1"],
    ["compile", S + "run/quickstart.textproto", "--format=json"],
    ["validate", "--format=json"],
]
KEY = re.compile(r"^[a-z][a-z0-9_]*$")
# British spellings next to the American ones the outputs use.
VARIANTS = [("isation", "ization"), ("ise_", "ize_"), ("colour", "color"),
            ("behaviour", "behavior")]


def keys(value, path, out):
    if isinstance(value, dict):
        for k, v in value.items():
            out.append((k, path))
            keys(v, path + "." + k, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, path + "[]", out)


def normal(key):
    k = key
    for brit, us in VARIANTS:
        k = k.replace(brit, us)
    return k


status = 0
spelled = {}  # normalised key -> (key, command)
for args in COMMANDS:
    run = subprocess.run([tpusim] + args, capture_output=True, text=True)
    if run.returncode != 0:
        print("FAIL: exit %d from tpusim %s: %s" % (run.returncode, " ".join(args),
                                                   run.stderr.strip()))
        status = 1
        continue
    found = []
    keys(json.loads(run.stdout), "", found)
    for key, path in found:
        if not KEY.match(key):
            print("FAIL: tpusim %s: key %r at %s is not snake_case" % (args[0], key,
                                                                       path or "."))
            status = 1
        n = normal(key)
        if n in spelled and spelled[n][0] != key:
            print("FAIL: %r (tpusim %s) and %r (tpusim %s) spell one key two ways" %
                  (key, args[0], spelled[n][0], spelled[n][1]))
            status = 1
        spelled.setdefault(n, (key, args[0]))
    print("tpusim %s: %d keys checked" % (" ".join(a.replace(root + "/", "") for a in args),
                                        len(found)))
sys.exit(status)
