"""Global efficiency parameters of the performance model, and the procedure that fits them.

Only two parameters per GPU generation (BF16), shared by every run of that generation:
`gemm_max` (the fraction of dense peak large GEMMs reach) and `half_dim` (the sharded
GEMM dimension hidden/tp at which efficiency halves: eff = gemm_max * n/(n + half_dim)).
Everything else (communication overlap, bus efficiencies, HBM-bound kernels) is a
documented fixed assumption in models.perf.timing, never tuned per run.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from models.perf.types import GpuSystemLike, NetworkSpec, WorkloadLike

FITTED: dict[tuple[str, str], tuple[float, float]] = {
    ("ampere", "bf16"): (0.62, 210.0),
    ("hopper", "bf16"): (0.56, 0.0),
}
"""(gemm_max, half_dim) per (generation, precision), from `fit_generation`.

Procedure: for each generation, an exhaustive grid (gemm_max 0.40..1.00 step 0.005,
half_dim 0..1500 step 10) minimising the mean absolute percentage error of utilisation
over that generation's rows of shared/reference/calibration_runs.csv; degrees a row
does not state (micro-batch, virtual stages, recompute) are chosen by the search under
the same parameters. NAR21 rows count recomputation in their FLOPs, so they are
compared with predicted HFU; all other rows with MFU. Data: ampere = 10 NAR21 (A100,
full recompute, micro-batch unknown) + 4 KOR22 (A100, selective, degrees given) rows;
hopper = 11 MCORE24 rows (H100; the two strong-scaling rows take TP8/PP6).
Result (tests/test_perf_calibration.py re-runs the fit and prints the table):
ampere MAPE 5.9% (worst NAR21-1.7B +21%, KOR22-1000B -13%), hopper MAPE 4.7% (worst
MCORE24-1.7B +16%, MCORE24-462B -14%); all 25 runs 5.4%.
"""

LOW_PRECISION_FACTOR = {"bf16": 1.0, "fp8": 0.70, "fp4": 0.55}
"""GEMM efficiency at FP8/FP4 relative to BF16's fraction of its (2x/4x) peak. No
calibration row is FP8: clusterplan estimate giving FP8 GEMMs ~1.4x BF16 speed, in line
with the 1.3-1.5x end-to-end FP8 speed-ups NVIDIA reports for Transformer Engine
(https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/examples/fp8_primer.html).
FP4 is a further extrapolation (estimate)."""
GENERATION_FALLBACK = {"blackwell": ("hopper", 1.0), "blackwell-ultra": ("hopper", 1.0),
                       "cdna3": ("hopper", 0.85)}
"""Generations without calibration rows borrow a fitted one's parameters (times a
factor): Blackwell reuses Hopper's (assumption: same software stack, efficiency of
peak similar); AMD CDNA3 85% of Hopper's (clusterplan estimate of the gap in achieved
GEMM efficiency, e.g. https://semianalysis.com/2024/12/22/mi300x-vs-h100-vs-h200-benchmark-part-1-training/)."""


def efficiency_for(generation: str, precision: str) -> tuple[float, float, float]:
    """(gemm_max, half_dim, low_precision_factor) for a GPU generation and precision."""
    scale = 1.0
    if (generation, "bf16") not in FITTED:
        generation, scale = GENERATION_FALLBACK.get(generation, ("hopper", 1.0))
    gemm_max, half_dim = FITTED[(generation, "bf16")]
    return gemm_max * scale, half_dim, LOW_PRECISION_FACTOR[precision]


@dataclass(frozen=True)
class CalibrationRun:
    """One published run: its workload, hardware, the degrees it states, and the measured
    utilisation (`metric` 'mfu', or 'hfu' where the paper's FLOP count includes
    recomputation)."""

    run_id: str
    workload: WorkloadLike
    system: GpuSystemLike
    network: NetworkSpec
    gpus: int
    fixed: Mapping[str, int | str]
    metric: str
    measured: float
    notes: str = ""
    extra: dict = field(default_factory=dict)


def predict_runs(runs: Sequence[CalibrationRun], gemm_max: np.ndarray,
                 half_dim: np.ndarray) -> np.ndarray:
    """Predicted utilisation (each run's own metric) for every parameter pair:
    array [len(gemm_max), len(runs)]. Degrees a run does not state (micro-batch,
    virtual stages, recompute where missing) are chosen by the search, i.e. the best
    fitting configuration under the same parameters, as the published runs were tuned."""
    from models.perf.flops import arch_of
    from models.perf.search import candidate_grid, evaluate_grid

    g = np.asarray(gemm_max, dtype=float)[:, None]
    hd = np.asarray(half_dim, dtype=float)[:, None]
    out = np.empty((g.shape[0], len(runs)))
    for j, run in enumerate(runs):
        arch = arch_of(run.workload)
        grid = candidate_grid(arch, run.system, run.gpus, run.fixed)
        res = evaluate_grid(arch, run.system, run.network, grid, run.gpus,
                            (g, hd, LOW_PRECISION_FACTOR[arch.precision]))
        score = np.where(res["fits"], res["tokens_per_s"], -np.inf)
        best = np.argmax(score, axis=1)
        out[:, j] = np.take_along_axis(res[run.metric], best[:, None], axis=1)[:, 0]
    return out


def fit_generation(runs: Sequence[CalibrationRun]) -> tuple[float, float]:
    """(gemm_max, half_dim) minimising the mean absolute percentage error of the runs'
    utilisation: exhaustive grid gemm_max 0.40..1.00 step 0.005 x half_dim 0..1500
    step 10, the first minimum in grid order (deterministic)."""
    gm, hd = np.meshgrid(np.round(np.arange(0.40, 1.0001, 0.005), 3),
                         np.arange(0.0, 1500.1, 10.0), indexing="ij")
    gm, hd = gm.ravel(), hd.ravel()
    measured = np.array([r.measured for r in runs])
    pred = predict_runs(runs, gm, hd)
    mape = np.mean(np.abs(pred - measured) / measured, axis=1)
    k = int(np.argmin(mape))
    return float(gm[k]), float(hd[k])
