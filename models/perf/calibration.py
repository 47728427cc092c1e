"""Software profiles, the global efficiency parameters fitted for each, and the fit.

A run's speed depends on its stack as much as on its GPU. A *profile* names a stack:
  megatron-2021  Megatron-LM as in Narayanan et al. 2021 / Korthikanti et al. 2022:
                 unfused attention (s x s scores stored, computed at GEMM rate), fp32
                 main gradients, BF16 only. Fitted on NAR21 + KOR22 (A100, 14 rows).
  tuned-2025     Megatron-Core / NeMo / Megatron-Bridge 2024-2026 and MLPerf Training
                 v4.1/v5.0: FlashAttention (no scores stored; causal blocks skipped;
                 core at the kernels' rate), bf16 gradients, Transformer Engine FP8 /
                 MXFP8 / NVFP4 with FP8 parameters, distributed optimizer or FSDP.
                 Fitted on MCORE24, NEMO2407, MB2511, MB2602, MLPERF41, MLPERF50
                 (H100, B200, GB200, GB300; 47 rows). The default.
Parameters per (profile, generation), never per run:
  gemm_max   fraction of the dense peak large GEMMs reach at BF16;
  half_dim   sharded GEMM dimension (hidden/tp, or expert FFN/etp) at which efficiency
             halves: eff = gemm_max * n / (n + half_dim);
  fp8, fp4   GEMM efficiency at that precision relative to BF16's fraction of its peak
             (the FP8 peak is 2x BF16, so fp8 = 0.7 means FP8 GEMMs run 1.4x BF16).
Blackwell Ultra (GB300) fits only its own gemm_max; half_dim and the precision factors
are Blackwell's (4 rows cannot carry more). Everything else (attention kernel rate,
bus efficiencies, overlap, HBM-bound kernels) is a documented fixed assumption in
models.perf.timing, never tuned.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from models.perf.types import GpuSystemLike, NetworkSpec, WorkloadLike


@dataclass(frozen=True)
class Profile:
    name: str
    fused_attention: bool
    """FlashAttention-style kernels: no s x s scores stored, masked (causal) blocks
    skipped, the core timed at timing.ATTENTION_EFFICIENCY of the BF16 peak."""
    grad_bytes: float
    """Gradient buffer per parameter [bytes]: 4 fp32 main grads, 2 bf16."""
    low_precision_params: bool
    """FP8/FP4 runs store and all-gather parameters in 1 byte (--fp8-param-gather)."""
    sharding_choices: tuple[str, ...]
    """Data-parallel sharding modes the search may choose."""
    fitted_on: str

    def weight_bytes(self, precision: str) -> float:
        return 1.0 if self.low_precision_params and precision != "bf16" else 2.0


PROFILES: dict[str, Profile] = {
    "megatron-2021": Profile("megatron-2021", fused_attention=False, grad_bytes=4.0,
                             low_precision_params=False, sharding_choices=("optimizer",),
                             fitted_on="NAR21, KOR22"),
    "tuned-2025": Profile("tuned-2025", fused_attention=True, grad_bytes=2.0,
                          low_precision_params=True,
                          sharding_choices=("optimizer", "full"),
                          fitted_on="MCORE24, NEMO2407, MB2511, MB2602, MLPERF41, MLPERF50"),
}
DEFAULT_PROFILE = "tuned-2025"

FITTED: dict[tuple[str, str], dict[str, float]] = {
    ("megatron-2021", "ampere"): {"gemm_max": 0.62, "half_dim": 210.0},
    ("tuned-2025", "hopper"): {"gemm_max": 0.6, "half_dim": 100.0, "fp8": 0.75},
    ("tuned-2025", "blackwell"): {"gemm_max": 0.6, "half_dim": 100.0, "fp8": 0.75,
                                  "fp4": 0.6},
    ("tuned-2025", "blackwell-ultra"): {"gemm_max": 0.6, "half_dim": 100.0, "fp8": 0.75,
                                        "fp4": 0.6},
}
"""Efficiency parameters per (profile, generation), from `fit_profile` on
shared/reference/calibration_runs.csv (tests/test_perf_calibration.py re-runs the fit,
checks these values and prints the per-row table)."""

FIT_PLAN: dict[str, tuple[tuple[str, tuple[str, ...], str | None], ...]] = {
    "megatron-2021": (("ampere", ("gemm_max", "half_dim"), None),),
    "tuned-2025": (("hopper", ("gemm_max", "half_dim", "fp8"), None),
                   ("blackwell", ("gemm_max", "half_dim", "fp8", "fp4"), None),
                   ("blackwell-ultra", ("gemm_max",), "blackwell")),
}
"""Per profile, in order: (generation, its free parameters, generation the rest is
copied from)."""
PRIOR = {"gemm_max": 0.6, "half_dim": 100.0, "fp8": 0.75, "fp4": 0.6}
"""Start of every fit; a parameter no remaining row constrains (e.g. fp4 when a
cross-validation fold holds out every FP4 row) stays here."""
BOUNDS = {"gemm_max": (0.2, 1.0), "half_dim": (0.0, 2000.0), "fp8": (0.3, 1.2),
          "fp4": (0.2, 1.2)}

BANDS: dict[str, tuple[float, float, float]] = {
    "megatron-2021": (0.9, 1.0, 1.1),
    "tuned-2025": (0.9, 1.0, 1.1),
}
"""(p10, p50, p90) of measured / predicted throughput in leave-one-source-out
cross-validation, per profile (tests/test_perf_calibration.py recomputes them)."""

GENERATION_FALLBACK = {"cdna3": ("hopper", 0.85)}
"""Generations without calibration rows borrow a fitted one's parameters, gemm_max times
a factor: AMD CDNA3 85% of Hopper's (clusterplan estimate of the gap in achieved GEMM
efficiency, e.g. https://semianalysis.com/2024/12/22/mi300x-vs-h100-vs-h200-benchmark-part-1-training/)."""


