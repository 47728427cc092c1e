"""Typed results of the pipeline and the one vocabulary of statuses.

Every ``--json`` document is one of the frozen dataclasses below, built in one place
(``solve``: solver.report; ``fabric``: solver.fabric_inputs; ``perf``:
solver.perf_inputs; ``reliability``: solver.reliability_inputs) and turned into JSON by
its one ``to_dict()``. The fields and their units are read here; the JSON Schema of the
documents is solver.schema.result (instances/result.schema.json).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    """Outcome of a solve or a placement (the ``status`` of every JSON document)."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    """A limit was hit; the incumbent is kept (no proof of optimality)."""
    INFEASIBLE = "infeasible"
    """No design (or placement) meets the limits; a diagnosis says why."""
    NO_SOLUTION = "no_solution"
    """Nothing found within the time limit."""

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


OPTIONAL = {"optional": True}
"""Field metadata: left out of ``to_dict()`` when None (present only in some documents)."""


def plain(value: Any) -> Any:
    """A JSON-ready copy: documents by their to_dict(), tuples as lists, mappings as dicts."""
    if isinstance(value, Document):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Document:
    """A section of a result document: its fields in order, nested sections as dicts."""

    def to_dict(self) -> dict[str, Any]:
        return {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                if not (f.metadata.get("optional") and getattr(self, f.name) is None)}


# --- solve --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Objective(Document):
    name: str
    """effective_tokens_per_s | capex_usd | tco_usd | usd_per_million_tokens."""
    value: float
    """The objective of the final design: exactly re-evaluated, and placed and re-checked
    when placed [unit]."""
    unit: str
    """tokens/s, USD or USD/Mtoken."""
    milp_value: float | None
    """The MILP's own objective value [unit]."""


@dataclass(frozen=True)
class MediaRow(Document):
    link_class: str
    medium: str
    """Catalog id of the medium (DAC, AOC, transceiver...)."""
    kind: str
    """dac | acc | aec | aoc | multimode | singlemode | coherent."""
    length_m: float
    """Routed length the design assumed [m]."""
    links: int


@dataclass(frozen=True)
class DesignSection(Document):
    """The design's decisions and the counts of its fabric."""

    gpu: str
    gpus: int
    """Training GPUs (spares excluded)."""
    nodes: int
    """Training nodes."""
    spare_nodes: int
    """Hot spare nodes."""
    switch: str
    nic: str
    tiers: int
    """Switch tiers in all (the tier joining pods included)."""
    pods: int
    oversubscription: float
    """Between pods as wired [x:1]: a pod's endpoints over the links leaving it
    (models.fabric.Fabric.wired_oversubscription; 1 without pods)."""
    oversubscription_requested: float
    """The ratio the design asked for (its fabric choice's, the decision a design file
    gives back to ``clusterplan place``); the wired one is at most this."""
    rail_optimized: bool
    nic_attachment: str
    """single | twin (port cages)."""
    recovery: str
    """storage | in-memory."""
    switches_per_tier: tuple[int, ...]
    """Leaf first."""
    links_per_tier: tuple[int, ...]
    """Node-leaf first."""
    media: tuple[MediaRow, ...]
    scalable_units_per_building: Mapping[str, int]
    job_mapping: Mapping[str, Any] | None
    """Where the job's parallel groups sit on the fabric (solver.job_mapping), or None."""
    checkpoint_storage_gbytes_per_s_per_node: float
    """Checkpoint write bandwidth bought per node [GB/s]."""
    facility: FacilityBuild | None
    """The facility built for the design; None without one."""
    support: Mapping[str, Any] | None
    """Front-end/storage network, storage, management and control plane sized from the
    design (models.support); None in the 'per-node' shortcut mode."""
    spares_pool: SparesPool
    pods_in_buildings: bool = False
    """One pod per building (site order), each placed whole in its building."""
    pods_in_halls: bool = False
    """One pod per hall (site order; pods_in_buildings too), each placed whole in its
    hall."""
    pod_join: str = "super"
    """How the pods are joined: 'super' switches, or a 'mesh' of the pod tops (no extra
    tier: its tier in switches_per_tier has 0 switches)."""


