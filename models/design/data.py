"""Data of the design MILP: the candidate designs and the limits, as plain numbers.

A *configuration* fixes the discrete technology choices (GPU system, switch, tiers,
pods, oversubscription, rail-optimized or middle-of-rack, NIC attachment, and the medium
of every link class among the non-dominated media that reach). A *candidate* is a
configuration at one size of its scalable-unit ladder, with every size-dependent
quantity evaluated exactly by the analytic models (fabric switch and link counts,
spares, throughput, goodput). The MILP chooses a configuration and its size, and places
scalable units and network equipment in buildings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

import numpy as np

from models.facility import FacilityCost
from models.power_cost import BomLine


@dataclass(frozen=True)
class MediaAssignment:
    """The medium every link of one link class is built with."""

    link_class: str
    tier: int
    medium: str
    kind: str
    length_m: float


@dataclass(frozen=True)
class Config:
    key: str
    gpu: str
    switch: str
    nic: str
    tiers: int | None
    pods: int
    oversubscription: float
    rail_optimized: bool
    nic_attachment: str
    su_nodes: int
    """Nodes per scalable unit (the size step)."""
    node_power_w: float
    """One node with its back-end NICs [W]."""
    su_racks: int
    """Compute racks per scalable unit."""
    checkpoint_gbytes_per_s_per_node: float
    """Checkpoint storage write bandwidth bought per node [GB/s]."""
    media: tuple[MediaAssignment, ...]
    """Medium of each link class, tier order."""
    recovery: str = "storage"
    """Recovery mode: 'storage' (cold restart) or 'in-memory' (warm standby)."""
    pods_in_buildings: bool = False
    """One pod per building (site order), each placed whole in its building."""
    redundancy: str = "per-mw"
    cooling: str = "per-mw"
    pod_join: str = "super"
    """How the pods are joined: 'super' switches or a 'mesh' of the pod tops."""
    pods_in_halls: bool = False
    """One pod per hall (site order; ``pods_in_buildings`` too: a building holds the pods
    of its halls)."""


@dataclass(frozen=True)
class Candidate:
    config: str
    nodes: int
    """Training nodes."""
    spare_nodes: int
    gpus: int
    """Training GPUs."""
    tiers: int
    switches_per_tier: tuple[int, ...]
    links_per_tier: tuple[int, ...]
    links_by_class: dict[str, int]
    lines: tuple[BomLine, ...]
    """The candidate's bill of materials: nodes, NICs, switches, media, racks, storage."""
    network_power_w: float
    """Switch, media and checkpoint-storage power, placed in any building [W]."""
    network_racks: int
    tokens_per_s: float
    """Training throughput with no failures, or a lower bound on it [tokens/s]."""
    goodput: float
    """Useful fraction of wall-clock time (failures, checkpoints, restarts); interpolated
    along the ladder unless `exact`."""
    mfu: float
    tokens_per_s_upper: float
    """Upper bound on the throughput (= tokens_per_s when exact) [tokens/s]."""
    exact: bool
    """Throughput and goodput are exact evaluations (not bounds or interpolations)."""
    extra: dict = field(default_factory=dict, compare=False)
    """Evaluator details kept for reporting (parallelism, reliability metrics)."""
    facility: FacilityCost | None = None
    """The facility built for it (models.facility): electrical, cooling, shell, PUE,
    site availability; None: the DesignData's $/MW and PUE apply."""

    @property
    def key(self) -> str:
        return f"{self.config}@{self.nodes}"

    @property
    def su_count(self) -> int:
        return self.extra["su_count"]

    def pod_units(self, su_nodes: int) -> int:
        """Scalable units one pod's ``⌈(nodes + spares)/pods⌉`` nodes fill."""
        pod = math.ceil((self.nodes + self.spare_nodes) / self.extra["pods"])
        return math.ceil(pod / su_nodes)

    def pod_nodes(self) -> tuple[int, ...]:
        """Nodes (spares included) of each pod: each is built for ``s = ⌈(nodes +
        spares)/pods⌉`` and they fill in order, pod ``i`` holding ``min(s, n − i·s)``
        (models.fabric.pod_nodes)."""
        n, pods = self.nodes + self.spare_nodes, self.extra["pods"]
        size = math.ceil(n / pods)
        return tuple(max(0, min(size, n - i * size)) for i in range(pods))

    @cached_property  # summed once: pruning reads it for every candidate, often
    def equipment_capex_usd(self) -> float:
        return sum(line.cost_usd for line in self.lines)

    @cached_property  # summed once: pruning reads it for every candidate, often
    def equipment_power_w(self) -> float:
        return sum(line.power_w for line in self.lines)

    @property
    def effective_tokens_per_s(self) -> float:
        return self.tokens_per_s * self.goodput

    @property
    def site_availability(self) -> float:
        """Availability of its power and cooling chain (1 when not modelled)."""
        if self.facility is None or self.facility.site_availability is None:
            return 1.0
        return self.facility.site_availability

    @property
    def effective_tokens_per_s_upper(self) -> float:
        return self.tokens_per_s_upper * self.goodput