def profile_of(name: str | None) -> Profile:
    """The named profile (None = DEFAULT_PROFILE). Raises ValueError naming the choices."""
    key = name or DEFAULT_PROFILE
    if key not in PROFILES:
        raise ValueError(f"profile '{key}' is not one of {', '.join(sorted(PROFILES))}")
    return PROFILES[key]


def parameters_for(generation: str, profile: str = DEFAULT_PROFILE,
                   table: Mapping[tuple[str, str], Mapping[str, float]] | None = None
                   ) -> dict[str, float]:
    """The efficiency parameters of a generation under a profile: its own fit, else the
    same generation under another profile, else GENERATION_FALLBACK."""
    table = FITTED if table is None else table
    if (profile, generation) in table:
        return dict(table[(profile, generation)])
    for (_, gen), params in sorted(table.items()):
        if gen == generation:
            return dict(params)
    base, scale = GENERATION_FALLBACK.get(generation, ("hopper", 1.0))
    params = parameters_for(base, profile, table)
    params["gemm_max"] *= scale
    return params


def efficiency_for(generation: str, precision: str, profile: str = DEFAULT_PROFILE,
                   table: Mapping[tuple[str, str], Mapping[str, float]] | None = None
                   ) -> tuple[float, float, float]:
    """(gemm_max, half_dim, low_precision_factor) for a generation, precision, profile.
    A precision without its own factor uses the next wider one's (fp4 -> fp8 -> 1)."""
    p = parameters_for(generation, profile, table)
    order = ("fp4", "fp8")
    factor = 1.0
    if precision in order:
        factor = next((p[q] for q in order[order.index(precision):] if q in p), 1.0)
    return p["gemm_max"], p["half_dim"], factor


def band_factors(profile: str = DEFAULT_PROFILE) -> tuple[float, float]:
    """(low, high) multipliers of a prediction: p10 and p90 of measured/predicted."""
    p10, _, p90 = BANDS[profile_of(profile).name]
    return p10, p90


def quantile_factor(q: float, profile: str = DEFAULT_PROFILE) -> float:
    """Multiplier of a prediction at quantile q of measured/predicted: piecewise linear
    through (0.1, p10), (0.5, p50), (0.9, p90), constant outside [0.1, 0.9]."""
    p10, p50, p90 = BANDS[profile_of(profile).name]
    return float(np.interp(q, (0.1, 0.5, 0.9), (p10, p50, p90)))