@dataclass(frozen=True)
class FacilityBuild(Document):
    """The facility built for the design (models.facility): electrical chain by
    redundancy, cooling by technology, shell with support space, and the PUE they give;
    redundancy and cooling are 'per-mw' (and the parts 0) in the $/MW shortcut mode."""

    redundancy: str
    """N | N+1 | 2N."""
    cooling: str
    """air | rdhx (rear-door heat exchanger) | dlc (direct liquid)."""
    pue: float
    """1 + electrical losses + cooling energy + other loads, each a fraction of IT."""
    site_availability: float | None
    """Of the power and cooling chain; None in the shortcut mode."""
    electrical_usd: float
    cooling_usd: float
    shell_usd: float
    capex_usd: float
    """electrical + cooling + shell [USD]."""

    @classmethod
    def of(cls, built) -> FacilityBuild:
        """From a models.facility.FacilityCost."""
        return cls(**built.summary())


@dataclass(frozen=True)
class SparesPool(Document):
    """The cold-spare parts pool (models.spares_pool): the BOM's 'spares' lines."""

    lead_time_days: float
    """Replacement lead time the pool covers [days]."""
    fill_rate: float
    """Probability the pool covers one lead time's failures."""
    parts: Mapping[str, float]
    """BOM item -> units stocked."""
    cost_usd: float


@dataclass(frozen=True)
class Power(Document):
    it_mw: float
    """Critical IT power [MW]."""
    facility_mw: float
    """Facility power, IT x PUE [MW]."""
    annual_energy_twh: float
    """Facility energy per year [TWh]."""

    @classmethod
    def of(cls, pc) -> Power:
        """From a models.power_cost.PowerCost."""
        return cls(pc.it_power_w / 1e6, pc.facility_power_w / 1e6, pc.annual_energy_kwh / 1e9)


@dataclass(frozen=True)
class Cost(Document):
    capex_usd: float
    """Equipment and facility build [USD]."""
    equipment_capex_usd: float
    facility_capex_usd: float
    annual_opex_usd: float
    """Electricity per year [USD]."""
    tco_usd: float
    """capex + tco_years x annual opex [USD]."""
    tco_years: int
    usd_per_gpu_hour: float
    """The full year's cost over GPU-hours (GPUs bought, spares included) [USD]."""
    usd_per_million_tokens: float
    """The full year's cost per million effective tokens [USD]."""
    annual_cost_usd: float
    """Capital recovery of equipment and facility, energy, support, software and staff
    for one year (models.tco) [USD]."""
    annual_cost_breakdown_usd: Mapping[str, float]

    @classmethod
    def of(cls, pc, year) -> Cost:
        """From a models.power_cost.PowerCost and the models.tco.AnnualCost of the year."""
        return cls(pc.capex_usd, pc.equipment_capex_usd, pc.facility_capex_usd,
                   pc.annual_opex_usd, pc.tco_usd, pc.years, year.usd_per_gpu_hour,
                   year.usd_per_million_tokens, year.total_usd,
                   year.summary()["annual_cost_breakdown_usd"])


@dataclass(frozen=True)
class MilpThroughput(Document):
    """The design MILP's own values (bounds or interpolations where not exact)."""

    tokens_per_s: float
    goodput: float
    effective_tokens_per_s: float
    mfu: float


@dataclass(frozen=True)
class Throughput(Document):
    tokens_per_s: float
    """Training throughput without failures [tokens/s]."""
    effective_tokens_per_s: float
    """tokens_per_s x goodput [tokens/s]."""
    mfu: float
    """Model FLOPs utilisation [0-1]."""
    goodput: float
    """Useful fraction of wall-clock time (failures, checkpoints, restarts) [0-1]."""
    time_to_train_days: float | None
    """workload.train_tokens / effective tokens/s [days]; None without train_tokens."""
    performance: Mapping[str, Any]
    """The performance model's figures (models.design.evaluate)."""
    reliability: Mapping[str, Any]
    """The reliability model's figures (models.design.evaluate)."""
    milp: MilpThroughput


