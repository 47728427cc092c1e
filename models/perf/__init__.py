"""Analytic training performance model (Megatron-style), calibrated on public runs.

Public API (used by the design MILP and `clusterplan perf`):
    evaluate(workload, system, network, par, profile=None) -> PerfResult
    search(workload, system, network, gpus, fixed=None, profile=None, candidates=None)
        -> PerfResult
    feasible_candidates(workload, system, gpus, fixed=None, profile=None) -> Candidates
profile None = the workload's `profile` attribute if it has one, else the default
(models.perf.calibration.DEFAULT_PROFILE).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from models.perf.calibration import DEFAULT_PROFILE, PROFILES, band_factors, profile_of
from models.perf.flops import Arch, arch_of
from models.perf.memory import GIB
from models.perf.search import (
    Candidates,
    best_index,
    degree_checks,
    evaluate_grid,
    feasible,
    timed_contenders,
    with_step_bound,
)
from models.perf.types import (
    RECOMPUTE_MODES,
    SHARDING_MODES,
    GpuSystemLike,
    NetworkSpec,
    Parallelism,
    PerfResult,
    WorkloadLike,
    peak_tflops,
)

__all__ = ["NetworkSpec", "Parallelism", "PerfResult", "evaluate", "search",
           "feasible_candidates", "Candidates",
           "invalid_degrees", "peak_tflops", "arch_of", "Arch", "PROFILES",
           "DEFAULT_PROFILE", "SHARDING_MODES", "resolve_profile"]

BREAKDOWN_KEYS = ("compute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "pipeline_bubble",
                  "dp_comm", "optimizer")


def invalid_degrees(workload: WorkloadLike, system: GpuSystemLike, par: Parallelism,
                    gpus: int | None = None) -> list[str]:
    """Why `par` cannot run (empty = it can). `gpus` given: the product must equal it."""
    arch = arch_of(workload)
    problems = degree_checks(arch, system, par.tp, par.pp, par.cp, par.ep, par.vpp, par.dp,
                             etp=par.expert_tp if arch.is_moe else None)
    if par.recompute not in RECOMPUTE_MODES:
        problems.append(f"--recompute {par.recompute} is not one of "
                        f"{', '.join(RECOMPUTE_MODES)}")
    if par.sharding not in SHARDING_MODES:
        problems.append(f"--sharding {par.sharding} is not one of "
                        f"{', '.join(SHARDING_MODES)}")
    if gpus is not None and par.gpus != gpus:
        problems.append(f"--tp*--pp*--cp*--dp = {par.gpus} differs from --gpus {gpus}")
    for name in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch"):
        if getattr(par, name) < 1:
            problems.append(f"--{name.replace('_', '-')} must be >= 1")
    if par.etp is not None and par.etp < 1:
        problems.append("--etp must be >= 1")
    return problems


def resolve_profile(workload: WorkloadLike, profile: str | None = None) -> str:
    """The profile to use: `profile`, else the workload's, else DEFAULT_PROFILE.
    Raises ValueError for an unknown name."""
    return profile_of(profile or getattr(workload, "profile", None)).name


def _result(arch: Arch, res: Mapping[str, np.ndarray], grid: Mapping[str, np.ndarray],
            i: int, gpus: int, profile: str) -> PerfResult:
    par = Parallelism(tp=int(grid["tp"][i]), pp=int(grid["pp"][i]), dp=int(grid["dp"][i]),
                      cp=int(grid["cp"][i]), ep=int(grid["ep"][i]), vpp=int(grid["vpp"][i]),
                      micro_batch=int(grid["mb"][i]),
                      recompute=RECOMPUTE_MODES[int(grid["rc"][i])],
                      sharding=SHARDING_MODES[int(grid["sh"][i])],
                      etp=int(grid["etp"][i]))
    tokens_per_s = float(res["tokens_per_s"][i])
    low, high = band_factors(profile)
    shape = res["step"].shape
    mem = {k: _element(v, shape, i) / GIB for k, v in res["memory"].items() if k != "total"}
    return PerfResult(
        step_time_s=float(res["step"][i]), tokens_per_s=tokens_per_s,
        model_tflops_per_gpu=float(res["model_tflops_per_gpu"][i]),
        mfu=float(res["mfu"][i]), hfu=float(res["hfu"][i]),
        memory_gib_per_gpu=float(res["memory_gib"][i]), fits=bool(res["fits"][i]),
        parallelism=par,
        breakdown={k: _element(res[k], shape, i) for k in BREAKDOWN_KEYS},
        gpus=gpus, gpus_used=par.gpus, memory_breakdown_gib=mem,
        traffic_bytes={k: _element(v, shape, i) for k, v in res["traffic"].items()},
        profile=profile, tokens_per_s_band=(tokens_per_s * low, tokens_per_s * high))


def _element(value, shape: tuple[int, ...], i: int) -> float:
    """Element ``i`` of ``value`` broadcast to ``shape`` (a grid's column or a scalar the
    whole grid shares), without building the broadcast view where it is not needed."""
    a = np.asarray(value)
    if a.ndim == 0:
        return float(a)
    if a.shape == shape:
        return float(a[i])
    return float(np.broadcast_to(a, shape)[i])


def evaluate(workload: WorkloadLike, system: GpuSystemLike, network: NetworkSpec,
             par: Parallelism, profile: str | None = None) -> PerfResult:
    """Step time, throughput, MFU/HFU and memory of one configuration on par.gpus GPUs.
    Raises ValueError if the degrees are impossible (see invalid_degrees)."""
    problems = invalid_degrees(workload, system, par)
    if problems:
        raise ValueError("; ".join(problems))
    profile = resolve_profile(workload, profile)
    arch = arch_of(workload)
    grid = {"tp": np.array([par.tp]), "pp": np.array([par.pp]), "dp": np.array([par.dp]),
            "cp": np.array([par.cp]), "ep": np.array([par.ep]), "vpp": np.array([par.vpp]),
            "etp": np.array([par.expert_tp if arch.is_moe else par.tp]),
            "mb": np.array([par.micro_batch]),
            "rc": np.array([RECOMPUTE_MODES.index(par.recompute)]),
            "sh": np.array([SHARDING_MODES.index(par.sharding)])}
    res = evaluate_grid(arch, system, network, grid, par.gpus, profile=profile)
    return _result(arch, res, grid, 0, par.gpus, profile)


def search(workload: WorkloadLike, system: GpuSystemLike, network: NetworkSpec, gpus: int,
           fixed: Mapping[str, int | str] | None = None,
           profile: str | None = None, candidates: Candidates | None = None) -> PerfResult:
    """Best-throughput configuration that fits memory on at most `gpus` GPUs (degrees in
    `fixed` held). If nothing fits, the least-memory candidate with fits=False.
    `candidates`: feasible_candidates(workload, system, gpus, fixed, profile), computed
    once when the same search runs on many networks (memory does not depend on them).
    Raises ValueError if no candidate exists at all."""
    profile = resolve_profile(workload, profile)
    arch = arch_of(workload)
    if candidates is None:
        candidates = feasible(arch, system, gpus, fixed, profile)
    if len(candidates) == 0:
        raise ValueError(f"no parallel configuration of {workload.name} fits in {gpus} GPUs"
                         + (f" with {dict(fixed)}" if fixed else ""))
    # only configurations that fit memory (if any), and of those, if their step-time
    # bounds are known, the ones that can be fastest (and some slower)
    if candidates.step_bound is None:
        grid = candidates.grid()
        res = evaluate_grid(arch, system, network, grid, gpus, profile=profile)
    else:
        grid, res = timed_contenders(arch, system, network, candidates, gpus, profile)
    return _result(arch, res, grid, best_index(res), gpus, profile)


def feasible_candidates(workload: WorkloadLike, system: GpuSystemLike, gpus: int,
                        fixed: Mapping[str, int | str] | None = None,
                        profile: str | None = None) -> Candidates:
    """The configurations `search` times on `gpus` GPUs: those that fit memory (all, if
    none does), with their step time on an ideal network when they fit, which lets
    `search` time only those that can be fastest (models.perf.search.timed_contenders).
    The network does not enter."""
    arch, profile = arch_of(workload), resolve_profile(workload, profile)
    cands = feasible(arch, system, gpus, fixed, profile)
    return with_step_bound(arch, system, cands, gpus, profile) if cands.fits else cands
