"""Instance schema: what to design, under which limits, from which choices."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from solver.schema.base import Bool
from solver.schema.catalog import (
    Catalog,
    Fraction,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    Slug,
    StrictModel,
)
from solver.schema.site import Hall
from solver.schema.workload import Workload


class Limits(StrictModel):
    budget_usd: PositiveFloat
    """Capital budget (or TCO budget when budget_basis = 'tco') [USD]."""
    it_power_mw: PositiveFloat
    """Critical IT power available on the site [MW]."""
    budget_basis: Literal["capex", "tco"] = "capex"
    min_gpus: Annotated[int, Field(ge=0)] = 0
    """Smallest acceptable number of training GPUs (spares excluded)."""
    max_gpus: PositiveInt | None = None
    deadline_days: PositiveFloat | None = None
    """Train the workload's train_tokens within this many days."""

    @model_validator(mode="after")
    def _gpu_range(self) -> Limits:
        if self.max_gpus is not None and self.max_gpus < self.min_gpus:
            raise ValueError(f"max_gpus {self.max_gpus} is below min_gpus {self.min_gpus}")
        return self


MAX_BUILDING_MW = 10_000.0
"""Most critical IT power one building may have [MW] (400 generated halls of 25 MW): twice
the largest AI campuses announced (~5 GW); a kW figure typed as MW stops here, before
its millions of generated halls take the machine's memory."""


class Building(StrictModel):
    name: Slug
    it_power_mw: Annotated[float, Field(gt=0, le=MAX_BUILDING_MW, allow_inf_nan=False,
                                         strict=True)]
    """Critical IT power this building can supply [MW]."""
    max_racks: PositiveInt | None = None
    """Rack positions available (space limit)."""
    halls: list[Hall] = []
    """Floor plan (solver.schema.site); empty = generated from it_power_mw and the site's
    rack_power_kw by solver.schema.site.default_halls."""


class CableLengths(StrictModel):
    """Typical routed length of each link class by layout style [m]."""

    node_leaf_rail_optimized_m: PositiveFloat = 30.0
    """Node to its rail leaf, leaves at the end of row (rail-optimized); ``clusterplan
    fabric`` only: ``solve`` takes node-leaf lengths from the halls' block geometry
    (models.space)."""
    node_leaf_middle_of_rack_m: PositiveFloat = 3.0
    """Node to a leaf in the middle of its rack group (``clusterplan fabric`` only, as
    above)."""
    leaf_spine_m: PositiveFloat = 50.0
    spine_core_m: PositiveFloat = 300.0
    between_buildings_m: PositiveFloat = 1000.0


class Site(StrictModel):
    name: str = "site"
    buildings: list[Building] = Field(min_length=1)
    cable_lengths: CableLengths = CableLengths()
    rack_power_kw: PositiveFloat = 40.0
    """Power one rack position can take [kW] (air-cooled HGX ~40, liquid NVL72 ~130)."""

    @model_validator(mode="after")
    def _unique_buildings(self) -> Site:
        names = [b.name for b in self.buildings]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate building names: {', '.join(dupes)}")
        return self


class FabricChoice(StrictModel):
    """One scale-out fabric option the optimiser may choose."""

    switch: Slug
    tiers: Annotated[int, Field(ge=1, le=5)] | None = None
    """Switch tiers; omitted = the fewest that fit the largest design."""
    pods: PositiveInt | None = None
    """Split the cluster into this many equal pods joined by an oversubscribed top tier."""
    oversubscription: Annotated[float, Field(ge=1, le=64, allow_inf_nan=False)] = 1.0
    """Down:up bandwidth ratio between pods (1 = non-blocking)."""
    pods_per: Literal["building", "hall"] | None = None
    """'building': one pod per building of the site (``pods`` = the buildings), each pod
    placed whole in its building, so only the links joining the pods cross buildings;
    'hall': one pod per hall (site order), each placed whole in its hall."""
    pod_join: Literal["super", "mesh"] = "super"
    """How the pods are joined: 'super', a tier of super switches; 'mesh', an oversubscribed
    top tier without an extra tier: each pod-top switch's uplinks go straight to its peers
    in the other pods (needs pods_per)."""

    @model_validator(mode="after")
    def _pods_or_pods_per(self) -> FabricChoice:
        if self.pods_per is not None and self.pods is not None:
            raise ValueError("set pods or pods_per, not both (pods_per = 'building' makes "
                             "one pod per building)")
        if self.pod_join == "mesh" and self.pods_per is None:
            raise ValueError("pod_join = 'mesh' joins pods aligned with the site: set "
                             "pods_per = 'building' or 'hall'")
        return self


