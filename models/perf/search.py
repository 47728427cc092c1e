"""Vectorised evaluation of configuration grids and the parallelism search.

The search enumerates tp, pp, vpp, cp, ep, micro-batch and recompute over fixed
choice sets; for each combination the data-parallel degree follows from the GPU count
(`data_parallel_degree`): the fewest micro-batches per rank m the GPUs allow, then the
smallest dp giving that m. GPUs beyond tp*pp*cp*dp are idle (uneven batches: ranks get
ceil(global_batch/dp) sequences, padded to m*micro_batch; the step takes that time).
More GPUs never increase m, and equal m gives the same dp, so the best throughput is
monotone non-decreasing in the GPU count.

Cost: dp depends on neither recompute nor sharding, so candidates are factored as rows x
(rc, sh) and memory is computed on that product by broadcasting (`Candidates`); only
the configurations that fit are laid out and timed. A caller timing one GPU count on
many networks keeps them (`feasible`) with their step time on an ideal network, a lower
bound on every network's, and the network-independent part of the step time and memory
of the 1,024 with the smallest bounds; a search times those on its network and, in the
rare case some other configuration's bound is within the best step found, those too
(`timed_contenders`): the answer is unchanged.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from models.perf.calibration import DEFAULT_PROFILE, Efficiency, efficiency_for, profile_of
from models.perf.flops import Arch
from models.perf.memory import GIB, RC_FULL, RC_NONE, memory_bytes
from models.perf.timing import local_terms, on_network
from models.perf.types import (
    RECOMPUTE_MODES,
    SHARDING_MODES,
    GpuSystemLike,
    NetworkSpec,
    peak_tflops,
)

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
PP_CHOICES = (1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 96, 128)
VPP_CHOICES = (1, 2, 3, 4, 6, 8)
CP_CHOICES = (1, 2, 4, 8, 16, 32)
MIN_TOKENS_PER_CP_RANK = 4096
"""Context parallelism is only searched while each rank keeps >= this many tokens of a
sequence (below that the ring exchange dominates; Llama 3 used CP only for 128k)."""
MICRO_BATCH_CHOICES = (1, 2, 4, 8)


def degree_checks(arch: Arch, system: GpuSystemLike, tp: int, pp: int, cp: int, ep: int,
                  vpp: int, dp: int | None = None, etp: int | None = None) -> list[str]:
    """Reasons a set of degrees is impossible (empty list = possible). Each names the
    option at fault. etp None = tp."""
    problems = []
    etp = tp if etp is None else etp
    if tp % etp:
        problems.append(f"--etp {etp} does not divide --tp {tp}")
    if tp > system.nvlink_domain_gpus:
        problems.append(f"--tp {tp} exceeds the NVLink domain of "
                        f"{system.nvlink_domain_gpus} GPUs")
    if arch.heads % tp:
        problems.append(f"--tp {tp} does not divide the {arch.heads} attention heads")
    if pp * vpp > arch.layers:
        problems.append(f"--pp {pp} x --vpp {vpp} exceeds the {arch.layers} layers")
    if vpp > 1 and pp == 1:
        problems.append(f"--vpp {vpp} needs --pp > 1")
    if arch.schedule == "dualpipe" and (pp < 2 or pp % 2):
        problems.append(f"--pp {pp}: schedule 'dualpipe' needs an even pipeline degree "
                        f"of at least 2 (rank i pairs with rank pp-1-i)")
    if arch.seq_len % cp:
        problems.append(f"--cp {cp} does not divide seq_len {arch.seq_len}")
    if ep > 1 and not arch.is_moe:
        problems.append(f"--ep {ep} given for a dense model")
    if arch.is_moe and arch.experts % ep:
        problems.append(f"--ep {ep} does not divide the {arch.experts} experts")
    if dp is not None:
        if (tp * dp * cp) % (etp * ep):
            problems.append(f"--ep {ep} x --etp {etp} does not divide tp*dp*cp = "
                            f"{tp * dp * cp}")
        if dp > arch.global_batch:
            problems.append(f"--dp {dp} exceeds the global batch of "
                            f"{arch.global_batch} sequences")
    return problems


@lru_cache(maxsize=256)
def _model_parallel_choices(arch: Arch, nvlink_domain_gpus: int,
                            fixed: tuple[tuple[str, int], ...]) -> tuple[tuple[int, ...], ...]:
    """Valid (tp, pp, vpp, cp, ep, etp) for a model and NVLink domain, whatever the GPU
    count (cached: the search runs at many GPU counts of one design). MoE models may
    shard experts tp-way or not at all (etp in {tp, 1}); dense ones have etp = tp."""
    pinned = dict(fixed)
    system = _Domain(nvlink_domain_gpus)
    ep_default = tuple(e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
                       if arch.experts % e == 0) if arch.is_moe else (1,)
    cp_default = tuple(c for c in CP_CHOICES
                       if arch.seq_len % c == 0 and arch.seq_len // c >= MIN_TOKENS_PER_CP_RANK
                       or c == 1)

    def choices(key: str, default: tuple) -> tuple:
        return (pinned[key],) if key in pinned else default

    out = []
    for tp, pp, vpp, cp, ep in itertools.product(
            choices("tp", TP_CHOICES), choices("pp", PP_CHOICES), choices("vpp", VPP_CHOICES),
            choices("cp", cp_default), choices("ep", ep_default)):
        etps = (pinned["etp"],) if "etp" in pinned else (
            sorted({tp, 1}, reverse=True) if arch.is_moe else (tp,))
        out.extend((tp, pp, vpp, cp, ep, etp) for etp in etps
                   if not degree_checks(arch, system, tp, pp, cp, ep, vpp, etp=etp))
    return tuple(out)


@lru_cache(maxsize=256)
def _model_parallel_array(arch: Arch, nvlink_domain_gpus: int,
                          fixed: tuple[tuple[str, int], ...]) -> np.ndarray:
    """_model_parallel_choices as an int64 array (rows in its order, shape (n, 6)),
    kept: laying out ~5k tuples costs ~3 ms, at every GPU count."""
    choices = _model_parallel_choices(arch, nvlink_domain_gpus, fixed)
    out = np.array(choices, dtype=np.int64).reshape(len(choices), 6)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class _Domain:
    """The one system attribute degree_checks reads."""

    nvlink_domain_gpus: int


@dataclass(frozen=True)
class Candidates:
    """A set of candidate configurations, factored: `rows` hold (tp, pp, vpp, cp, ep,
    etp, mb, dp), everything the GPU count and the global batch constrain; `inner` the
    (rc, sh) choices, free in every row. Configuration i = row i // len(inner) with inner
    choice i % len(inner) (grid order: tp, pp, ..., mb, rc, sh); `kept` lists the
    configurations in the set, ascending. Memory is computed on the factored form
    (rows x inner by broadcasting), so only the configurations kept are ever laid out."""

    rows: dict[str, np.ndarray]
    inner: dict[str, np.ndarray]
    kept: np.ndarray
    fits: bool = False
    """Every kept configuration fits in HBM."""
    step_bound: np.ndarray | None = None
    """Each kept configuration's step time on IDEAL_NETWORK [s] (with_step_bound); set
    only when every kept configuration fits memory."""
    first: np.ndarray | None = None
    """Indices (ascending) of the FIRST_CONFIGURATIONS smallest step bounds, found once
    per set by with_step_bound (an argpartition over ~45k bounds costs ~1 ms)."""
    beyond_first: float = math.inf
    """The smallest step bound not in `first` [s] (inf: `first` holds them all)."""
    first_grid: dict[str, np.ndarray] | None = None
    """grid(first), laid out once per set."""
    first_terms: dict[str, Any] | None = None
    """grid_terms of `first_grid` (the step time's network-independent part), computed
    once per set."""
    first_memory: dict[str, Any] | None = None
    """The memory part of evaluate_grid on `first_grid` (grid_memory): it does not depend
    on the network, so it is computed once per set, not once per search (~a quarter of
    a search's time)."""

    def __len__(self) -> int:
        return len(self.kept)

    def grid(self, subset: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The configurations (those of `subset`, a mask or indices into `kept`, if
        given) as flat columns (keys tp, pp, vpp, cp, ep, etp, mb, rc, sh, dp), in grid
        order."""
        kept = self.kept if subset is None else self.kept[subset]
        row, col = np.divmod(kept, len(self.inner["rc"]))
        out = {k: v[row] for k, v in self.rows.items() if k != "dp"}
        out |= {k: v[col] for k, v in self.inner.items()}
        return out | {"dp": self.rows["dp"][row]}


def candidates(arch: Arch, system: GpuSystemLike, gpus: int,
               fixed: Mapping[str, int | str] | None = None,
               profile: str = DEFAULT_PROFILE) -> Candidates:
    """All candidate configurations for at most `gpus` GPUs, honouring `fixed` degrees
    (keys tp, pp, dp, cp, ep, etp, vpp, micro_batch, recompute, sharding); sharding
    otherwise from the profile's choices. Every condition (dp, GPU count, expert
    groups, micro-batch <= sequences per rank) is on the rows."""
    fixed = {k: v for k, v in (fixed or {}).items()
             if v is not None and not (k == "etp" and not arch.is_moe)}

    def choices(key: str, default: tuple) -> tuple:
        return (fixed[key],) if key in fixed else default

    fixed_outer = tuple(sorted((k, v) for k, v in fixed.items()
                               if k in ("tp", "pp", "vpp", "cp", "ep", "etp")))
    every = _model_parallel_array(arch, system.nvlink_domain_gpus, fixed_outer)
    o = every[every[:, 0] * every[:, 1] * every[:, 3] <= gpus]
    rc_codes = tuple(RECOMPUTE_MODES.index(r) for r in choices("recompute", RECOMPUTE_MODES))
    sh_codes = tuple(SHARDING_MODES.index(x) for x in
                     choices("sharding", profile_of(profile).sharding_choices))
    mbs = choices("micro_batch", MICRO_BATCH_CHOICES)
    inner = dict(zip(("rc", "sh"), np.array(list(itertools.product(rc_codes, sh_codes)),
                                            dtype=np.int64).T, strict=True))
    names = ("tp", "pp", "vpp", "cp", "ep", "etp", "mb")
    if not len(o):
        empty = np.zeros(0, dtype=np.int64)
        return Candidates({k: empty for k in (*names, "dp")}, inner, empty)
    idx_o = np.repeat(np.arange(len(o)), len(mbs))
    g = dict(zip(names, (*o[idx_o].T, np.tile(np.array(mbs, dtype=np.int64), len(o))),
                 strict=True))
    if "dp" in fixed:
        g["dp"] = np.full(len(idx_o), int(fixed["dp"]), dtype=np.int64)
    else:
        g["dp"] = data_parallel_degree(arch.global_batch, gpus, g)
    per_rank = np.ceil(arch.global_batch / np.maximum(g["dp"], 1))
    keep = ((g["dp"] >= 1) & (g["tp"] * g["pp"] * g["cp"] * g["dp"] <= gpus)
            & ((g["tp"] * g["dp"] * g["cp"]) % (g["etp"] * g["ep"]) == 0)
            & (g["mb"] <= per_rank) & (g["dp"] <= arch.global_batch))
    rows = {k: v[keep] for k, v in g.items()}
    return Candidates(rows, inner, np.arange(len(rows["dp"]) * len(inner["rc"])))


def candidate_grid(arch: Arch, system: GpuSystemLike, gpus: int,
                   fixed: Mapping[str, int | str] | None = None,
                   profile: str = DEFAULT_PROFILE) -> dict[str, np.ndarray]:
    """`candidates` as flat columns."""
    return candidates(arch, system, gpus, fixed, profile).grid()


def feasible(arch: Arch, system: GpuSystemLike, gpus: int,
             fixed: Mapping[str, int | str] | None = None,
             profile: str = DEFAULT_PROFILE) -> Candidates:
    """The candidates that fit in HBM (all of them if none fits, for the least-memory
    answer). Independent of the network, so a caller timing one GPU system on many
    networks computes it once per GPU count."""
    cands = candidates(arch, system, gpus, fixed, profile)
    column = {k: v[:, None] for k, v in cands.rows.items()}
    row_of = {k: v[None, :] for k, v in cands.inner.items()}
    fits = fitting(arch, system, column | row_of, profile)  # rows x inner
    if not fits.any():
        return cands
    some = fits.any(axis=1)  # rows with a choice that fits (the others are dropped)
    return Candidates({k: v[some] for k, v in cands.rows.items()}, cands.inner,
                      np.flatnonzero(fits[some]), fits=True)


IDEAL_NETWORK = NetworkSpec(gbps_per_gpu=math.inf, in_network_reduction=True)
"""Infinite NIC bandwidth, in-network reduction, one non-blocking pod and leaf: every
NIC transfer takes no time, NVLink ones their usual time."""
FIRST_CONFIGURATIONS = 1024
"""Configurations timed first in `timed_contenders` (the smallest step-time bounds).
On the default solve's 2,784 searches they hold every contender 99% of the time
(median 338), so one timing usually decides a search."""
BOUND_MARGIN = 1e-9
"""Relative slack on the bound test (floating-point rounding of two sums of the same
terms; step times differ by far more between configurations)."""


def with_step_bound(arch: Arch, system: GpuSystemLike, cands: Candidates, gpus: int,
                    profile: str = DEFAULT_PROFILE) -> Candidates:
    """`cands` (all fitting memory) with their step time on IDEAL_NETWORK, a lower
    bound on their step time on any network: every network time is >= its ideal value
    (0 for NIC transfers), t_cp = max(t_link - t_core, 0) is non-decreasing in t_link,
    and a slower micro-batch (t_mb + d) adds m*d + (pp-1)/vpp*d to the step while the
    exposed DP time max(t_dp - 0.8*t_mb*w, 0) falls by at most 0.8*d*w, with
    w = 1 + (pp-1)/vpp <= m + (pp-1)/vpp (w = m for FSDP)."""
    ideal = time_grid(arch, system, IDEAL_NETWORK, cands.grid(), gpus, profile=profile)
    step = ideal["step"]
    if len(step) <= FIRST_CONFIGURATIONS:
        first, beyond = np.arange(len(step)), math.inf
    else:
        part = np.argpartition(step, FIRST_CONFIGURATIONS - 1)
        first = np.sort(part[:FIRST_CONFIGURATIONS])
        beyond = float(step[part[FIRST_CONFIGURATIONS:]].min())
    grid = cands.grid(first)
    m = np.broadcast_to(ideal["m"], step.shape)[first]  # micro-batches: not the network's
    return dataclasses.replace(cands, step_bound=step, first=first, beyond_first=beyond,
                               first_grid=grid,
                               first_terms=grid_terms(arch, system, grid, profile=profile),
                               first_memory=grid_memory(arch, system, grid, m, profile))


def timed_contenders(arch: Arch, system: GpuSystemLike, network: NetworkSpec,
                     cands: Candidates, gpus: int, profile: str = DEFAULT_PROFILE
                     ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """A grid of `cands` (with step_bound) holding every configuration that can be the
    fastest on `network`, and its evaluate_grid. The FIRST_CONFIGURATIONS smallest
    bounds are timed, best step t*; configuration i can be fastest only if step_bound_i
    <= t* (1 + BOUND_MARGIN) (step_i >= step_bound_i). When that limit is below every
    bound left out (cands.beyond_first), the first ones hold all the contenders, and
    the others among them are slower than t* by more than the margin (so best_index
    picks the same configuration, ties included, in the same grid order); else those
    contenders are timed."""
    grid = cands.first_grid
    res = time_grid(arch, system, network, grid, gpus, profile=profile,
                    local=cands.first_terms) | cands.first_memory
    limit = res["step"].min() * (1.0 + BOUND_MARGIN)
    if limit < cands.beyond_first:
        return grid, res
    grid = cands.grid(cands.step_bound <= limit)
    return grid, evaluate_grid(arch, system, network, grid, gpus, profile=profile)


def data_parallel_degree(global_batch: int, gpus: int,
                         g: Mapping[str, np.ndarray]) -> np.ndarray:
    """The data-parallel degree the search uses for each (tp, pp, cp, ep, mb): the
    fewest micro-batches per rank the GPUs allow, then the smallest dp that achieves
    them (fewer GPUs busy, less DP traffic). Step time falls with the micro-batch count
    and memory with dp, so smaller dp are dominated; dp must be a multiple of
    q = etp*ep/gcd(etp*ep, tp*cp) (expert groups are carved from tp*dp*cp). 0 = no
    valid dp."""
    group = g["etp"] * g["ep"]
    q = group // np.gcd(group, g["tp"] * g["cp"])
    dp_max = np.minimum(gpus // (g["tp"] * g["pp"] * g["cp"]), global_batch)
    dp_q = (dp_max // q) * q
    m_min = np.ceil(np.ceil(global_batch / np.maximum(dp_q, 1)) / g["mb"])
    dp = np.ceil(np.ceil(global_batch / (m_min * g["mb"])) / q) * q
    return np.where(dp_q >= 1, dp, 0).astype(np.int64)


def evaluate_grid(arch: Arch, system: GpuSystemLike, network: NetworkSpec,
                  grid: Mapping[str, np.ndarray], gpus: int,
                  efficiency: Efficiency | None = None,
                  profile: str = DEFAULT_PROFILE) -> dict[str, np.ndarray]:
    """Step time, throughput, MFU/HFU and memory of every configuration in `grid`
    (without 'etp'/'sh' keys: etp = tp, the distributed optimizer).

    MFU/HFU and model TFLOP/s per GPU are over all `gpus` (idle ones included)."""
    prof = profile_of(profile)
    res = time_grid(arch, system, network, grid, gpus, efficiency, prof.name)
    return res | grid_memory(arch, system, grid, res["m"], prof.name)


def grid_memory(arch: Arch, system: GpuSystemLike, grid: Mapping[str, np.ndarray], m,
                profile: str = DEFAULT_PROFILE) -> dict[str, Any]:
    """The memory part of evaluate_grid: per-GPU memory by component ('memory'), its
    total in GiB and whether it fits HBM, for `m` micro-batches per pipeline."""
    etp, sh = grid.get("etp", grid["tp"]), grid.get("sh", SHARDING_MODES.index("optimizer"))
    mem = memory_bytes(arch, grid["tp"], grid["pp"], grid["dp"], grid["cp"], grid["ep"],
                       grid["vpp"], grid["mb"], grid["rc"], m, etp=etp, sh=sh,
                       profile=profile_of(profile))
    return {"memory_gib": mem["total"] / GIB,
            "fits": mem["total"] <= system.hbm_gib * GIB, "memory": mem}


def time_grid(arch: Arch, system: GpuSystemLike, network: NetworkSpec,
              grid: Mapping[str, np.ndarray], gpus: int,
              efficiency: Efficiency | None = None,
              profile: str = DEFAULT_PROFILE,
              local: dict[str, Any] | None = None) -> dict[str, np.ndarray]:
    """evaluate_grid without the memory model (the calibration fit, whose grids hold only
    configurations that fit, calls this thousands of times). `local`: grid_terms of
    these arguments, if already known (the grid timed on many networks)."""
    prof = profile_of(profile)
    if local is None:
        local = grid_terms(arch, system, grid, efficiency, prof.name)
    comp = on_network(arch, system, network, local, prof)
    step = comp["step"]
    tokens = arch.global_batch * arch.seq_len
    peak = peak_tflops(system, arch.precision) * 1e12
    model_flops = arch.model_flops_per_step
    rc = grid["rc"]
    extra = np.where(rc == RC_FULL, arch.fwd_gemm - arch.fwd_last_stage
                     + arch.fwd_attn_core, np.where(rc == RC_NONE, 0.0, arch.fwd_attn_core))
    hw_flops = model_flops + extra * tokens
    per_gpu = model_flops / step / gpus
    return {**comp, "tokens_per_s": tokens / step, "model_tflops_per_gpu": per_gpu / 1e12,
            "mfu": per_gpu / peak, "hfu": hw_flops / step / gpus / peak}


def grid_terms(arch: Arch, system: GpuSystemLike, grid: Mapping[str, np.ndarray],
               efficiency: Efficiency | None = None,
               profile: str = DEFAULT_PROFILE) -> dict[str, Any]:
    """The network-independent terms of the step time of every configuration in `grid`
    (models.perf.timing.local_terms) at the system's calibrated efficiency."""
    prof = profile_of(profile)
    eff = efficiency or efficiency_for(system.generation, arch.precision, prof.name,
                                       system_id=getattr(system, "id", None))
    etp, sh = grid.get("etp", grid["tp"]), grid.get("sh", SHARDING_MODES.index("optimizer"))
    return local_terms(arch, system, grid["tp"], grid["pp"], grid["dp"], grid["cp"],
                       grid["ep"], grid["vpp"], grid["mb"], grid["rc"], eff.gemm_max,
                       eff.half_dim, eff.precision_factor, etp=etp, sh=sh, profile=prof,
                       moe_bytes=eff.moe_bytes, expert_half_tokens=eff.expert_half_tokens,
                       expert_fixed_us=eff.expert_fixed_us,
                       elementwise_bytes=eff.elementwise_bytes,
                       peak_fraction=eff.peak_fraction)


def fitting(arch: Arch, system: GpuSystemLike, grid: Mapping[str, np.ndarray],
            profile: str = DEFAULT_PROFILE) -> np.ndarray:
    """Which configurations of `grid` fit in HBM (the memory model alone, cheaper than
    timing them). m, the micro-batches per pipeline, as in step_components."""
    per_rank = np.ceil(arch.global_batch / np.maximum(grid["dp"], 1))
    m = np.ceil(per_rank / grid["mb"])
    mem = memory_bytes(arch, grid["tp"], grid["pp"], grid["dp"], grid["cp"], grid["ep"],
                       grid["vpp"], grid["mb"], grid["rc"], m, etp=grid.get("etp"),
                       sh=grid.get("sh", SHARDING_MODES.index("optimizer")),
                       profile=profile_of(profile))
    return mem["total"] <= system.hbm_gib * GIB


def best_index(result: Mapping[str, np.ndarray]) -> int:
    """Highest-throughput configuration that fits (first in grid order on ties); if none
    fits, the one needing the least memory."""
    fits = result["fits"]
    if fits.any():
        return int(np.argmax(np.where(fits, result["tokens_per_s"], -np.inf)))
    return int(np.argmin(result["memory_gib"]))
