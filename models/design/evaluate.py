"""Throughput, goodput and spares of one candidate design: the MILP's coefficients.

Two families, chosen by the instance's [objective]:
- performance = 'model' (default): the calibrated performance model's best parallelism
  (models.perf.search) on the design's GPUs and network. Evaluated exactly on a grid
  ~5% apart in GPU count, which bounds it in between (InterpolatedThroughput), because
  the search over thousands of ladder sizes would dominate the solve; candidates whose
  bounds could matter are then evaluated exactly (models.design.candidates.refine).
  performance = 'assumed_mfu': GPUs x dense peak x assumed_mfu / model FLOPs per token.
- reliability_model = 'model' (default): failures, checkpoints, restarts and hot spares
  (models.reliability) for the design's media, switches, checkpoint storage bandwidth
  and recovery mode (choices.recovery, a configuration dimension whose cost is in the
  BOM, so the MILP chooses it), under reliability.profile. Spares: the fewest meeting
  reliability.availability_target.
  reliability_model = 'overhead': goodput = 1 - overhead_fraction, spares =
  ceil(reliability.spare_fraction x nodes).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, TypeVar

from models.design.inputs import Inputs
from models.fabric import Fabric, MediaLine
from models.perf import Candidates, NetworkSpec, feasible_candidates, search
from models.perf.calibration import quantile_factor
from models.perf.flops import arch_of
from models.reliability import ReliabilityInputs, ReliabilityRates, design_inputs, goodput
from models.reliability.goodput import choose_spares

T = TypeVar("T")
BREAKPOINT_RATIO = 1.05
"""Spacing of exact performance evaluations in GPU count (5%)."""


@dataclass(frozen=True)
class PerfEstimate:
    tokens_per_s: float
    """Throughput, or a guaranteed lower bound on it when `exact` is False [tokens/s]."""
    mfu: float
    details: dict[str, Any] = field(default_factory=dict)
    upper_tokens_per_s: float | None = None
    """An upper bound when the estimate is not exact (None: exact)."""

    @property
    def exact(self) -> bool:
        return self.upper_tokens_per_s is None

    @property
    def upper(self) -> float:
        return self.tokens_per_s if self.exact else self.upper_tokens_per_s


@dataclass(frozen=True)
class GoodputEstimate:
    goodput: float
    details: dict[str, Any] = field(default_factory=dict)
    exact: bool = True
    """False when interpolated between exact evaluations."""


class Memo:
    """Where the evaluators' exact evaluations are looked up before they are computed,
    beyond each evaluator's own cache: here nowhere, every one is computed
    (``evaluate()``). solver.sweeps shares them between a sweep's worker processes, each
    computed by one of them. Evaluations are pure functions of their key, so where one
    comes from never changes a result."""

    rank = 0
    """This process's place among the processes sharing the memo (0: first, or alone)."""

    def __call__(self, kind: str, key: tuple, evaluate: Callable[[], T]) -> T:
        """The evaluation of `kind` ('perf', 'goodput', 'feasible') at `key`."""
        return evaluate()


@dataclass(frozen=True)
class Evaluators:
    throughput: Callable[..., PerfEstimate]
    """Throughput of a candidate as the MILP sees it (possibly interpolated)."""
    goodput: Callable[..., GoodputEstimate]
    spare_nodes: Callable[..., int]
    exact_throughput: Callable[..., PerfEstimate]
    """The same, evaluated exactly (for re-evaluating the chosen design)."""
    memo: Memo = field(default_factory=Memo)
    """Where the exact throughput and goodput are looked up before they are computed."""


# --- assumed MFU and overhead fraction -------------------------------------------------

def assumed_mfu_throughput(inputs: Inputs, parts, fabric: Fabric, gpus: int) -> PerfEstimate:
    """tokens/s = GPUs x dense peak [FLOP/s] x assumed_mfu / model FLOPs per token."""
    peak = parts.gpu.peak_tflops(inputs.workload.precision) * 1e12
    mfu = inputs.objective.assumed_mfu
    per_token = arch_of(inputs.workload).model_flops_per_token
    return PerfEstimate(gpus * peak * mfu / per_token, mfu, {"model": "assumed_mfu"})


def overhead_goodput(inputs: Inputs, parts, fabric: Fabric, nodes: int, spares: int,
                     media_lines: list[MediaLine], band: bool = True) -> GoodputEstimate:
    return GoodputEstimate(1.0 - inputs.objective.overhead_fraction, {"model": "overhead"})


