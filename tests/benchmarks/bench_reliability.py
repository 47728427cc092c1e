"""Benchmark: Monte-Carlo runs per second at 100k GPUs (target: 100 x 90 days < 10 s).

Run: python tests/benchmarks/bench_reliability.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from models.reliability import goodput, simulate  # noqa: E402
from solver.reliability_inputs import design  # noqa: E402


def main(runs: int = 100, days: float = 90.0) -> None:
    for rail, recovery in ((True, "storage"), (False, "in-memory")):
        inputs, rates, _ = design("h100-sxm", 100_000, "llama3-405b", "spectrum4-sn5600", rail,
                                  None, recovery)
        closed = goodput(inputs, rates)
        start = time.perf_counter()
        mean, low, high = simulate(inputs, rates, days, runs, seed=1)
        elapsed = time.perf_counter() - start
        print(f"100k GPUs rail={rail} {recovery}: {closed.interruptions_per_day:.0f}/day, "
              f"closed {closed.goodput:.4f}, simulated {mean:.4f} [{low:.4f}, {high:.4f}]; "
              f"{runs} x {days:.0f} days in {elapsed:.2f} s ({runs / elapsed:.1f} runs/s)"
              f" -> {'OK' if elapsed < 10 else 'SLOW'} (target < 10 s)")


if __name__ == "__main__":
    main()
