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
    def __init__(self, id, status, what, reproducer, match):
        self.id, self.status, self.what, self.reproducer = id, status, what, reproducer
        self.match = match
        self.fixed = False


def _has(stages, cls, pred=lambda s: True):
    return any(isinstance(s, cls) and pred(s) for s in stages)


ENTRIES = []


def classify(suite, stages, problem):
    for k in ENTRIES:
        if k.match(suite, stages, problem):
            return k
    return None


def expect_fixed(ids):
    for i in ids:
        found = [k for k in ENTRIES if k.id == i]
        if not found:
            raise SystemExit("--expect-fixed=%s: no such known difference (have %s)"
                             % (i, ", ".join(k.id for k in ENTRIES)))
        found[0].fixed = True