@dataclass(frozen=True)
class BuildingData:
    name: str
    it_power_w: float
    max_racks: int | None
    rack_power_w: float = math.inf
    """What its racks may draw, as placement counts them: its halls' power
    (models.space.rack_power_by_building), at most its IT power less the non-server IT
    share, ``P_b / (1 + f)`` (placement's building cap) [W]."""
    hall_power_w: tuple[float, ...] = ()
    """What the racks of each of its halls may draw (site order) [W]."""
    hall_names: tuple[str, ...] = ()
    """Its halls' names, in the order of ``hall_power_w``."""

    @property
    def block_power_cap_w(self) -> float:
        """Cap of the block_power family: ``min(IT power, rack power)`` [W]."""
        return min(self.it_power_w, self.rack_power_w)


@dataclass(frozen=True)
class DesignData:
    configs: dict[str, Config]
    candidates: tuple[Candidate, ...]
    """Sorted by (config, nodes): each configuration's size ladder in ascending order."""
    buildings: tuple[BuildingData, ...]
    it_power_cap_w: float
    budget_usd: float
    budget_basis: str
    """'capex' or 'tco'."""
    objective: str
    """'max_effective_throughput', 'min_capex' or 'min_tco'."""
    required_effective_tokens_per_s: float
    """0 when there is no throughput requirement."""
    min_gpus: int
    max_gpus: int | None
    min_goodput: float
    """0 when the instance sets none."""
    non_server_it_fraction: float
    pue: float
    build_usd_per_mw: float
    electricity_usd_per_kwh: float
    years: int
    min_site_availability: float = 0.0
    """Availability the facility must give (0: none; the 'per-mw' mode has none)."""
    tco_rates: Any = None
    """Cost of capital, lives, support, software and staff rates (models.tco); None: the
    full TCO is not known (then no $/million-tokens objective)."""
    columns: LimitColumns | None = field(default=None, compare=False, repr=False)
    """The candidates' limit figures as columns (:meth:`LimitColumns.of`), built with the
    candidates; read through models.design.prune.columns, which rebuilds them when they
    are not these candidates'."""

    def pod_sites(self, cfg: Config) -> tuple[PodSite, ...]:
        """Where each pod of an aligned configuration stands (:meth:`sites`)."""
        return self.sites(cfg.pods_in_halls)

    def sites(self, in_halls: bool) -> tuple[PodSite, ...]:
        """Where each pod of a configuration aligned with the site stands (site order):
        pod ``i`` in building ``i``, or with one pod per hall (``in_halls``) in hall ``i``
        (its building's ``j``-th)."""
        if in_halls:
            return tuple(PodSite(b.name, j, cap) for b in self.buildings
                         for j, cap in enumerate(b.hall_power_w))
        return tuple(PodSite(b.name, None, b.block_power_cap_w) for b in self.buildings)

    def pods_of(self, cfg: Config, building: str) -> list[int]:
        """The pods of an aligned configuration that stand in ``building``."""
        return [i for i, s in enumerate(self.pod_sites(cfg)) if s.building == building]


@dataclass(frozen=True)
class PodSite:
    """Where one pod of a configuration aligned with the site stands."""

    building: str
    hall: int | None
    """Index of its hall among its building's halls; None: the whole building."""
    rack_power_w: float
    """What its racks may draw: its hall's power, or its building's
    ``block_power_cap_w`` [W]."""


