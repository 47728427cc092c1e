"""Software profiles, the global efficiency parameters fitted for each, and the fit.

A run's speed depends on its stack as much as on its GPU. A *profile* names a stack:
  megatron-2021  Megatron-LM as in Narayanan et al. 2021 / Korthikanti et al. 2022:
                 unfused attention (s x s scores stored, computed at GEMM rate, each
                 score element read and written by softmax and dropout in HBM:
                 timing.UNFUSED_SCORE_BYTES), fp32
                 main gradients, BF16 only, gradients all-reduced after the last
                 backward (Megatron-LM 2021's train_step calls allreduce_gradients once
                 forward_backward returns: no overlap with compute). Fitted on
                 NAR21 + KOR22 (A100, 14 rows).
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
             (the FP8 peak is 2x BF16, so fp8 = 0.7 means FP8 GEMMs run 1.4x BF16);
  moe_bytes  memory-bound work of the MoE layers per routed token copy, in HBM bytes per
             unit of width (h + expert_ffn/etp), forward + backward: router, permutation
             and un-permutation, padding, quantisation of the copies, the expert
             activation. Fitted because no public breakdown gives it; it makes MoE time
             scale with top_k and with 1/expert_ffn relative to the GEMMs, and with HBM
             bandwidth across generations (55 B; 107 B before expert_fixed_us, when it
             also carried the per-expert cost below);
  expert_fixed_us  time per local expert (experts/ep on a GPU), MoE layer and
             micro-batch, forward + backward, that neither the expert's size nor the GPU
             shortens [us]: dropless MoE learns each expert's token count on the host
             only after the router has run (a device-to-host sync per layer), then
             launches each local expert's casts and GEMMs one by one (Transformer
             Engine's grouped linear layers), and the GPU waits for those launches.
             Fitted (242 us, ~20-25 launches of ~10 us; 215 us before delivered:b200).
             The rows call for it: the runs
             with many local experts run slow for their FLOPs and bytes whatever the GPU
             (DeepSeek-V3 on B200 at ep8: 32 local experts; Qwen3-235B on B200 at ep8:
             16), those with few run fast (Qwen3-235B on GB200 at ep32: 4). Fitted with
             moe_bytes on the nine MoE rows it is stable across the leave-one-source-out
             folds (237-255 us, 368 us when fitted on Megatron-Bridge 25.11's seven MoE
             rows alone) and halves the MoE rows' leave-one-source-out error (31% ->
             18%); a per-expert weight-traffic term (bytes per expert parameter, scaling
             with expert size and HBM) in its place does not lower it (10.7% over all
             rows against 8.8%);
  expert_half_tokens  tokens per local expert and micro-batch at which the grouped
             expert GEMMs run at half their large-GEMM efficiency (per-expert problems
             too small to fill the GPU, tile padding): eff x t / (t + expert_half_tokens).
             NOT fitted: held at PRIOR's 256 (two 128-row tensor-core tiles). Fitted
             with moe_bytes it was unstable across refits (1,460 -> 0 -> 1,481 tokens:
             the nine MoE rows differ more by stack, i.e. dispatcher, CUDA graphs, FP8
             recipe, than by expert shape), it mostly absorbed two slow B200 rows, it
             moved the default answer by itself (98,304 -> 92,160 GPUs), and it bought
             0.8 points of Blackwell's leave-one-source-out error only (16.2% fitted,
             17.0% held at 256; Hopper 10.1% either way); those two B200 rows are the
             ones expert_fixed_us now explains (many local experts);
  elementwise_bytes  HBM traffic of the memory-bound kernels per token, layer and
             hidden unit, forward + backward (layer norms, residuals, RoPE, activation
             functions, FP8 casts and transposes, stored activations written and read).
             Their time grows as tokens*h against the GEMMs' tokens*h^2, so it is what
             makes small models (hidden 2,048-4,096) slower than their GEMM shapes alone
             say, and it follows HBM bandwidth across generations. tuned-2025 fits it
             (399 B; a count of TE's FP8 layer gives ~300-400 B: ~90 forward, about twice
             that backward, plus the stored activations); megatron-2021 keeps
             timing.ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN (120 B: fitting it, or a fixed
             time per layer, does not lower its leave-one-source-out error).
A fixed time per layer and micro-batch (launches, synchronisation) was fitted for
megatron-2021 until its gradient all-reduce was exposed and the output layer placed
on the last pipeline stage: the refit drove it to 0, so the model has none.
  delivered:<system>  the fraction of its spec peaks (GEMMs and attention core) a GPU
             system delivers relative to its generation's reference system, fitted only
             where the rows hold more than one system of a generation (DELIVERED).
Blackwell (B200, GB200) fits gemm_max, fp4 and delivered:b200 and takes Hopper's
half_dim, fp8 and elementwise_bytes (its BF16 rows are two MoE runs: they cannot
separate gemm_max from fp8); Blackwell Ultra (GB300) fits only its own gemm_max (4 rows
cannot carry more); moe_bytes and expert_fixed_us are one value each per profile
(FIT_PLAN): 11 fitted numbers. Everything else (attention kernel rate, bus
efficiencies, overlap) is a documented fixed assumption in models.perf.timing, never
tuned.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from models.perf.flops import arch_of
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
    tp_exposed: float
    """Share of tensor-parallel communication not hidden behind GEMMs."""
    dp_overlap: bool
    """Data-parallel gradient reduction overlapped with the backward pass (bucketed,
    Megatron-Core --overlap-grad-reduce); False = all-reduced after the last backward."""
    balanced_pipeline: bool
    """Pipeline layouts that give the last stage fewer layers for the output layer and
    MTP modules (Megatron-Core --pipeline-model-parallel-layout / account-for-loss);
    False = even layer split with the output on top (timing.paced_stage)."""
    fitted_on: str

    def weight_bytes(self, precision: str) -> float:
        return 1.0 if self.low_precision_params and precision != "bf16" else 2.0


PROFILES: dict[str, Profile] = {
    # tp_exposed: 2021, Megatron overlapped little (clusterplan assumption); 2025,
    # Transformer Engine's userbuffer overlap (--tp-comm-overlap) hides most of the
    # all-gather / reduce-scatter behind the GEMMs they feed (clusterplan assumption)
    "megatron-2021": Profile("megatron-2021", fused_attention=False, grad_bytes=4.0,
                             low_precision_params=False, sharding_choices=("optimizer",),
                             tp_exposed=0.75, dp_overlap=False,
                             balanced_pipeline=False, fitted_on="NAR21, KOR22"),
    "tuned-2025": Profile("tuned-2025", fused_attention=True, grad_bytes=2.0,
                          low_precision_params=True,
                          sharding_choices=("optimizer", "full"), tp_exposed=0.3,
                          dp_overlap=True, balanced_pipeline=True,
                          fitted_on="MCORE24, NEMO2407, MB2511, MB2602, MLPERF41, MLPERF50"),
}
DEFAULT_PROFILE = "tuned-2025"

FITTED: dict[tuple[str, str], dict[str, float]] = {
    ("megatron-2021", "ampere"): {"gemm_max": 0.6562, "half_dim": 93.7081},
    ("tuned-2025", "hopper"): {"gemm_max": 0.5996, "half_dim": 128.0, "fp8": 1.0107,
                               "moe_bytes": 55.098, "elementwise_bytes": 399.2068,
                               "expert_fixed_us": 241.6892},
    ("tuned-2025", "blackwell"): {"gemm_max": 0.5104, "half_dim": 128.0, "fp8": 1.0107,
                                  "fp4": 0.6125, "moe_bytes": 55.098,
                                  "elementwise_bytes": 399.2068, "expert_fixed_us": 241.6892,
                                  "delivered:b200": 1.0918},
    ("tuned-2025", "blackwell-ultra"): {"gemm_max": 0.6444, "half_dim": 128.0, "fp8": 1.0107,
                                        "fp4": 0.6125, "moe_bytes": 55.098,
                                        "elementwise_bytes": 399.2068,
                                        "expert_fixed_us": 241.6892},
}
"""Efficiency parameters per (profile, generation), from `fit_profile` on
shared/reference/calibration_runs.csv (tests/test_perf_calibration.py re-runs the fit,
checks these values and prints the per-row table)."""

@dataclass(frozen=True)
class FitStage:
    """One step of a profile's fit: free parameters, the generations they belong to
    (one, or all of the profile's with None), the rows that fit them (dense or MoE
    models) and the generation the other parameters are copied from."""

    generation: str | None
    free: tuple[str, ...]
    moe_rows: bool = False
    copy_from: str | None = None


FIT_PLAN: dict[str, tuple[FitStage, ...]] = {
    "megatron-2021": (FitStage("ampere", ("gemm_max", "half_dim")),),
    "tuned-2025": (FitStage("hopper", ("gemm_max", "fp8", "elementwise_bytes")),
                   FitStage("blackwell", ("gemm_max", "fp4", "delivered:b200"),
                            copy_from="hopper"),
                   FitStage("blackwell-ultra", ("gemm_max",), copy_from="blackwell"),
                   FitStage(None, ("moe_bytes", "expert_fixed_us"), moe_rows=True)),
}
"""Per profile, in order. GEMM, precision and memory-bound parameters come
from the dense runs (elementwise_bytes is the profile's: Blackwell copies Hopper's);
then moe_bytes and expert_fixed_us, one value each for the profile (its MoE software),
from the MoE runs of every generation, HBM bandwidth and GEMM rates carrying the
difference between generations. tuned-2025 keeps half_dim at PRIOR: its dense runs
shard no GEMM below 1,024 wide, so they cannot see the effect (the fit drifts to 0, which would make
128-wide expert shards free). expert_half_tokens stays at PRIOR too (module docstring:
unstable in the fit, 1,460 / 0 / 1,481 across refits, and alone it moved the default
answer for 0.8 points of Blackwell's leave-one-source-out error)."""
DELIVERED = ("delivered:b200",)
"""Per-system delivered fraction of the spec peaks, relative to the generation's reference
system (whose rows set gemm_max), fitted where the calibration rows hold more than one
system of a generation; the catalog's peaks stay the sourced specs (MFU is reported
against them). Only Blackwell has two: GB200 (9 rows) is the reference, B200 (4 rows:
MB2511-LLAMA3-8B-B200-8, MLPERF41-GPT3-B200-64 among the dense rows that fit it with
gemm_max and fp4; its MoE rows then see it) gets delivered:b200 = 1.092, i.e. B200
delivers 1.092 x 4.5 = 4.91 PFLOP/s FP8-equivalent where GB200 delivers 5.0 x the same
gemm_max: per GPU GB200 runs 1.8% faster, not the 11% of the specs (NVIDIA: 5.0 vs 4.5
PFLOP/s FP8 dense, GB200 at 1,200 W, HGX B200 at 1,000 W). The same Llama 3 8B runs in
Megatron-Bridge 25.11 measure +2.9% (FP8-CS) and +0.9% (MXFP8) per GPU on GB200: the
sustained clock of a dense GEMM on both is set by the power limit well below the boost
clock behind the spec peaks, so the spec gap overstates the delivered one. Across the
leave-one-source-out folds it is 1.07-1.09, and at its bound (BOUNDS: B200 at most
GB200's rate) when Megatron-Bridge 25.11 (the 8B pair) is held out and MLPerf's GPT-3
on B200 alone sets it (1.24 without the bound, which was added on seeing that fold).
Systems without rows beside another of their generation (B300 beside GB300, H200/H800
beside H100) keep 1: their spec ratio is taken as delivered."""
PRIOR = {"gemm_max": 0.6, "half_dim": 128.0, "fp8": 0.9, "fp4": 0.6, "moe_bytes": 16.0,
         "expert_half_tokens": 256.0, "elementwise_bytes": 120.0, "expert_fixed_us": 0.0,
         **dict.fromkeys(DELIVERED, 1.0)}
"""Start of every fit and a weak prior (PRIOR_WEIGHT): where the rows cannot separate two
parameters (e.g. gemm_max and fp8 when a fold holds out every BF16 Hopper run) the fit
stays near these physically sourced values instead of anywhere on the ridge.
gemm_max 0.6: large BF16 GEMMs reach 60-75% of the dense peak (cuBLAS on A100/H100);
fp8 0.9: H100 FP8 GEMMs reach ~1,250-1,450 of 1,979 TFLOP/s against 620-720 of 989 at
BF16 (https://semianalysis.com/2024/12/22/mi300x-vs-h100-vs-h200-benchmark-part-1-training/);
fp4 0.6: NVIDIA's NVFP4 recipe keeps ~15% of the linear layers in BF16 and adds
random Hadamard transforms and stochastic rounding to the FP4 GEMMs (arXiv 2509.25149),
so FP4 runs further from their peak (clusterplan estimate); half_dim 128: a GEMM whose
sharded dimension is one 128-wide tensor-core tile runs at about half the rate of a wide
one (CUTLASS tile shapes 128-256; clusterplan estimate); moe_bytes 16 (a bf16 read +
write of each routed copy in 4 passes) and expert_half_tokens 256 (two 128-row tiles):
clusterplan estimates; elementwise_bytes 120: timing.ELEMENTWISE_BYTES_PER_TOKEN_HIDDEN;
expert_fixed_us 0 (no per-expert cost unless the rows show one); delivered:<system> 1
(the spec ratio within a generation taken as delivered unless the rows say otherwise)."""
SIMPLEX_STEP = 0.05
"""Nelder-Mead's first simplex: each parameter moved by this share of its BOUNDS width."""
PRIOR_WEIGHT = 0.01
"""Weight of sum(((p - prior) / bound width)^2) added to the fit's loss (a mean |log|
error ~0.05-0.1): negligible wherever the data decide."""
BOUNDS = {"gemm_max": (0.2, 1.0), "half_dim": (0.0, 2000.0), "fp8": (0.3, 1.2),
          "fp4": (0.2, 1.2), "moe_bytes": (0.0, 4000.0), "elementwise_bytes": (0.0, 2000.0),
          "expert_fixed_us": (0.0, 2000.0), "delivered:b200": (0.7, 5000.0 / 4500.0)}
"""delivered:b200 at most GB200's FP8 peak over B200's: the same die at a 1,000 W instead of
a 1,200 W limit cannot deliver more per GPU than GB200 does."""

BANDS: dict[str, tuple[float, float, float]] = {
    "megatron-2021": (0.903, 0.973, 1.089),
    "tuned-2025": (0.882, 0.973, 1.077),
}
"""(p10, p50, p90) of measured / predicted throughput in leave-one-source-out
cross-validation, per profile (tests/test_perf_calibration.py recomputes them).
megatron-2021's moved (0.883, 0.964) with no change to its model: its NAR21 fold fits
two parameters on KOR22's rows alone, a ridge on which Nelder-Mead lands at gemm_max
0.71 / half_dim 101 or 0.75 / 154 depending on round-off in the code's operation order."""

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


class Efficiency(NamedTuple):
    """The fitted parameters one evaluation uses (see the module docstring)."""

    gemm_max: float
    half_dim: float
    precision_factor: float
    moe_bytes: float
    expert_half_tokens: float
    elementwise_bytes: float
    expert_fixed_us: float
    peak_fraction: float = 1.0


def delivered_key(system_id: str) -> str:
    """The table entry of a system's delivered fraction of peak."""
    return f"delivered:{system_id}"


def efficiency_for(generation: str, precision: str, profile: str = DEFAULT_PROFILE,
                   table: Mapping[tuple[str, str], Mapping[str, float]] | None = None,
                   system_id: str | None = None) -> Efficiency:
    """The parameters for a generation, precision and profile (and GPU system, for its
    fitted delivered fraction of peak: DELIVERED; 1 for systems without one). A precision
    without its own factor uses the next wider one's (fp4 -> fp8 -> 1); parameters a
    profile did not fit take PRIOR's values."""
    p = parameters_for(generation, profile, table)
    order = ("fp4", "fp8")
    factor = 1.0
    if precision in order:
        factor = next((p[q] for q in order[order.index(precision):] if q in p), 1.0)
    p = {**PRIOR, **p}
    return Efficiency(p["gemm_max"], p["half_dim"], factor, p["moe_bytes"],
                      p["expert_half_tokens"], p["elementwise_bytes"], p["expert_fixed_us"],
                      p.get(delivered_key(system_id), 1.0) if system_id else 1.0)


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
        from models.perf.search import candidate_grid, evaluate_grid

        self.runs = list(runs)
        self._cases = []
        for run in self.runs:
            arch = arch_of(run.workload)
            grid = candidate_grid(arch, run.system, run.gpus, run.fixed, profile=run.profile)
            if len(grid["tp"]) == 0:
                raise ValueError(f"{run.run_id}: no configuration matches {dict(run.fixed)}")
            # memory does not depend on the fitted parameters: keep the configurations
            # that fit (in grid order), else the one needing the least (as best_index)
            res = evaluate_grid(arch, run.system, run.network, grid, run.gpus,
                                profile=run.profile)
            keep = (np.flatnonzero(res["fits"]) if res["fits"].any()
                    else [int(np.argmin(res["memory_gib"]))])
            self._cases.append((arch, {k: v[keep] for k, v in grid.items()}))

    def __call__(self, table: Mapping[tuple[str, str], Mapping[str, float]]) -> np.ndarray:
        from models.perf.search import time_grid

        out = np.empty(len(self.runs))
        for j, (run, (arch, grid)) in enumerate(zip(self.runs, self._cases, strict=True)):
            eff = efficiency_for(run.system.generation, arch.precision, run.profile, table,
                                 system_id=getattr(run.system, "id", None))
            res = time_grid(arch, run.system, run.network, grid, run.gpus, eff,
                            profile=run.profile)
            out[j] = res[run.metric][int(np.argmax(res["tokens_per_s"]))]
        return out


def relative_errors(runs: Sequence[CalibrationRun], predicted: np.ndarray) -> np.ndarray:
    """predicted / measured - 1 per run."""
    return predicted / np.array([r.measured for r in runs]) - 1.0


def fit_profile(runs: Sequence[CalibrationRun], profile: str,
                start: Mapping[tuple[str, str], Mapping[str, float]] | None = None
                ) -> dict[tuple[str, str], dict[str, float]]:
    """Fit a profile's parameters, FIT_PLAN's stages in order, each a Nelder-Mead search
    (deterministic) over the stage's free parameters, clipped to BOUNDS, from PRIOR,
    minimising the mean |log(predicted / measured)| of the stage's rows (symmetric,
    robust to a few odd runs) plus the weak prior."""
    from scipy.optimize import minimize

    table = {k: dict(v) for k, v in (start or {}).items()}
    ours = [r for r in runs if r.profile == profile]
    for stage in FIT_PLAN[profile]:
        if stage.generation is not None:
            base = table.get((profile, stage.copy_from), PRIOR) if stage.copy_from else PRIOR
            table[(profile, stage.generation)] = {k: v for k, v in base.items()
                                                  if k in PRIOR and k not in DELIVERED}
        keys = sorted(k for k in table if k[0] == profile
                      and stage.generation in (None, k[1]))
        rows = [r for r in ours if arch_of(r.workload).is_moe == stage.moe_rows
                and stage.generation in (None, r.system.generation)]
        if not rows:
            continue
        predictor = Predictor(rows)
        measured = np.array([r.measured for r in rows])

        def loss(x, stage=stage, keys=keys, predictor=predictor, measured=measured):
            for name, value in zip(stage.free, x, strict=True):
                lo, hi = BOUNDS[name]
                for key in keys:
                    table[key][name] = float(np.clip(value, lo, hi))
            prior = sum(((table[keys[0]][n] - PRIOR[n]) / (BOUNDS[n][1] - BOUNDS[n][0])) ** 2
                        for n in stage.free)
            return float(np.mean(np.abs(np.log(predictor(table) / measured)))
                         + PRIOR_WEIGHT * prior)

        x0 = np.array([PRIOR[n] for n in stage.free])
        steps = np.diag([SIMPLEX_STEP * (BOUNDS[n][1] - BOUNDS[n][0]) for n in stage.free])
        best = minimize(loss, x0, method="Nelder-Mead",
                        options={"xatol": 1e-4, "fatol": 1e-7, "maxiter": 600,
                                 "initial_simplex": np.vstack([x0, x0 + steps])})
        loss(best.x)
        for key in keys:
            table[key] = {k: round(v, 4) for k, v in table[key].items()}
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
    full = fit_all(runs)
    for source in sorted({r.source for r in runs}):
        held = [i for i, r in enumerate(runs) if r.source == source]
        profiles = {runs[i].profile for i in held}
        table = full
        for profile in sorted(profiles):     # other profiles' fits do not see the source
            table = fit_profile([r for r in runs if r.source != source], profile, table)
        held_runs = [runs[i] for i in held]
        errors[held] = relative_errors(held_runs, Predictor(held_runs)(table))
    return errors