@dataclass(frozen=True)
class BomRow(Document):
    item: str
    category: str
    """compute | nic | switch | optics | cable | rack | storage | ..."""
    quantity: float
    unit_cost_usd: float
    cost_usd: float
    """quantity x unit cost [USD]."""
    power_w: float
    """quantity x unit power [W]."""

    @classmethod
    def of(cls, line) -> BomRow:
        """From a models.power_cost.BomLine."""
        return cls(line.item, line.category, line.quantity, line.unit_cost_usd,
                   line.cost_usd, line.power_w)


@dataclass(frozen=True)
class BindingRow(Document):
    """One limit (or requirement) with its slack; binding when the next size breaks it."""

    name: str
    """The instance path of the limit, e.g. limits.it_power_mw (solver.limits)."""
    value: float
    """The design's value [unit]."""
    limit: float
    unit: str
    slack: float
    """limit - value [unit]."""
    binding: bool
    note: str | None = field(default=None, metadata=OPTIONAL)
    scalable_units: int | None = field(default=None, metadata=OPTIONAL)
    """Design-stage building rows: the scalable units the design MILP put there."""
    basis: str | None = field(default=None, metadata=OPTIONAL)
    """"placed" when value and slack are re-stated on the placed design."""
    nodes: int | None = field(default=None, metadata=OPTIONAL)
    """Placed building rows: the compute nodes (spares included) placement stood there
    (placement does not keep the design stage's scalable units per building)."""


@dataclass(frozen=True)
class Verification(Document):
    checks: int
    """Checks the independent checker ran (solver.checker)."""
    failures: tuple[str, ...]


@dataclass(frozen=True)
class SolverInfo(Document):
    backend: str
    version: str
    runtime_s: float
    """The whole solve [s]."""
    milp_runtime_s: float
    gap: float | None
    """Relative MIP gap at the end."""
    best_bound: float | None
    """The MILP's bound [objective unit]."""
    termination: str


@dataclass(frozen=True)
class DesignEstimate(Document):
    """The design's BOM, power, cost, throughput, limits and media before placement
    replaced its media."""

    bom: tuple[BomRow, ...]
    power: Power
    cost: Cost
    throughput: Throughput
    binding: tuple[BindingRow, ...]
    media: tuple[MediaRow, ...]


@dataclass(frozen=True)
class RunnerUp(Document):
    """The best buildable design of another technology choice and what it loses. Its own
    figures are design-stage estimates (it is not placed); ``capex_more_usd``, ``loss``
    and ``loss_fraction`` compare them with the chosen design's design-stage estimate,
    like with like (``design_estimate`` when placed: solver.report.runner_ups)."""

    gpu: str
    switch: str
    tiers: int
    pods: int
    oversubscription: float
    """Between pods as wired [x:1] (DesignSection.oversubscription)."""
    oversubscription_requested: float
    rail_optimized: bool
    nic_attachment: str
    recovery: str
    gpus: int
    effective_tokens_per_s: float
    capex_usd: float
    it_mw: float
    exact: bool
    """False: the figures are the size ladder's interpolation, not an exact evaluation."""
    capex_more_usd: float
    """Its capex minus the chosen design's, both design-stage estimates [USD]."""
    loss: float
    """What it loses on the objective, in the objective's unit (negative: its estimate
    beats the chosen design's placed figure)."""
    loss_fraction: float
    objective_value: float
    """Its objective (design-stage estimate) [the objective's unit]."""


