"""Benchmark: place the default 100,000-GPU design (target: within 2% of the bound in
< 60 s on 2 cores, < 4 GiB) at place's default 30 s limit.
Run: python tests/benchmarks/bench_placement.py [time_limit_s]"""

from __future__ import annotations

import resource
import sys
import time

from solver import load_instance, place, solve
from solver.backends import SolveOptions
from solver.placement import design_to_place


def run(inst, design, label: str, time_limit_s: float) -> None:
    start = time.perf_counter()
    result = place(inst, design, SolveOptions(placement_time_limit_s=time_limit_s))
    seconds = time.perf_counter() - start
    s = result.summary
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"{label}: nodes {design.nodes:,}, racks {s['racks_total']:,} {s['racks']}, "
          f"status {s['status']}, objective ${s['objective_usd'] / 1e6:,.2f}M, bound "
          f"${s['objective_bound'] / 1e6:,.2f}M ({s['bound_method']}), gap {s['gap']:.2%} "
          f"(${s['gap_usd'] / 1e6:,.2f}M), failure part "
          f"${s['media_failure_cost_usd'] / 1e6:,.0f}M, routed lifetime media "
          f"${s['media_lifetime_cost_usd'] / 1e6:,.2f}M, {seconds:.1f} s, peak RSS "
          f"{rss_gib:.2f} GiB, verified by the checker {s['verified']}")


def main(time_limit_s: float = 30.0) -> None:
    """The placement as solve runs it (failure cost priced), then without the failure
    term: that term adds a nearly constant cost that shrinks the relative gap, so the
    second line shows the gap on capex and energy alone."""
    solved = solve(load_instance(), place=False)
    inputs, chosen = solved.inputs, solved.design
    run(inputs, design_to_place(chosen, inputs), "with failure cost", time_limit_s)
    run(inputs, design_to_place(chosen), "capex + energy only", time_limit_s)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 30.0)
