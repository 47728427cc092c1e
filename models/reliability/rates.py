"""Failure taxonomy: rates per component class -> job interruptions, with blast radius.

Classes (after Llama 3's root-cause table, the largest public breakdown):

=============== ============ ======================== ==========================================
class           unit         blast radius             stops the job
=============== ============ ======================== ==========================================
gpu             GPU          its node (NVL72: rack)   always (spare swap)
host            node (host)  its node                 always (spare swap)
nic             NIC port     its node                 always (spare swap)
node_link_<m>   node link    its node                 always (spare swap); flaps that recover
                                                      are not counted
leaf_switch     leaf         a rail (rail-optimized)  always (spares for the leaf's nodes, or
                             or the leaf's nodes      wait for the switch)
fabric_switch   spine/core   a pod's path diversity   share phi (redundant paths absorb the rest)
fabric_link_<m> switch link  a pod's path diversity   share phi; restart in place
software        host         the job                  always; restart in place
sdc             GPU          its node (drained)       always (spare swap, roll back)
planned         job          the job                  planned: checkpoint first, no lost work
=============== ============ ======================== ==========================================

Each rate carries a range (``Rate``): the source's 95% Poisson interval where it counted
events, else a stated range. Unplanned classes sum to the interruption rate Lambda;
planned maintenance is its own term (``rates.planned``, per job).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from math import ceil, exp, lgamma, log

from models.reliability.design import ReliabilityInputs

RANGE_Z = 0.95
"""Confidence of the Poisson interval of counted events."""


@cache  # pure; every scenario of a sweep derives the same rates (~5% of its time)
def half_chi2_quantile(k: int, q: float) -> float:
    """``chi2(q; 2k) / 2``: the ``x`` with ``P(Poisson(x) ≥ k) = q``, i.e.
    ``1 − e^{−x} Σ_{i<k} x^i / i! = q``, by bisection to the last bit (what
    ``scipy.stats.chi2.ppf(q, 2k) / 2`` gives to ~1e-15; scipy.stats is not imported:
    with Pyomo loaded it costs ~1 s of every command's start)."""

    def below_k(x: float) -> float:
        return sum(exp(-x + i * log(x) - lgamma(i + 1)) for i in range(k))

    low, high = 0.0, k + 10.0 * (k ** 0.5 + 1)
    while 1.0 - below_k(high) < q:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if mid in (low, high):
            break
        if 1.0 - below_k(mid) < q:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@dataclass(frozen=True)
class Rate:
    """A failure rate [1/h] of one unit, with its range."""

    per_h: float
    low_per_h: float
    high_per_h: float

    def __post_init__(self) -> None:
        if not 0 <= self.low_per_h <= self.per_h <= self.high_per_h:
            raise ValueError(f"need 0 <= low <= rate <= high (got {self.low_per_h}, "
                             f"{self.per_h}, {self.high_per_h})")

    @classmethod
    def fixed(cls, per_h: float) -> Rate:
        return cls(per_h, per_h, per_h)

    @classmethod
    def from_mttf(cls, mttf_h: float, mttf_range_h: tuple[float, float]) -> Rate:
        """1/MTTF with the range [1/longest, 1/shortest], widened to contain 1/MTTF."""
        low, high = min(mttf_range_h[0], mttf_h), max(mttf_range_h[1], mttf_h)
        return cls(1.0 / mttf_h, 1.0 / high, 1.0 / low)

    @classmethod
    def from_events(cls, mttf_h: float, events: int) -> Rate:
        """1/MTTF with the exact (Garwood) 95% Poisson interval of `events` counted over the
        exposure T = events x MTTF: [chi2(a/2; 2k) / 2T, chi2(1 - a/2; 2k + 2) / 2T]."""
        if events <= 0:
            raise ValueError("events must be positive")
        exposure = events * mttf_h
        a = 1.0 - RANGE_Z
        return cls(1.0 / mttf_h, half_chi2_quantile(events, a / 2) / exposure,
                   half_chi2_quantile(events + 1, 1 - a / 2) / exposure)

    def at(self, end: str) -> float:
        """The rate at 'low', 'central' or 'high'."""
        return {"low": self.low_per_h, "central": self.per_h, "high": self.high_per_h}[end]

    def scaled(self, factor: float) -> Rate:
        return Rate(self.per_h * factor, self.low_per_h * factor, self.high_per_h * factor)


@dataclass(frozen=True)
class RestartParts:
    """One recovery mode's restart parts [s]: detection of a fault that reports itself
    (detect_s) or of a hang or silent corruption found only by a collective timeout
    (hang_detect_s); re-initialisation grows with scale:
    reinit(G) = reinit_ref_s * (G / reinit_ref_gpus) ** reinit_exponent."""

    detect_s: float
    hang_detect_s: float
    isolate_s: float
    replace_s: float
    reinit_ref_s: float
    reinit_ref_gpus: float
    reinit_exponent: float
    warmup_s: float

    def reinit_s(self, gpus: int) -> float:
        return self.reinit_ref_s * (gpus / self.reinit_ref_gpus) ** self.reinit_exponent


@dataclass(frozen=True)
class ReliabilityRates:
    """Failure rates of one GPU system under one profile, and recovery figures.

    gpu: per GPU (HBM, SRAM, GSP, thermal). host: per host server (CPU, memory, PSU,
    SSD, board). nic: per back-end NIC port. link: per link by medium kind (both ends and
    the cable). switch: per switch. software: per host (bugs, collective hangs). sdc: per
    GPU. planned: per job (firmware/kernel upgrades).
    fabric_interrupt_fraction: share phi of spine/core switch and switch-link failures
        that stop the job.
    restart: restart parts by recovery mode.
    host_copy_gbytes_per_s_per_gpu: GPU -> host memory copy rate [GB/s].
    node_repair_h / switch_replace_h: time a failed node / leaf is out [h].
    """

    gpu: Rate
    host: Rate
    nic: Rate
    link: Mapping[str, Rate]
    switch: Rate
    software: Rate
    sdc: Rate
    planned: Rate
    fabric_interrupt_fraction: float
    restart: Mapping[str, RestartParts]
    host_copy_gbytes_per_s_per_gpu: float
    node_repair_h: float
    switch_replace_h: float
    profile: str = "default"

    def replace_s(self, recovery: str) -> float:
        """Spare swap of a restart in the `recovery` mode [s]: the time a restart without a
        swap saves (models.placement prices switch-link failures with it)."""
        return self.restart[recovery].replace_s


COPPER_KINDS = frozenset({"dac", "acc", "aec"})
FAILURE_RATE_FIELDS = ("gpu", "host", "nic", "switch", "software", "sdc", "planned")


def scaled_rates(rates: ReliabilityRates, factor: float = 1.0, *, end: str = "central",
                 **by_class: float) -> ReliabilityRates:
    """Every rate at its range's `end` ('low', 'central', 'high'), times `factor`, and times
    by_class[name] for the classes named (gpu, host, nic, switch, software, sdc, planned;
    optics and copper for the link kinds)."""
    def one(name: str, r: Rate) -> Rate:
        base = r if end == "central" else Rate.fixed(r.at(end))
        return base.scaled(factor * by_class.get(name, 1.0))

    links = {k: one("copper" if k in COPPER_KINDS else "optics", r)
             for k, r in rates.link.items()}
    return replace(rates, link=links,
                   **{n: one(n, getattr(rates, n)) for n in FAILURE_RATE_FIELDS})


@dataclass(frozen=True)
class FailureClass:
    """A class of job-stopping failures with one recovery behaviour.

    rate_per_h: interruptions per hour (units x per-unit rate x share that stops the job).
    nodes_lost: nodes each failure removes from the job (0: restart in place).
    out_h: how long the lost nodes stay out [h].
    needs_spare: whether the restart swaps in spare nodes.
    blast: what one failure takes out (gpu node, NVL72 rack, rail, pod, job).
    units, unit: how many failing units the design has, and what a unit is.
    low_per_h / high_per_h: the interruption rate at the ends of the rate's range.
    stops_share: share of the units' failures that stop the job.
    hang: found only by a collective timeout (software hangs, silent corruption), not by
        the fault's own report or inspection.
    corrupts_copies: the fault reaches every in-memory copy before it is found (silent
        corruption spreads through the gradients), so in-memory recovery must roll back
        to a persistent checkpoint on storage.
    """

    name: str
    rate_per_h: float
    nodes_lost: int
    out_h: float
    needs_spare: bool
    blast: str = "node"
    units: float = 0.0
    unit: str = ""
    low_per_h: float = 0.0
    high_per_h: float = 0.0
    stops_share: float = 1.0
    hang: bool = False
    corrupts_copies: bool = False


def link_failure_rate(kind: str, rates: ReliabilityRates) -> float:
    """Failure rate of one link of medium ``kind`` [1/h]."""
    if kind not in rates.link:
        raise ValueError(f"no link failure rate for medium kind {kind!r} "
                         f"(known: {', '.join(sorted(rates.link))})")
    return rates.link[kind].per_h


def leaf_switches(inputs: ReliabilityInputs) -> int:
    """Leaf switches: ceil(N * L / leaf_down_ports), at most the fabric's switches."""
    return min(inputs.switches, ceil(inputs.nodes * inputs.node_links / inputs.leaf_down_ports))


def leaf_blast_nodes(inputs: ReliabilityInputs) -> int:
    """Nodes one leaf failure stops: a rail of leaf_down_ports nodes (rail-optimized)
    or the leaf_down_ports // L nodes it serves entirely (middle-of-rack)."""
    if inputs.rail_optimized:
        return min(inputs.nodes, inputs.leaf_down_ports)
    return min(inputs.nodes, max(1, inputs.leaf_down_ports // max(1, inputs.node_links)))


def failure_classes(inputs: ReliabilityInputs, rates: ReliabilityRates) -> list[FailureClass]:
    """The unplanned job-stopping classes of a design, in taxonomy order; classes the design
    does not have (no copper links, no upper tiers) are left out."""
    n, g = inputs.nodes, inputs.gpus
    node = "NVL72 rack" if inputs.gpus_per_node > 8 else "node"
    repair, phi = rates.node_repair_h, rates.fabric_interrupt_fraction

    def cls(name: str, units: float, unit: str, r: Rate, blast: str, lost: int, out_h: float,
            spare: bool, share: float = 1.0, hang: bool = False,
            corrupts: bool = False) -> FailureClass:
        k = units * share
        return FailureClass(name, k * r.per_h, lost, out_h, spare, blast, units, unit,
                            k * r.low_per_h, k * r.high_per_h, share, hang, corrupts)

    out = [
        cls("gpu", g, "GPU", rates.gpu, node, 1, repair, True),
        cls("host", n * inputs.hosts_per_node, "host", rates.host, node, 1, repair, True),
        cls("nic", n * inputs.node_links, "NIC port", rates.nic, node, 1, repair, True),
    ]
    for kind, links in sorted(inputs.node_link_counts().items()):
        out.append(cls(f"node_link_{kind}", n * links, "node link", _link(rates, kind), node,
                       1, repair, True))
    leaves = leaf_switches(inputs)
    out.append(cls("leaf_switch", leaves, "leaf switch", rates.switch,
                   "rail" if inputs.rail_optimized else "leaf's nodes",
                   leaf_blast_nodes(inputs), rates.switch_replace_h, True))
    out.append(cls("fabric_switch", inputs.switches - leaves, "spine/core switch", rates.switch,
                   "pod paths", 0, 0.0, False, phi))
    for kind, links in sorted(inputs.switch_link_counts().items()):
        out.append(cls(f"fabric_link_{kind}", links, "switch link", _link(rates, kind),
                       "pod paths", 0, 0.0, False, phi))
    out += [
        cls("software", n * inputs.hosts_per_node, "host", rates.software, "job", 0, 0.0,
            False, hang=True),
        cls("sdc", g, "GPU", rates.sdc, node, 1, repair, True, hang=True, corrupts=True),
    ]
    return [c for c in out if c.units > 0]


def _link(rates: ReliabilityRates, kind: str) -> Rate:
    link_failure_rate(kind, rates)  # names the unknown kind
    return rates.link[kind]


def node_failure_rate(inputs: ReliabilityInputs, rates: ReliabilityRates) -> float:
    """lambda_node: failures per node-hour that take a node out of the job (its GPUs,
    host, NICs, links; SDC drains it too)."""
    return node_rate(failure_classes(inputs, rates), inputs.nodes)


def node_rate(classes: list[FailureClass], nodes: int) -> float:
    """lambda_node from a design's failure classes: the single-node classes' rate / nodes."""
    return sum(c.rate_per_h for c in classes if c.nodes_lost == 1) / nodes


def interruption_breakdown(inputs: ReliabilityInputs, rates: ReliabilityRates) -> dict[str, float]:
    """Unplanned job interruptions per day by class (sums to the total rate x 24)."""
    return dict(sorted((c.name, 24.0 * c.rate_per_h)
                       for c in failure_classes(inputs, rates)))


def interruption_rate_per_h(inputs: ReliabilityInputs, rates: ReliabilityRates) -> float:
    """Lambda: unplanned job interruptions per hour, all classes."""
    return sum(c.rate_per_h for c in failure_classes(inputs, rates))


def interruption_band_per_h(inputs: ReliabilityInputs, rates: ReliabilityRates,
                            classes: list[FailureClass] | None = None) -> tuple[float, float]:
    """(low, high) of Lambda: the classes' ranges are independent sources, so their
    deviations from the central rate add in quadrature on each side (`classes`:
    failure_classes(inputs, rates), if already known)."""
    classes = failure_classes(inputs, rates) if classes is None else classes
    total = sum(c.rate_per_h for c in classes)
    down = sum((c.rate_per_h - c.low_per_h) ** 2 for c in classes) ** 0.5
    up = sum((c.high_per_h - c.rate_per_h) ** 2 for c in classes) ** 0.5
    return max(total - down, 0.0), total + up
