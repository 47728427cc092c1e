"""The design as the reliability model sees it, and the model's result.

``ReliabilityInputs`` describes one cluster design from the job's point of view (how
many GPUs and nodes, which links are optical or copper, how many switches, how
checkpoints are written); ``ReliabilityRates`` (models.reliability.rates) holds the
component failure rates and recovery times. ``goodput(inputs, rates)`` turns both
into a ``ReliabilityResult``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from math import ceil

RECOVERY_MODES = ("storage", "in-memory")


@dataclass(frozen=True)
class ReliabilityInputs:
    """One design, as the training job sees it.

    gpus: GPUs the job trains on (spares come on top).
    gpus_per_node: GPUs per node; for NVL72 systems the node is the rack (72), so one
        failed part takes the whole rack out of the job.
    node_links_optical / node_links_copper: back-end link ends per node (one NIC port
        each) built with optics (transceiver or AOC) or copper (DAC/ACC/AEC).
    switches: back-end switches in the fabric the job uses (all tiers).
    switch_links_optical: optical switch-to-switch links in the whole fabric (of
        switch_optic_kind), unless switch_links gives them by medium kind.
    rail_optimized: leaf switches each carry one rail of many nodes (True) or all
        links of a few nodes in their rack/row (False, middle-of-rack).
    checkpoint_size_gb: size of one full checkpoint [GB].
    checkpoint_gbps: aggregate storage write (and read) bandwidth [GB/s].
    recovery: "storage" (checkpoints to shared storage) or "in-memory" (checkpoints in
        local and peer host memory, Gemini-style; state rebuilt from peers).
    node_optic_kind / switch_optic_kind / node_copper_kind: medium kinds of the links,
        keys into the rates' per-kind tables.
    leaf_down_ports: node-facing ports per leaf switch (radix/2 in a non-blocking
        leaf); sets a leaf failure's blast radius.
    peer_gbytes_per_s_per_node: back-end bandwidth per node [GB/s] used to rebuild a
        failed node's in-memory checkpoint shard from its peer.
    availability_target: probability that enough healthy nodes are at hand.
    hosts_per_node: host servers per node (1 on HGX; an NVL72 rack has 18 trays).
    switch_links: switch-to-switch links by medium kind {kind: links}; None: the
        switch_links_optical links of switch_optic_kind.
    node_links_by_kind: back-end link ends per node by medium kind {kind: links}, which
        may be fractional when placement builds the node links with several media; None:
        node_links_optical of node_optic_kind plus node_links_copper of node_copper_kind.
    spare_nodes: hot-spare nodes; None lets ``goodput`` choose the fewest that meet
        ``availability_target``.
    """

    gpus: int
    gpus_per_node: int
    node_links_optical: int
    node_links_copper: int
    switches: int
    switch_links_optical: int
    rail_optimized: bool
    checkpoint_size_gb: float
    checkpoint_gbps: float
    recovery: str
    node_optic_kind: str = "multimode"
    switch_optic_kind: str = "singlemode"
    node_copper_kind: str = "dac"
    leaf_down_ports: int = 32
    peer_gbytes_per_s_per_node: float = 400.0
    availability_target: float = 0.999
    spare_nodes: int | None = None
    hosts_per_node: int = 1
    switch_links: Mapping[str, int] | None = None
    node_links_by_kind: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        problems = []
        for name in ("gpus", "gpus_per_node", "leaf_down_ports", "hosts_per_node"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive (got {getattr(self, name)})")
        for name in ("node_links_optical", "node_links_copper", "switches",
                     "switch_links_optical"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must not be negative (got {getattr(self, name)})")
        for name in ("checkpoint_size_gb", "checkpoint_gbps", "peer_gbytes_per_s_per_node"):
            if not getattr(self, name) > 0:
                problems.append(f"{name} must be positive (got {getattr(self, name)})")
        if self.recovery not in RECOVERY_MODES:
            problems.append(f"recovery must be one of {RECOVERY_MODES} (got {self.recovery!r})")
        if not 0 < self.availability_target < 1:
            problems.append("availability_target must lie in (0, 1)")
        if any(v < 0 for v in (self.switch_links or {}).values()):
            problems.append("switch_links must not be negative")
        if any(v < 0 for v in (self.node_links_by_kind or {}).values()):
            problems.append("node_links_by_kind must not be negative")
        if self.spare_nodes is not None and self.spare_nodes < 0:
            problems.append("spare_nodes must not be negative")
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def nodes(self) -> int:
        """Nodes the job needs: ceil(gpus / gpus_per_node)."""
        return ceil(self.gpus / self.gpus_per_node)

    @property
    def node_links(self) -> int:
        """Back-end link ends (NIC ports) per node."""
        if self.node_links_by_kind is not None:
            return round(sum(self.node_links_by_kind.values()))
        return self.node_links_optical + self.node_links_copper

    def node_link_counts(self) -> dict[str, float]:
        """Node links per node by medium kind (kinds with links only)."""
        if self.node_links_by_kind is not None:
            return {k: v for k, v in sorted(self.node_links_by_kind.items()) if v > 0}
        counts = {self.node_optic_kind: self.node_links_optical}
        copper = self.node_copper_kind
        counts[copper] = counts.get(copper, 0) + self.node_links_copper
        return {k: v for k, v in counts.items() if v > 0}

    def switch_link_counts(self) -> dict[str, int]:
        """Switch-to-switch links of the fabric by medium kind (kinds with links only)."""
        links = (self.switch_links if self.switch_links is not None
                 else {self.switch_optic_kind: self.switch_links_optical})
        return {k: v for k, v in sorted(links.items()) if v > 0}


@dataclass(frozen=True)
class ReliabilityResult:
    """What failures cost a design.

    interruptions_per_day: unplanned job interruptions per day (all classes).
    mtbf_hours: mean time between job interruptions [h].
    checkpoint_write_s: time the job stalls to write one checkpoint (delta) [s].
    checkpoint_interval_s: compute time between checkpoints (Daly's tau_opt) [s].
    restart_s: restart after a node failure, the sum of restart_breakdown_s [s].
    goodput: expected useful fraction of wall-clock time (0..1).
    spare_nodes: hot-spare nodes (chosen or given).
    availability_target: the target the spares were sized for.
    availability: P(at most spare_nodes nodes are in repair) with those spares.
    breakdown: interruptions per day by failure class.
    interruptions_per_day_band / goodput_band: (low, high) over the rates' ranges
    (goodput_band None when not asked for, models.reliability.goodput.goodput).
    restart_breakdown_s: {detect, isolate, replace, reinit, reload, warmup} [s].
    recovery / profile: the recovery mode and the rate profile evaluated.
    planned_per_day: planned stops (maintenance) per day, outside interruptions_per_day.
    classes: the failure taxonomy of the design, one row per class.
    """

    interruptions_per_day: float
    mtbf_hours: float
    checkpoint_write_s: float
    checkpoint_interval_s: float
    restart_s: float
    goodput: float
    spare_nodes: int
    availability_target: float
    availability: float = 1.0
    breakdown: dict[str, float] = field(default_factory=dict)
    interruptions_per_day_band: tuple[float, float] = (0.0, 0.0)
    goodput_band: tuple[float, float] | None = (0.0, 0.0)
    restart_breakdown_s: dict[str, float] = field(default_factory=dict)
    recovery: str = ""
    profile: str = ""
    planned_per_day: float = 0.0
    classes: list[dict] = field(default_factory=list)