@dataclass(frozen=True)
class SolveSummary(Document):
    """The ``clusterplan solve --json`` document of a solved instance (also design.json).
    Throughput figures are the exact re-evaluation of the chosen design."""

    status: Status
    instance: str
    instance_sha256: str
    """SHA-256 of the instance document (design.json belongs to this instance)."""
    objective: Objective
    design: DesignSection
    power: Power
    cost: Cost
    throughput: Throughput
    bom: tuple[BomRow, ...]
    binding: tuple[BindingRow, ...]
    verified: bool
    """The independent checker passed (and, after placement, the placed BOM is within the
    limits)."""
    verification: Verification
    notes: tuple[str, ...]
    solver: SolverInfo
    runner_ups: tuple[RunnerUp, ...] = ()
    """The best design of each other technology choice, best first (solver.report)."""
    design_estimate: DesignEstimate | None = field(default=None, metadata=OPTIONAL)
    """After a successful placement: the design's own BOM, power, cost and throughput."""
    placement: Mapping[str, Any] | None = field(default=None, metadata=OPTIONAL)
    """After placement: the placement document (solver.placement.placement_summary, and
    ``within_limits``), or the failed placement's status and diagnosis."""


@dataclass(frozen=True)
class UnsolvedSolver(Document):
    backend: str
    runtime_s: float
    gap: None
    time_limit_s: float


@dataclass(frozen=True)
class UnsolvedSummary(Document):
    """The ``clusterplan solve --json`` document without a design."""

    status: Status
    """infeasible | no_solution."""
    instance: str
    diagnosis: tuple[str, ...]
    """Why: the limits that conflict and by how much."""
    notes: tuple[str, ...]
    verified: bool
    solver: UnsolvedSolver


@dataclass(frozen=True)
class PhasedSummary(Document):
    """The ``clusterplan solve --json`` document of a phased build-out (solver.phased):
    what to buy and run in each period; the period rows are
    solver.phased.periods_document's (their schema: solver.schema.result)."""

    instance: str
    notes: tuple[str, ...]
    diagnosis: tuple[str, ...]
    status: Status
    verified: bool
    """Every period's running clusters passed the independent checker."""
    periods: tuple[Mapping[str, Any], ...]
    solver: Mapping[str, Any]
    objective: Mapping[str, Any] | None = field(default=None, metadata=OPTIONAL)
    """Discounted cumulative effective tokens, or discounted spend [USD]."""
    totals: Mapping[str, Any] | None = field(default=None, metadata=OPTIONAL)


# --- fabric -------------------------------------------------------------------------------

@dataclass(frozen=True)
class LinkClassRow(Document):
    """One link class of the fabric with the cheapest medium reaching its length."""

    name: str
    """node-leaf | leaf-spine | spine-core | ..."""
    links: int
    length_m: float
    """Routed length assumed [m]."""
    medium: str
    kind: str
    transceivers: int
    cables: int
    capex_usd: float
    """Transceivers, cables and fibre of the class [USD]."""
    power_w: float


@dataclass(frozen=True)
class SplitFigures(Document):
    """A capex [USD] or power [W] figure split by part."""

    switches: float
    nics: float
    media: float


@dataclass(frozen=True)
class Frontend(Document):
    """The front-end (storage and management) network beside the back-end fabric."""

    switch: str
    gbps: int
    ports_per_node: int
    tiers: int
    switches: int
    switches_per_tier: tuple[int, ...]
    links: int


@dataclass(frozen=True)
class FabricDocument(Document):
    """``clusterplan fabric --json``: the exact fat tree, its media, capex and power
    (capex = switches + back-end NICs + media; power likewise)."""

    gpus: int
    gpu: str
    switch: str
    nic: str
    gbps: int
    """Port speed of the back-end links [Gb/s]."""
    nodes: int
    ports_per_node: int
    rail_optimized: bool
    endpoints: int
    """NIC ports attached to the fabric."""
    radix: int
    """Switch ports at the link speed."""
    tiers: int
    """Tiers in all (the tier joining pods included)."""
    pod_tiers: int
    max_endpoints: int
    """Most endpoints the tiers can serve non-blocking, 2 (k/2)^L."""
    pods: int
    oversubscription: float
    """Between pods as wired [x:1] (models.fabric.Fabric.wired_oversubscription)."""
    oversubscription_requested: float
    """The ratio asked for (``--oversubscription``)."""
    switches_per_tier: tuple[int, ...]
    switches_total: int
    links_per_tier: tuple[int, ...]
    link_classes: tuple[LinkClassRow, ...]
    transceivers: Mapping[str, int]
    """Transceiver modules by medium id."""
    cables: Mapping[str, int]
    """Cables (or fibre runs) by medium id."""
    capex_usd: float
    power_w: float
    capex_breakdown_usd: SplitFigures
    power_breakdown_w: SplitFigures
    frontend: Frontend
    pod_join: str = "super"
    """How the pods are joined: 'super' switches or a 'mesh' of the pod tops (a top tier of
    0 switches)."""