class Choices(StrictModel):
    gpus: list[Slug] = Field(min_length=1)
    fabrics: list[FabricChoice] = Field(min_length=1)
    rail_optimized: list[Bool] = Field(default=[True, False], min_length=1)
    nic_attachment: list[Literal["single", "twin"]] = Field(default=["single"], min_length=1)
    """'single': one single-port NIC cage per GPU; 'twin': twin-port cages, half the node-end
    transceivers (Cedar-style modules)."""
    checkpoint_storage_gbytes_per_s_per_node: list[PositiveFloat] = Field(
        default=[1.0], min_length=1)
    """Checkpoint write bandwidth of the storage tier per node [GB/s]; each option costs
    catalog.facility.checkpoint_storage_*_per_gbyte_s. Meta's Llama 3 storage sustained
    2 TB/s (7 TB/s peak) for ~3,000 nodes, ~0.7-2.3 GB/s per node
    (https://arxiv.org/abs/2407.21783, section 3.3.1)."""
    redundancy: list[Literal["N", "N+1", "2N"]] = Field(
        default=["N", "N+1", "2N"], min_length=1)
    """Electrical redundancy levels the facility may be built with
    (catalog.facility.facility_cost_mode = 'parts')."""
    cooling: list[Literal["air", "rdhx", "dlc"]] = Field(
        default=["air", "rdhx", "dlc"], min_length=1)
    """Cooling technologies allowed: air, rear-door heat exchangers, direct liquid."""
    recovery: list[Literal["storage", "in-memory"]] = Field(
        default=["storage", "in-memory"], min_length=1)
    """Recovery modes allowed: checkpoints to the storage tier, or in-memory checkpoints in
    local and peer host memory with state rebuilt from peers (Gemini, SOSP 2023)."""


class Objective(StrictModel):
    kind: Literal["max_effective_throughput", "min_capex", "min_tco",
                  "min_usd_per_million_tokens"] = "max_effective_throughput"
    """min_usd_per_million_tokens: the least full cost (models.tco) per million effective
    tokens, no throughput required."""
    required_tokens_per_s: PositiveFloat | None = None
    """Effective throughput to reach when minimising cost [tokens/s]."""
    performance: Literal["model", "assumed_mfu"] = "model"
    """Throughput from the calibrated performance model (best parallelism per design), or
    GPUs x dense peak x assumed_mfu / model FLOPs per token."""
    assumed_mfu: Fraction = 0.40
    """Model FLOPs utilisation when performance = 'assumed_mfu'."""
    throughput_quantile: Fraction | None = None
    """Plan for this quantile of the performance model's error (performance = 'model'):
    e.g. 0.1 buys for the throughput 90% of comparable published runs beat (the p10 of
    measured/predicted in leave-one-source-out cross-validation); None = the point
    prediction."""
    reliability_model: Literal["model", "overhead"] = "model"
    """Goodput from the failure/checkpoint/restart model, or 1 - overhead_fraction."""
    overhead_fraction: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.10
    """Share of wall-clock time lost to failures and checkpoints when
    reliability_model = 'overhead'."""
    years: PositiveInt | None = None
    """TCO horizon [years]; default from the catalog's facility."""
    discount_rate_per_year: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    """Phased build-out ([[periods]]): tokens trained and money spent in a period starting
    y years after the first are weighted by (1 + rate)^-y."""


class FailureRateMultipliers(StrictModel):
    """Scale the catalog's failure rates (catalog.reliability) for what-if
    studies, e.g. gpu = 2 for GPUs failing twice as often."""

    gpu: PositiveFloat = 1.0
    node: PositiveFloat = 1.0
    """Host hardware (CPU, memory, PSU, SSD, board)."""
    nic: PositiveFloat = 1.0
    optics: PositiveFloat = 1.0
    copper: PositiveFloat = 1.0
    switch: PositiveFloat = 1.0
    software: PositiveFloat = 1.0
    """Software bugs and collective hangs."""


class Reliability(StrictModel):
    profile: str = "default"
    """Failure-rate profile of catalog.reliability: 'default' (component field data) or a
    named what-if ('semianalysis-optics', 'research-cluster', or the instance's own)."""
    min_goodput: Fraction | None = None
    """Smallest acceptable goodput (useful fraction of wall-clock time)."""
    availability_target: Fraction = 0.999
    """Probability that enough healthy nodes are at hand; sets the hot spares."""
    max_blast_radius_gpus: PositiveInt | None = None
    """Most GPUs one failed part may take out of service: a GPU, NIC or node-end optic
    stops its node (8 GPUs on HGX, a whole 72-GPU rack on NVL72); GPU systems above
    this are not considered."""
    site_availability_target: Fraction | None = 0.9998
    """Availability the facility's power and cooling chain must give (parts mode): the
    default 99.98% is Uptime Tier III, a typical new build (N+1); None: no requirement."""
    failure_rate_multipliers: FailureRateMultipliers = FailureRateMultipliers()
    spare_fraction: Annotated[float, Field(ge=0, le=0.5, allow_inf_nan=False)] = 0.0
    """Hot-spare nodes as a fraction of training nodes when
    objective.reliability_model = 'overhead' (the reliability model sizes spares itself)."""


class PeriodPrice(StrictModel):
    """The price of a GPU system in one period, with where it comes from."""

    node_price_usd: PositiveFloat
    """One node (an 8-GPU server, or an NVL72 rack) without back-end NICs [USD]."""
    source: str = Field(min_length=1)
    """Where the figure comes from (URL and note)."""