def fraction_spares(inputs: Inputs, parts, nodes: int, node_kind: str | None = None) -> int:
    return math.ceil(inputs.reliability.spare_fraction * nodes)


# --- the performance model -------------------------------------------------------------

def pod_oversubscription(fabric: Fabric) -> float:
    """The oversubscription the job's traffic between pods meets: the wired ratio ``R_w``
    (a pod's endpoints over the links leaving it, ``Fabric.wired_oversubscription``, at
    most the requested ``R``) through super switches; through a mesh of the pod tops
    ``R_w·max(1, (P−1)/2)``, since the pods' data-parallel ring (the traffic mapped across
    them) sends each way to one neighbour pod, so uses 2 of the ``P−1`` peer bundles a
    pod's uplinks are split into (all of them for 2 or 3 pods). At least 1: uplinks
    rounded up past a pod's endpoints (``R_w`` < 1) carry no more than its NICs send, so
    the traffic between pods is never faster than the NIC. 1 without pods."""
    if fabric.spec.pods == 1:
        return 1.0
    ratio = fabric.wired_oversubscription
    return max(1.0, ratio * max(1.0, (fabric.pods - 1) / 2) if fabric.mesh else ratio)


def network_spec(parts, fabric: Fabric, gpus: int) -> NetworkSpec:
    """The scale-out network as the job sees it: NIC bandwidth per GPU, SHARP, pods, and
    the GPUs whose traffic meets in one leaf: a rail group (radix/2 nodes) when
    rail-optimized, the nodes whose NICs fill one leaf's radix/2 ports otherwise."""
    pods = fabric.spec.pods
    g = parts.gpu
    leaf_nodes = parts.radix // 2 if parts.rail_optimized else max(
        parts.radix // 2 // g.nics_per_node, 1)
    return NetworkSpec(
        gbps_per_gpu=parts.nic.port_gbps * g.nics_per_node / g.gpus_per_node,
        in_network_reduction=parts.switch.in_network_reduction,
        pod_gpus=math.ceil(gpus / pods) if pods > 1 else None,
        oversubscription=pod_oversubscription(fabric),
        rail_optimized=parts.rail_optimized, leaf_gpus=leaf_nodes * g.gpus_per_node)


def exact_throughput(inputs: Inputs, parts, fabric: Fabric, gpus: int,
                     candidates: Candidates | None = None) -> PerfEstimate:
    """Best parallelism of the workload on exactly `gpus` GPUs of this design; with
    objective.throughput_quantile q, its throughput at quantile q of the model's
    cross-validated error (models.perf.calibration.quantile_factor). `candidates`: the
    workload's feasible_candidates on these GPUs, if already known."""
    res = search(inputs.workload, parts.gpu, network_spec(parts, fabric, gpus), gpus,
                 candidates=candidates)
    if not res.fits:
        return PerfEstimate(0.0, 0.0, {"model": "perf", "fits": False,
                                       "memory_gib_per_gpu": res.memory_gib_per_gpu})
    q = inputs.objective.throughput_quantile
    factor = 1.0 if q is None else quantile_factor(q, res.profile)
    return PerfEstimate(res.tokens_per_s * factor, res.mfu * factor, {
        "model": "perf", "fits": True, "profile": res.profile,
        "tokens_per_s_band": list(res.tokens_per_s_band), "throughput_quantile": q,
        "predicted_tokens_per_s": res.tokens_per_s,
        "parallelism": res.parallelism.as_dict(),
        "gpus_used": res.gpus_used,
        "traffic_gb_per_step": {k: v / 1e9 for k, v in res.traffic_bytes.items()},
        "hfu": res.hfu, "step_time_s": res.step_time_s,
        "memory_gib_per_gpu": res.memory_gib_per_gpu, "breakdown_s": res.breakdown})


