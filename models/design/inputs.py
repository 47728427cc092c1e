"""Typed inputs of the design models: an instance resolved once (by ``solver.prepare``).

Catalog items and instance sections are the validated schema objects of ``solver.schema``
(frozen pydantic models); the models read them by attribute only, so anything with the
same fields serves (the Protocols of ``models.perf.types`` for GPU systems and
workloads; the other fields are listed in each attribute's docstring).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from models.fabric import FabricSpec
from models.perf.types import GpuSystemLike, WorkloadLike
from models.reliability import ReliabilityRates


@dataclass(frozen=True)
class ConfigParts:
    """The catalog items of one configuration."""

    key: str
    gpu: GpuSystemLike
    switch: Any
    """Switch: id, family, radix(gbps), price_usd, power_w, rack_units, ..."""
    nic: Any
    """The back-end NIC: id, port_gbps, price_usd, power_w."""
    fabric: Any
    """The fabric option: switch, tiers, pods, oversubscription."""
    rail_optimized: bool
    nic_attachment: str
    checkpoint_gbytes_per_s_per_node: float
    """Checkpoint storage write bandwidth bought per node [GB/s]."""
    recovery: str
    """Recovery mode: 'storage' (cold restart) or 'in-memory' (warm standby)."""
    redundancy: str = "per-mw"
    """Electrical redundancy level (N, N+1, 2N); 'per-mw' in the shortcut mode."""
    cooling: str = "per-mw"
    """Cooling technology (air, rdhx, dlc); 'per-mw' in the shortcut mode."""

    @property
    def radix(self) -> int:
        return self.switch.radix(self.nic.port_gbps)

    @property
    def pods_in_buildings(self) -> bool:
        """Each pod whole in one building: one pod per building or per hall of the site
        (the fabric choice's ``pods_per``)."""
        return getattr(self.fabric, "pods_per", None) is not None

    @property
    def pods_in_halls(self) -> bool:
        """One pod per hall of the site (site order), each whole in its hall."""
        return getattr(self.fabric, "pods_per", None) == "hall"

    def fabric_spec(self, nodes: int) -> FabricSpec:
        return FabricSpec(nodes=nodes, ports_per_node=self.gpu.nics_per_node, radix=self.radix,
                          tiers=self.fabric.tiers, pods=self.fabric.pods or 1,
                          oversubscription=self.fabric.oversubscription,
                          rail_optimized=self.rail_optimized,
                          pod_join=getattr(self.fabric, "pod_join", "super"))


@dataclass(frozen=True)
class Inputs:
    """An instance resolved once (see the module docstring); the catalog maps are
    read-only views."""

    name: str
    sha256: str
    """SHA-256 of the instance document (its catalog included)."""
    workload: WorkloadLike
    limits: Any
    """budget_usd, it_power_mw, budget_basis, min_gpus, max_gpus, deadline_days."""
    site: Any
    """buildings (name, it_power_mw, max_racks, halls), cable_lengths, rack_power_kw."""
    choices: Any
    """The instance's [choices] (recovery modes are chosen per design)."""
    objective: Any
    """kind, required_tokens_per_s, performance, assumed_mfu, reliability_model,
    overhead_fraction."""
    reliability: Any
    """min_goodput, availability_target, max_blast_radius_gpus, spare_fraction."""
    years: int
    """TCO horizon [years]."""
    facility: Any
    """Facility figures: PUE, build $/MW, electricity, rack, storage, years."""
    gpu: Mapping[str, GpuSystemLike]
    switch: Mapping[str, Any]
    nic: Mapping[str, Any]
    medium: Mapping[str, Any]
    configs: tuple[ConfigParts, ...]
    """Every allowed configuration, sorted by key."""
    config_notes: tuple[str, ...]
    """Combinations of the choices the hardware or the limits rule out."""
    rates: Mapping[str, ReliabilityRates]
    """Failure rates [1/h] per GPU generation of `configs` under reliability.profile, times
    the what-if multipliers: goodput's under objective.reliability_model = 'model', and
    the cold-spare pool's under either model."""
    reliability_catalog: Any
    """The instance's reliability catalog (solver.schema.reliability): rates by profile,
    restart parts, recovery costs (host_memory_usd_per_gb)."""
    checkpoint_gb: float
    """Checkpoint size of the workload [GB]."""
    halls: tuple[tuple[str, Any], ...]
    """(building, hall) of the site in order; generated halls where a building lists none
    (solver.schema.site.default_halls), as the site declares them."""
    cooled_halls: Mapping[str, tuple[tuple[str, Any], ...]] = field(
        default_factory=lambda: MappingProxyType({}))
    """The same halls as each cooling technology equips them (facility from parts): every
    position at the technology's ``cooling_max_rack_kw``, liquid-cooled under direct
    liquid cooling; rows, positions and power caps the site's."""

    def halls_for(self, cooling: str) -> tuple[tuple[str, Any], ...]:
        """The halls a configuration with ``cooling`` is laid out in: the one rack power
        density of the space model (models.space) at the design stage and in placement;
        the declared halls in the 'per-mw' shortcut."""
        return self.cooled_halls.get(cooling, self.halls)

    @property
    def single_building(self) -> bool:
        return len(self.site.buildings) == 1

    def config(self, key: str) -> ConfigParts:
        """The configuration of a key (with or without its media suffix)."""
        by_key = {p.key: p for p in self.configs}
        return by_key.get(key) or by_key[key.rsplit("/", 1)[0]]