# --- perf ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PerfNetwork(Document):
    """The scale-out network the job was evaluated on."""

    gbps_per_gpu: float
    in_network_reduction: bool
    pod_gpus: int | None
    """GPUs per pod behind oversubscribed links (None: one non-blocking fabric)."""
    oversubscription: float


@dataclass(frozen=True)
class PerfDocument(Document):
    """``clusterplan perf --json``: the figures of ``result`` (models.perf.types.PerfResult:
    step time [s], tokens/s with its p10-p90 band, model TFLOP/s per GPU, MFU, HFU, memory
    [GiB/GPU], parallelism, breakdowns), then the job's mapping onto a switch's fabric,
    the mode, the workload, the GPU system and the network."""

    result: Any
    """A models.perf.types.PerfResult."""
    switch: str | None
    """The switch of --switch (not printed itself: it decides the network and mapping)."""
    mapping: Mapping[str, Any] | None
    """With a switch: the job's groups on its fabric (solver.job_mapping), None when that
    fabric cannot be built; printed only with a switch."""
    mode: str
    """evaluate (every degree given) | search."""
    workload: str
    gpu: str
    network: PerfNetwork

    def to_dict(self) -> dict[str, Any]:
        doc = self.result.as_dict()
        if self.switch is not None:
            doc["mapping"] = plain(self.mapping)
        return doc | {"mode": self.mode, "workload": self.workload, "gpu": self.gpu,
                      "network": self.network.to_dict()}


# --- reliability --------------------------------------------------------------------------

@dataclass(frozen=True)
class Simulated(Document):
    """A seeded Monte-Carlo estimate of goodput beside the closed form."""

    goodput: float
    ci_low: float
    """95% confidence interval of the mean."""
    ci_high: float
    runs: int
    days: float
    """Simulated days per run."""
    seed: int


@dataclass(frozen=True)
class ReliabilityDocument(Document):
    """``clusterplan reliability --json``: the design evaluated, then the figures of
    ``result`` (models.reliability.ReliabilityResult: interruptions/day with band, MTBF
    [h], checkpoint write and interval [s], restart [s] and its parts, spares,
    availability, goodput with band, the failure classes), the breakdown with the first
    model's aggregate keys, and the simulation when asked."""

    gpu: str
    switch: str
    nic: str
    workload: str
    params: float
    """Model parameters of the workload."""
    media: Mapping[str, str]
    """Medium kind of each link class."""
    gpus: int
    nodes: int
    rail_optimized: bool
    checkpoint_size_gb: float
    checkpoint_gbps: float
    """Checkpoint write bandwidth [GB/s]."""
    switches: int
    switch_links_optical: int
    node_links_optical: int
    node_links_copper: int
    result: Any
    """A models.reliability.ReliabilityResult (its fields are the document's)."""
    breakdown: Mapping[str, float]
    """Interruptions/day by failure class, and the first model's aggregate keys
    (solver.reliability_inputs.former_breakdown)."""
    simulated: Simulated | None = None

    def to_dict(self) -> dict[str, Any]:
        head = {f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in ("result", "breakdown", "simulated")}
        doc = head | plain(dataclasses.asdict(self.result))
        doc["breakdown"] = dict(self.breakdown)
        return doc | ({"simulated": self.simulated.to_dict()} if self.simulated else {})