@dataclass(frozen=True)
class CalibrationRun:
    """One published run: its workload, hardware, the degrees it states, and the measured
    figure (`metric` 'tokens_per_s', 'mfu', or 'hfu' where the paper's FLOP count
    includes recomputation)."""

    run_id: str
    workload: WorkloadLike
    system: GpuSystemLike
    network: NetworkSpec
    gpus: int
    fixed: Mapping[str, int | str]
    metric: str
    measured: float
    profile: str = DEFAULT_PROFILE
    notes: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The publication family (run-id prefix), the unit of cross-validation."""
        return self.run_id.split("-")[0]


class Predictor:
    """Predicted figure of each run for a table of efficiency parameters. Degrees a run
    does not state (micro-batch, recompute, sharding, ...) are chosen by the search
    under the same parameters, as the published runs were tuned."""

    def __init__(self, runs: Sequence[CalibrationRun]):
        from models.perf.flops import arch_of
        from models.perf.search import candidate_grid

        self.runs = list(runs)
        self._cases = []
        for run in self.runs:
            arch = arch_of(run.workload)
            grid = candidate_grid(arch, run.system, run.gpus, run.fixed, profile=run.profile)
            if len(grid["tp"]) == 0:
                raise ValueError(f"{run.run_id}: no configuration matches {dict(run.fixed)}")
            self._cases.append((arch, grid))

    def __call__(self, table: Mapping[tuple[str, str], Mapping[str, float]]) -> np.ndarray:
        from models.perf.search import best_index, evaluate_grid

        out = np.empty(len(self.runs))
        for j, (run, (arch, grid)) in enumerate(zip(self.runs, self._cases, strict=True)):
            eff = efficiency_for(run.system.generation, arch.precision, run.profile, table)
            res = evaluate_grid(arch, run.system, run.network, grid, run.gpus, eff,
                                profile=run.profile)
            out[j] = res[run.metric][best_index(res)]
        return out


def relative_errors(runs: Sequence[CalibrationRun], predicted: np.ndarray) -> np.ndarray:
    """predicted / measured - 1 per run."""
    return predicted / np.array([r.measured for r in runs]) - 1.0


def fit_profile(runs: Sequence[CalibrationRun], profile: str,
                start: Mapping[tuple[str, str], Mapping[str, float]] | None = None
                ) -> dict[tuple[str, str], dict[str, float]]:
    """Fit a profile's parameters (FIT_PLAN order) minimising the mean absolute
    percentage error of its runs. Each stage is a Nelder-Mead search (deterministic)
    over that generation's free parameters, clipped to BOUNDS, from PRIOR."""
    from scipy.optimize import minimize

    table = {k: dict(v) for k, v in (start or {}).items()}
    for generation, free, copy_from in FIT_PLAN[profile]:
        params = dict(table.get((profile, copy_from), PRIOR)) if copy_from else dict(PRIOR)
        params = {k: v for k, v in params.items() if k in PRIOR}
        table[(profile, generation)] = params
        rows = [r for r in runs if r.profile == profile and r.system.generation == generation]
        if not rows:
            continue
        predictor = Predictor(rows)
        measured = np.array([r.measured for r in rows])

        def mape(x, generation=generation, free=free, predictor=predictor,
                 measured=measured):
            for name, value in zip(free, x, strict=True):
                lo, hi = BOUNDS[name]
                table[(profile, generation)][name] = float(np.clip(value, lo, hi))
            return float(np.mean(np.abs(predictor(table) / measured - 1.0)))

        x0 = np.array([params[n] for n in free])
        best = minimize(mape, x0, method="Nelder-Mead",
                        options={"xatol": 1e-4, "fatol": 1e-7, "maxiter": 600})
        mape(best.x)
        table[(profile, generation)] = {k: round(v, 4) for k, v in
                                        table[(profile, generation)].items()}
    return table


def fit_all(runs: Sequence[CalibrationRun]) -> dict[tuple[str, str], dict[str, float]]:
    """Every profile's parameters from its own runs."""
    table: dict[tuple[str, str], dict[str, float]] = {}
    for profile in sorted(FIT_PLAN):
        table = fit_profile(runs, profile, table)
    return table


def leave_one_source_out(runs: Sequence[CalibrationRun]) -> np.ndarray:
    """Cross-validated predicted/measured - 1 per run: each source's rows predicted by
    parameters fitted without that source."""
    errors = np.empty(len(runs))
    for source in sorted({r.source for r in runs}):
        held = [i for i, r in enumerate(runs) if r.source == source]
        table = fit_all([r for r in runs if r.source != source])
        held_runs = [runs[i] for i in held]
        errors[held] = relative_errors(held_runs, Predictor(held_runs)(table))
    return errors
