"""Benchmark (not collected by pytest): `clusterplan solve instances/campus-phased.toml`
end to end (candidates, their exact evaluation, the phased MILP's two stages, the
per-period checks, design.json, the CSVs and timeline.png), wall and CPU time (the CPU
time is what a loaded machine does not inflate) and peak memory, in a fresh process.
Run: python tests/benchmarks/bench_phased.py [--prove]
(--prove: solve to a zero gap with no node limit, to see how far the default stop is from
the proven optimum; minutes.)

Target (issue 17): under 60 s on a 2-core machine. The MILP stops at its relative gap
target (SolveOptions.phased_gap) or node limit, not at the wall clock, so the plan is the
same on every machine; the time limit here is the CLI's default, a safety net only
(`deterministic` false in the output if it ever stopped the MILP).
"""

from __future__ import annotations

import subprocess
import sys

RUN = """
import json, resource, sys, tempfile, time
from solver import load_instance, solve
from solver.backends import SolveOptions
from solver.cli_common import COMMAND_TIME_LIMIT_S
from solver.loading import INSTANCES_DIR
from solver.phased_outputs import write_phased_outputs
from pathlib import Path
start = time.perf_counter()
prove = dict(phased_gap=0.0, node_limit=10**9) if sys.argv[1:] == ["--prove"] else {}
r = solve(load_instance(INSTANCES_DIR / "campus-phased.toml"),
          options=SolveOptions(time_limit_s=COMMAND_TIME_LIMIT_S, **prove))
write_phased_outputs(r, Path(tempfile.mkdtemp()))
wall = time.perf_counter() - start
s = r.summary
usage = resource.getrusage(resource.RUSAGE_SELF)
peak, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
print(json.dumps({"instance": s["instance"], "status": s["status"], "verified": s["verified"],
                  "gap": s["solver"]["gap"],
                  "deterministic": s["solver"]["deterministic"], "wall_s": round(wall, 2),
                  "cpu_s": round(cpu, 2),
                  "milp_s": round(s["solver"]["milp_runtime_s"], 2),
                  "tokens_T": round(s["totals"]["tokens"] / 1e12, 3),
                  "objective": s["objective"]["value"], "peak_mib": round(peak)}))
"""


def main() -> None:
    out = subprocess.run([sys.executable, "-c", RUN, *sys.argv[1:]], capture_output=True,
                         text=True, check=True)
    print(out.stdout.strip())


if __name__ == "__main__":
    main()