class Period(StrictModel):
    """One period of a phased build-out: what is energised, what may be spent and bought,
    and what must have been trained by its end."""

    name: Slug
    start: datetime.date
    end: datetime.date | None = None
    """End of the period; required on the last one (the horizon), otherwise the next
    period's start."""
    it_power_mw: dict[Slug, NonNegativeFloat] = {}
    """Critical IT power energised per building during the period [MW]; a building not
    listed is fully energised (its site.buildings it_power_mw)."""
    budget_usd: PositiveFloat
    """Capital spent in this period (cash-flow limit) [USD]: equipment bought plus
    facility built."""
    gpus: list[Slug] | None = None
    """GPU systems purchasable in the period (a subset of choices.gpus); None: all."""
    prices: dict[Slug, PeriodPrice] = {}
    """Node price of a GPU system in this period, replacing the catalog's."""
    demand_tokens: PositiveFloat | None = None
    """Effective training tokens that must have been trained, cumulatively, by the end of
    this period."""


CatalogOverrides = dict[str, dict[str, dict[str, Any]]]


class Instance(StrictModel):
    schema_version: Literal[1] = 1
    name: Slug
    description: str = ""
    workload: Workload
    limits: Limits
    site: Site
    choices: Choices
    objective: Objective = Objective()
    reliability: Reliability = Reliability()
    catalog: Catalog
    """The shipped catalog with the instance's overrides applied."""
    periods: list[Period] = []
    """A phased build-out (solver.phased); empty: one design bought at once."""

    @model_validator(mode="after")
    def _choices_in_catalog(self) -> Instance:
        problems = []
        for i, g in enumerate(self.choices.gpus):
            if g not in self.catalog.gpu:
                problems.append(f"choices.gpus[{i}]: unknown GPU system '{g}' "
                                f"(known: {', '.join(sorted(self.catalog.gpu))})")
        for i, f in enumerate(self.choices.fabrics):
            if f.switch not in self.catalog.switch:
                problems.append(f"choices.fabrics[{i}].switch: unknown switch '{f.switch}' "
                                f"(known: {', '.join(sorted(self.catalog.switch))})")
        if self.objective.kind in ("min_capex", "min_tco") and not (
            self.objective.required_tokens_per_s or self.limits.deadline_days or self.periods
        ):
            problems.append(f"objective.kind: '{self.objective.kind}' needs "
                            "objective.required_tokens_per_s or limits.deadline_days")
        if self.limits.deadline_days and not self.workload.train_tokens:
            problems.append("limits.deadline_days: the workload has no train_tokens")
        profiles = self.catalog.reliability.profiles()
        if self.reliability.profile not in profiles:
            problems.append(f"reliability.profile: unknown profile '{self.reliability.profile}'"
                            f" (known: {', '.join(profiles)})")
        problems += self._period_problems()
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _period_problems(self) -> list[str]:
        """Periods in time order, ending at a horizon, naming known GPUs and buildings."""
        out: list[str] = []
        periods = self.periods
        if not periods:
            return out
        names = [p.name for p in periods]
        out += [f"periods: duplicate period name '{n}'" for n in sorted(set(names))
                if names.count(n) > 1]
        if self.objective.kind == "min_tco" or self.limits.budget_basis == "tco":
            out.append("periods: a phased build-out budgets capex per period; objective.kind "
                       "'min_tco' and limits.budget_basis 'tco' are not supported with periods")
        if self.objective.kind == "min_capex" and not any(p.demand_tokens for p in periods):
            out.append("objective.kind: 'min_capex' with periods needs demand_tokens in a "
                       "period")
        buildings = {b.name: b.it_power_mw for b in self.site.buildings}
        for i, p in enumerate(periods):
            where = f"periods[{i}]"
            nxt = periods[i + 1].start if i + 1 < len(periods) else None
            if nxt is not None and nxt <= p.start:
                out.append(f"periods[{i + 1}].start: {nxt} is not after {where}.start "
                           f"{p.start}")
            if nxt is None and p.end is None:
                out.append(f"{where}.end: the last period needs an end (the horizon)")
            if p.end is not None and p.end <= p.start:
                out.append(f"{where}.end: {p.end} is not after its start {p.start}")
            if p.end is not None and nxt is not None and p.end != nxt:
                out.append(f"{where}.end: {p.end} differs from the next period's start {nxt}")
            for b, mw in sorted(p.it_power_mw.items()):
                if b not in buildings:
                    out.append(f"{where}.it_power_mw.{b}: unknown building (known: "
                               f"{', '.join(sorted(buildings))})")
                elif mw > buildings[b]:
                    out.append(f"{where}.it_power_mw.{b}: {mw:g} MW is above the building's "
                               f"{buildings[b]:g} MW")
            for g in sorted(set(p.gpus or []) | set(p.prices)):
                if g not in self.choices.gpus:
                    out.append(f"{where}: GPU system '{g}' is not in choices.gpus")
        return out

    @property
    def years(self) -> int:
        return self.objective.years or self.catalog.facility.years