@dataclass(frozen=True)
class LimitColumns:
    """What the limits and requirements of models.design.prune read of each candidate,
    one array per figure in candidate order. None depends on the limits, so they are laid
    out once per candidate set and serve every set of limits (sweep scenarios); only
    throughput and goodput change when refine evaluates a candidate exactly
    (:meth:`refined`). ``candidates``: the tuple they describe; ``masks``: limit masks
    already computed for them (models.design.prune.fitting), by the limits' figures."""

    candidates: tuple[Candidate, ...]
    equipment_power_w: np.ndarray
    equipment_capex_usd: np.ndarray
    has_facility: np.ndarray
    facility_capex_usd: np.ndarray
    """The facility built for the candidate (NaN: none, the $/MW applies) [USD]."""
    facility_pue: np.ndarray
    """Its PUE (NaN: none, the data's applies)."""
    su_count: np.ndarray
    su_w: np.ndarray
    """One scalable unit's node power [W]."""
    su_racks: np.ndarray
    pods_in_buildings: np.ndarray
    server_w: np.ndarray
    """Node power the buildings hold: whole units, or each pod's nodes when pods are
    aligned with the buildings [W]."""
    network_power_w: np.ndarray
    network_racks: np.ndarray
    blocks: np.ndarray
    block_power_w: np.ndarray
    blocks_w: np.ndarray
    """Placement power of all blocks (each pod's with the nodes it has) [W]."""
    block_slots: dict[str, np.ndarray]
    """Block slots in each building, by name (0 where a candidate has none)."""
    block_slots_total: np.ndarray
    network_rack_power_w: np.ndarray
    node_power_w: np.ndarray
    pods_in_halls: np.ndarray
    pod_blocks: np.ndarray
    """Pods aligned with the site (0 for others): one pod's blocks, ``B_k / P``."""
    pod_racks: np.ndarray
    """One pod's compute racks, ``⌈⌈n/P⌉/su⌉`` units' racks."""
    pod_power_w: np.ndarray
    pod_nodes: np.ndarray
    """Nodes (spares included) of each pod (candidates x pods; 0 past a candidate's)."""
    pod_blocks_power_w: np.ndarray
    """Placement power of each pod's blocks [W] (candidates x pods)."""
    hall_block_slots: np.ndarray
    """Block slots of each hall, site order (candidates x halls)."""
    gpus: np.ndarray
    site_availability: np.ndarray
    tokens_per_s: np.ndarray
    tokens_per_s_upper: np.ndarray
    goodput: np.ndarray
    exact: np.ndarray
    """The requirements' figures; the last four change when refine evaluates a candidate
    exactly (:meth:`refined`), the others never do."""
    masks: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, configs: dict[str, Config], candidates: tuple[Candidate, ...]
           ) -> LimitColumns:
        names = sorted({b for k in candidates for b in k.extra["block_slots"]})

        def row(k: Candidate) -> tuple:  # one pass over the candidates: a row each
            c, x, fac = configs[k.config], k.extra, k.facility
            su_w, pods = c.su_nodes * c.node_power_w, c.pods_in_buildings
            return (k.equipment_power_w, k.equipment_capex_usd, fac is not None,
                    math.nan if fac is None else fac.capex_usd,
                    math.nan if fac is None else fac.pue, k.su_count, su_w, c.su_racks, pods,
                    (k.nodes + k.spare_nodes) * c.node_power_w if pods else k.su_count * su_w,
                    k.network_power_w, k.network_racks, x["blocks"], x["block_power_w"],
                    sum(x["pod_blocks_power_w"]) if pods
                    else x["blocks"] * x["block_power_w"],
                    sum(x["block_slots"].values()), x["network_rack_power_w"],
                    k.gpus, k.site_availability,
                    c.node_power_w, c.pods_in_halls, x["blocks"] // x["pods"] if pods else 0,
                    k.pod_units(c.su_nodes) * c.su_racks if pods else 0,
                    x["pod_power_w"] if pods else 0.0,
                    *(x["block_slots"].get(b, 0) for b in names))
        table = np.array([row(k) for k in candidates], float).reshape(
            len(candidates), len(ROW) + len(names))

        def column(j: int, dtype: type) -> np.ndarray:  # exact: values below 2**53
            return np.ascontiguousarray(table[:, j].astype(dtype))
        aligned = [(i, k) for i, k in enumerate(candidates)
                   if configs[k.config].pods_in_buildings]

        def per_pod(values, dtype: type) -> np.ndarray:  # candidates x pods (or halls)
            rows = [list(values(k)) for _, k in aligned]
            out = np.zeros((len(candidates), max(map(len, rows), default=0)), dtype)
            for (i, _), row in zip(aligned, rows, strict=True):
                out[i, :len(row)] = row
            return out
        return cls(candidates=candidates,
                   **{name: column(j, dtype) for j, (name, dtype) in enumerate(ROW)},
                   block_slots={b: column(len(ROW) + j, np.int64)
                                for j, b in enumerate(names)},
                   pod_nodes=per_pod(Candidate.pod_nodes, np.int64),
                   pod_blocks_power_w=per_pod(lambda k: k.extra["pod_blocks_power_w"], float),
                   hall_block_slots=per_pod(lambda k: k.extra["hall_block_slots"], np.int64),
                   **cls.performance(candidates))

    @classmethod
    def joined(cls, parts: Sequence[LimitColumns], order: Sequence[int],
               candidates: tuple[Candidate, ...]) -> LimitColumns:
        """The columns of ``candidates``: the candidates of ``parts``, one part after the
        other, at the indices ``order``. Equal to :meth:`of` on them, without a pass over
        them (a sweep's workers merge the parts they built, ~0.2 s a pass)."""
        def stacked(arrays: list[np.ndarray]) -> np.ndarray:  # per-pod ones: widest
            width = max((a.shape[1] for a in arrays if a.ndim == 2), default=0)
            return np.concatenate([a if a.ndim == 1 else
                                   np.pad(a, ((0, 0), (0, width - a.shape[1])))
                                   for a in arrays])
        arrays = {f.name: stacked([getattr(p, f.name) for p in parts]) for f in fields(cls)
                  if isinstance(getattr(parts[0], f.name), np.ndarray)}
        names = sorted({b for p in parts for b in p.block_slots})
        slots = {b: np.concatenate([p.block_slots.get(b, np.zeros(len(p), np.int64))
                                    for p in parts]) for b in names}
        together = cls(candidates=(), **arrays, block_slots=slots)
        return together.take(np.fromiter(order, np.int64, len(order)), candidates)

    @staticmethod
    def performance(candidates: Sequence[Candidate]) -> dict[str, np.ndarray]:
        """The columns of throughput and goodput (``tokens_per_s`` ... ``exact``)."""
        def column(values, dtype=float) -> np.ndarray:
            return np.fromiter(values, dtype, len(candidates))
        return {"tokens_per_s": column(k.tokens_per_s for k in candidates),
                "tokens_per_s_upper": column(k.tokens_per_s_upper for k in candidates),
                "goodput": column(k.goodput for k in candidates),
                "exact": column((k.exact for k in candidates), bool)}

    def __len__(self) -> int:
        return len(self.candidates)

    def take(self, keep: np.ndarray, candidates: tuple[Candidate, ...]) -> LimitColumns:
        """The columns of ``candidates``, the candidates at the indices ``keep``."""
        arrays = {f.name: getattr(self, f.name)[keep] for f in fields(self)
                  if isinstance(getattr(self, f.name), np.ndarray)}
        return LimitColumns(candidates=candidates, **arrays,
                            block_slots={b: s[keep] for b, s in self.block_slots.items()})

    def refined(self, candidates: tuple[Candidate, ...], changed: Sequence[int]
                ) -> LimitColumns:
        """These columns (and limit masks) for ``candidates``, which differ from theirs
        only in the throughput and goodput of those at the indices ``changed``
        (models.design.candidates.refine)."""
        index = np.fromiter(changed, np.int64, len(changed))
        columns = {}
        for name, now in self.performance([candidates[i] for i in index]).items():
            columns[name] = getattr(self, name).copy()
            columns[name][index] = now
        return replace(self, candidates=candidates, **columns)


ROW: tuple[tuple[str, type], ...] = (
    ("equipment_power_w", float), ("equipment_capex_usd", float), ("has_facility", bool),
    ("facility_capex_usd", float), ("facility_pue", float), ("su_count", np.int64),
    ("su_w", float), ("su_racks", np.int64), ("pods_in_buildings", bool),
    ("server_w", float), ("network_power_w", float), ("network_racks", np.int64),
    ("blocks", np.int64), ("block_power_w", float), ("blocks_w", float),
    ("block_slots_total", np.int64), ("network_rack_power_w", float),
    ("gpus", np.int64), ("site_availability", float), ("node_power_w", float),
    ("pods_in_halls", bool),
    ("pod_blocks", np.int64), ("pod_racks", np.int64), ("pod_power_w", float))
"""LimitColumns.of's row of one candidate: the columns in order, with their types (the
block slots of each building follow)."""