class InterpolatedThroughput:
    """Bounds on exact_throughput from a grid of GPU counts ~5% apart.

    Grid points are whole nodes, gpus_per_node * ceil(1.05^i); each is evaluated once per
    (GPU system, network as the job sees it) and cached, so fabrics that look the same to
    the job (e.g. Spectrum-X and Tomahawk 5 at 400G) share evaluations; the configurations
    that fit memory do not depend on the network and are kept per (GPU system, GPUs). The best
    throughput is non-decreasing in GPUs (the search leaves GPUs idle rather than lose
    throughput), so between grid points lo < g < hi:
        T(lo) <= T(g) <= T(hi), and T(g) = T(hi) when hi's best configuration uses <= g
    GPUs (it then runs on g). The estimate is the lower bound, exact in that case;
    `models.design.candidates.refine` evaluates exactly wherever the bounds could matter.
    """

    def __init__(self, memo: Memo | None = None) -> None:
        self._cache: dict[tuple, tuple[PerfEstimate, int]] = {}
        self._feasible: dict[tuple[str, int], Candidates] = {}
        self._memo = memo or Memo()

    def feasible(self, inputs: Inputs, system, gpus: int) -> Candidates:
        """The workload's feasible_candidates on `gpus` GPUs of `system`, kept per
        (system, GPUs) and looked up in the memo: exact evaluations of one GPU count
        on different networks share it (~15 ms of CPU, ~2 MB of arrays)."""
        key = (system.id, gpus)
        if key not in self._feasible:
            self._feasible[key] = self._memo("feasible", key, lambda: feasible_candidates(
                inputs.workload, system, gpus))
        return self._feasible[key]

    def add_feasible(self, known: dict[tuple[str, int], Candidates]) -> None:
        """Feasible sets computed elsewhere (another process), by (system id, GPUs)."""
        self._feasible |= known

    def _at(self, inputs: Inputs, parts, fabric: Fabric, gpus: int) -> tuple[PerfEstimate, int]:
        key = (parts.gpu.id, network_spec(parts, fabric, gpus), gpus)
        if key not in self._cache:
            def evaluate() -> tuple[PerfEstimate, int]:
                est = exact_throughput(inputs, parts, fabric, gpus,
                                       self.feasible(inputs, parts.gpu, gpus))
                return est, est.details.get("gpus_used", gpus)
            self._cache[key] = self._memo("perf", key, evaluate)
        return self._cache[key]

    def exact(self, inputs: Inputs, parts, fabric: Fabric, gpus: int) -> PerfEstimate:
        """exact_throughput, cached like the grid points."""
        return self._at(inputs, parts, fabric, gpus)[0]

    def __call__(self, inputs: Inputs, parts, fabric: Fabric, gpus: int) -> PerfEstimate:
        lo, hi = grid_bracket(parts.gpu.gpus_per_node, gpus)
        if lo == hi:
            return self._at(inputs, parts, fabric, gpus)[0]
        (b, used_b) = self._at(inputs, parts, fabric, hi)
        if used_b <= gpus:  # exact without the lower point (786 of 2,662 on the default)
            return PerfEstimate(b.tokens_per_s, b.mfu * hi / gpus, b.details)
        (a, _) = self._at(inputs, parts, fabric, lo)
        return PerfEstimate(a.tokens_per_s, a.mfu * lo / gpus, a.details | {
            "bounded_between_gpus": [lo, hi]}, upper_tokens_per_s=b.tokens_per_s)


def grid_bracket(gpus_per_node: int, gpus: int) -> tuple[int, int]:
    """The grid points lo <= gpus <= hi next to `gpus` (lo = hi = gpus on a point): the
    GPU counts InterpolatedThroughput evaluates for `gpus`."""
    points = grid_points(gpus_per_node)
    i = bisect.bisect_left(points, gpus)
    return (gpus, gpus) if points[i] == gpus else (points[i - 1], points[i])


@cache
def grid_points(gpus_per_node: int, max_gpus: int = 10**8) -> list[int]:
    """GPU counts of exact evaluation, ascending: gpus_per_node * ceil(1.05^i)."""
    out, i = [], 0
    while not out or out[-1] < max_gpus:
        g = gpus_per_node * math.ceil(BREAKPOINT_RATIO ** i)
        if not out or g > out[-1]:
            out.append(g)
        i += 1
    return out


# --- the reliability model ---------------------------------------------------------------

