"""Benchmark of the performance model (not a timed test): configurations per second of
the vectorised evaluator, and full searches of Llama 3 405B on 16,384 H100 and the
1.8T MoE on 100,000 H100 / GB200. Run: python tests/benchmarks/bench_perf.py"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from models.perf import NetworkSpec, search  # noqa: E402
from models.perf.flops import arch_of  # noqa: E402
from models.perf.search import candidate_grid, evaluate_grid  # noqa: E402
from solver.loading import load_catalog, load_workload  # noqa: E402


def best_of(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    cat = load_catalog()
    h100, gb200 = cat.gpu["h100-sxm"], cat.gpu["gb200-nvl72"]
    ib = NetworkSpec(400.0, True, pod_gpus=24576, oversubscription=7.0)
    moe = load_workload("gpt4-1.8t-moe")
    arch = arch_of(moe)
    grid = candidate_grid(arch, h100, 100_000)
    big = {k: np.tile(v, 20) for k, v in grid.items()}
    t, _ = best_of(lambda: evaluate_grid(arch, h100, ib, big, 100_000))
    n = len(big["tp"])
    print(f"vectorised evaluation: {n:,} configs in {t:.3f} s = {n / t:,.0f} configs/s")
    for name, wl, system, gpus in [("llama3-405b", "llama3-405b", h100, 16_384),
                                   ("gpt4-1.8t-moe", "gpt4-1.8t-moe", h100, 100_000),
                                   ("gpt4-1.8t-moe", "gpt4-1.8t-moe", gb200, 100_000)]:
        w = load_workload(wl)
        t, r = best_of(lambda w=w, s=system, g=gpus: search(w, s, ib, g))
        size = len(candidate_grid(arch_of(w), system, gpus)["tp"])
        p = r.parallelism
        print(f"search {name} on {gpus:,} x {system.id}: {t:.3f} s over {size:,} configs -> "
              f"tp{p.tp} pp{p.pp} vpp{p.vpp} cp{p.cp} ep{p.ep} dp{p.dp} mb{p.micro_batch} "
              f"{p.recompute}, MFU {r.mfu:.1%}, {r.tokens_per_s:,.0f} tokens/s")


if __name__ == "__main__":
    main()
