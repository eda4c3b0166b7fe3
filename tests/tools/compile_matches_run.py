#!/usr/bin/env python3
"""compile_matches_run.py TPUSIM SCENARIO...: `tpusim compile SCENARIO` plans, without
simulating, the HBM footprint the simulator then checks and reports: for each scenario the
plan's total (compile --format=json: hbm_plan_bytes.total) must equal the peak of the run
(run --format=json: peak_hbm_bytes), byte for byte, and the capacities must agree."""
import json
import subprocess
import sys

tpusim, scenarios = sys.argv[1], sys.argv[2:]
status = 0
for s in scenarios:
    plan = json.loads(subprocess.run([tpusim, "compile", s, "--format=json"], check=True,
                                     capture_output=True, text=True).stdout)
    run = json.loads(subprocess.run([tpusim, "run", s, "--format=json", "--set", "run.steps=2"],
                                    check=True, capture_output=True, text=True).stdout)
    got = (plan["hbm_plan_bytes"]["total"], plan["hbm_capacity_bytes"])
    want = (run["peak_hbm_bytes"], run["hbm_capacity_bytes"])
    ok = got == want
    status |= not ok
    print("%s: compile plans %d of %d bytes, run peaked at %d of %d: %s" %
          (s, got[0], got[1], want[0], want[1], "same" if ok else "DIFFERENT"))
sys.exit(status)