class ModelGoodput:
    """Goodput and spares from models.reliability with the design's media, switches,
    recovery mode (a configuration dimension, chosen by the MILP with its cost) and the
    instance's rate profile."""

    def __init__(self, inputs: Inputs, memo: Memo | None = None):
        self.checkpoint_gb = inputs.checkpoint_gb
        self._rates = inputs.rates
        self._memo = memo or Memo()
        self._spares: dict[tuple, int] = {}
        self._goodput: dict[tuple, GoodputEstimate] = {}
        self._ladders: dict[tuple, list[tuple[int, int]]] = {}
        """(nodes, spares) found so far per (GPU system, NIC, layout, node links), sorted."""

    def inputs(self, inputs: Inputs, parts, nodes: int, recovery: str,
               fabric: Fabric | None = None, media_lines: list[MediaLine] | None = None,
               spares: int | None = None, node_kind: str | None = None) -> ReliabilityInputs:
        node_kind = node_kind or ("multimode" if parts.rail_optimized else "dac")
        return design_inputs(
            parts.gpu, parts.nic, parts.radix, parts.rail_optimized, nodes, fabric,
            media_lines or [], recovery, self.checkpoint_gb,
            nodes * parts.checkpoint_gbytes_per_s_per_node,
            inputs.reliability.availability_target, spares, node_kind)

    def rates(self, parts) -> ReliabilityRates:
        """The failure rates of the configuration's GPU generation under the instance's
        profile and multipliers (solver.prepare)."""
        return self._rates[parts.gpu.generation]

    def spare_nodes(self, inputs: Inputs, parts, nodes: int, node_kind: str | None = None
                    ) -> int:
        """Fewest hot spares meeting the availability target, for node links of
        `node_kind` (None: the layout's usual one). Node-level failures only (the
        recovery mode does not enter), so configurations with the same GPU system and
        node links share the answer. The answer for the next smaller size found so far
        starts the search (spares do not fall as nodes grow; a wrong hint is detected and
        ignored, models.reliability.spares.spares_needed)."""
        family = (parts.gpu.id, parts.nic.id, parts.rail_optimized, node_kind)
        key = (*family, nodes)
        if key not in self._spares:
            found = self._ladders.setdefault(family, [])
            i = bisect.bisect_left(found, (nodes,))
            spares = choose_spares(
                self.inputs(inputs, parts, nodes, "in-memory", node_kind=node_kind),
                self.rates(parts), at_least=found[i - 1][1] if i else 0)
            found.insert(i, (nodes, spares))
            self._spares[key] = spares
        return self._spares[key]

    def goodput(self, inputs: Inputs, parts, fabric: Fabric, nodes: int, spares: int,
                media_lines: list[MediaLine], band: bool = True) -> GoodputEstimate:
        """The reliability model's goodput of a design, kept per design (a sweep's
        scenarios refine the same candidates again) without its facility options (the
        facility does not change failures or restarts). ``band`` False: the details
        without ``goodput_band`` (two thirds of the model's time; the candidate ladders
        do not report it, the chosen design's exact re-evaluation does), the same
        goodput."""
        key = (parts.key.removesuffix(f"/{parts.redundancy}-{parts.cooling}"), fabric, nodes,
               spares, tuple(media_lines), inputs.reliability.availability_target, band)
        if key not in self._goodput:
            self._goodput[key] = self._memo("goodput", key, lambda: self._evaluate_goodput(
                inputs, parts, fabric, nodes, spares, media_lines, band))
        return self._goodput[key]

    def _evaluate_goodput(self, inputs: Inputs, parts, fabric: Fabric, nodes: int,
                          spares: int, media_lines: list[MediaLine], band: bool
                          ) -> GoodputEstimate:
        r = goodput(self.inputs(inputs, parts, nodes, parts.recovery, fabric, media_lines,
                                spares), self.rates(parts), band)
        return GoodputEstimate(r.goodput, {
            "model": "reliability", "recovery": r.recovery, "profile": r.profile,
            "interruptions_per_day": r.interruptions_per_day,
            "interruptions_per_day_band": list(r.interruptions_per_day_band),
            "mtbf_hours": r.mtbf_hours, "checkpoint_interval_s": r.checkpoint_interval_s,
            "checkpoint_write_s": r.checkpoint_write_s, "restart_s": r.restart_s,
            "restart_breakdown_s": r.restart_breakdown_s,
            **({"goodput_band": list(r.goodput_band)} if band else {}),
            "planned_per_day": r.planned_per_day,
            "spare_nodes": r.spare_nodes, "availability": r.availability,
            "interruptions_per_day_by_cause": r.breakdown})


def default_evaluators(inputs: Inputs, memo: Memo | None = None) -> Evaluators:
    """The evaluators the instance's [objective] asks for; the model's exact throughput
    and goodput looked up in `memo` before they are computed."""
    memo = memo or Memo()
    if inputs.objective.performance == "model":
        throughput = InterpolatedThroughput(memo)
        exact = throughput.exact
    else:
        throughput = exact = assumed_mfu_throughput
    if inputs.objective.reliability_model == "model":
        rel = ModelGoodput(inputs, memo)
        return Evaluators(throughput, rel.goodput, rel.spare_nodes, exact, memo)
    return Evaluators(throughput, overhead_goodput, fraction_spares, exact, memo)
