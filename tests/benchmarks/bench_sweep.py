"""Benchmark: a 100-scenario sweep of the default instance (10 power x 10 budget levels).

Reports the wall time of the sweep with shared candidates (built once per worker, each
scenario re-solved with its own limits), and the time of rebuilding the candidates per
scenario measured on a sample and extrapolated, so the speed-up of re-solving vs
rebuilding is recorded. Run: python tests/benchmarks/bench_sweep.py [--backend processes]
"""

from __future__ import annotations

import argparse
import tempfile
import time

from solver import sweep
from solver.loading import DEFAULT_INSTANCE

VARY = {"limits.it_power_mw": "100:190:10", "limits.budget_usd": "4e9:8.5e9:10"}
SAMPLE = {"limits.it_power_mw": "120,180", "limits.budget_usd": "5e9"}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="processes")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        shared = sweep(DEFAULT_INSTANCE, VARY, out=f"{tmp}/shared", backend=args.backend,
                       workers=args.workers)
        shared_s = time.perf_counter() - start
        start = time.perf_counter()
        rebuilt = sweep(DEFAULT_INSTANCE, SAMPLE, out=f"{tmp}/rebuilt", backend="local",
                        share_candidates=False)
        per_rebuild = (time.perf_counter() - start) / len(rebuilt)
        start = time.perf_counter()
        resolved = sweep(DEFAULT_INSTANCE, SAMPLE, out=f"{tmp}/resolved", backend="local")
        local_shared = time.perf_counter() - start
    same = (rebuilt[["objective", "gpus", "switch"]].values.tolist()
            == resolved[["objective", "gpus", "switch"]].values.tolist())
    print(f"100 scenarios, backend={args.backend} x{args.workers}: {shared_s:.1f} s wall "
          f"({shared.attrs['solved']} solved, {shared.attrs['failed']} failed)")
    print(f"rebuild per scenario (local, sample of {len(rebuilt)}): {per_rebuild:.2f} s "
          f"-> 100 scenarios ~{100 * per_rebuild:.0f} s on one core")
    print(f"shared candidates, same sample locally: {local_shared:.2f} s incl. one build; "
          f"speed-up of the 100-scenario sweep vs rebuilding on one core: "
          f"{100 * per_rebuild / shared_s:.1f}x (same rows on the sample: {same})")


if __name__ == "__main__":
    main()
