"""Benchmark: place the default 100,000-GPU design (target: within 2% of the bound in
< 60 s on 2 cores, < 4 GiB). Run: python tests/benchmarks/bench_placement.py [time_limit_s]"""

from __future__ import annotations

import resource
import sys
import time

from solver import load_instance, solve
from solver.placement import design_to_place, place
from solver.placement_check import check_placement


def main(time_limit_s: float = 50.0) -> None:
    inst = load_instance()
    design = design_to_place(solve(inst).design)
    start = time.perf_counter()
    result = place(inst, design, time_limit_s=time_limit_s, workers=2)
    seconds = time.perf_counter() - start
    problems = check_placement(inst, result)
    s = result.summary
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"nodes {design.nodes:,}, racks {s['racks_total']:,} {s['racks']}, status "
          f"{s['status']}, objective ${s['objective_usd'] / 1e6:,.2f}M, bound "
          f"${s['objective_bound'] / 1e6:,.2f}M, gap {s['gap']:.2%}, routed lifetime media "
          f"${s['media_lifetime_cost_usd'] / 1e6:,.2f}M, {seconds:.1f} s, peak RSS "
          f"{rss_gib:.2f} GiB, checker problems {len(problems)}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 50.0)
