"""Component catalog schema: GPU systems, switches, NICs, link media, facility defaults.

Every numeric figure of a catalog item must have an entry in the item's ``sources``
table (field name -> Source); ``Catalog`` checks that on load, so an unsourced figure
cannot enter the catalog.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from solver.schema.base import (
    Bool,
    Fraction,
    Generation,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    Slug,
    StrictModel,
)
from solver.schema.reliability import ReliabilityCatalog


class Source(StrictModel):
    url: str = Field(min_length=8)
    """Where the figure comes from (URL, or DOI/arXiv address)."""
    kind: Literal["datasheet", "estimate", "derived", "assumption", "override"] = "datasheet"
    by: str | None = None
    """Whose estimate, when kind is estimate/assumption."""
    note: str | None = None


class SourcedItem(StrictModel):
    id: Slug
    name: str
    sources: dict[str, Source]
    """Field name -> source. Every numeric field of the item needs one."""

    def numeric_fields(self) -> list[str]:
        out = []
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, bool) or name in ("id", "name", "sources"):
                continue
            if isinstance(value, int | float | dict) and value not in ({},):
                out.append(name)
        return sorted(out)

    @model_validator(mode="after")
    def _every_figure_sourced(self) -> SourcedItem:
        missing = [f for f in self.numeric_fields() if f not in self.sources]
        if missing:
            raise ValueError(f"{self.id}: figures without a source: {', '.join(missing)}")
        unknown = sorted(set(self.sources) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"{self.id}: sources name unknown fields: {', '.join(unknown)}")
        return self


Precision = Literal["bf16", "fp8", "fp4"]
class GpuSystem(SourcedItem):
    """A GPU system: an 8-GPU HGX/DGX node, or a rack-scale NVL72 (one 'node' = one rack)."""

    vendor: Literal["nvidia", "amd"]
    generation: Generation
    gpus_per_node: PositiveInt
    """GPUs per node; for NVL72 systems the node is the whole rack (72)."""
    nvlink_domain_gpus: PositiveInt
    """GPUs in one scale-up (NVLink / Infinity Fabric) domain."""
    bf16_tflops: PositiveFloat
    """Dense BF16 tensor TFLOP/s per GPU."""
    fp8_tflops: PositiveFloat | None = None
    fp4_tflops: PositiveFloat | None = None
    hbm_gib: PositiveFloat
    """Usable HBM per GPU [GiB]."""
    hbm_tbps: PositiveFloat
    """HBM bandwidth per GPU [TB/s]."""
    nvlink_gbytes_per_s: PositiveFloat
    """Scale-up bandwidth per GPU, bidirectional aggregate [GB/s]."""
    gpu_power_w: PositiveFloat
    """GPU TDP [W]."""
    node_other_power_w: PositiveFloat
    """Rest-of-node power per node (CPUs, memory, fans, NVSwitch, front-end NICs) [W],
    excluding GPUs and back-end NICs."""
    node_price_usd: PositiveFloat
    """Price of one node without back-end NICs [USD]."""
    default_nic: Slug
    nics_per_node: PositiveInt
    """Back-end (scale-out) NIC ports per node; one per GPU on NVIDIA systems."""
    frontend_gbps_per_node: PositiveFloat
    """Front-end (storage/checkpoint/data) Ethernet bandwidth per node [Gb/s]."""
    node_rack_units: PositiveInt
    """Height of one node [U] (NVL72: the whole rack, 48)."""
    max_nodes_per_rack: PositiveInt
    """Nodes per rack at the design's rack power (air: 4 HGX; NVL72: 1)."""
    liquid_cooled: Bool = False

    def peak_tflops(self, precision: str) -> float:
        """Dense peak per GPU at `precision`, falling back to the next wider format."""
        for p in ("fp4", "fp8", "bf16")[("fp4", "fp8", "bf16").index(precision):]:
            value = getattr(self, f"{p}_tflops")
            if value is not None:
                return value
        return self.bf16_tflops


class Switch(SourcedItem):
    family: Literal["infiniband", "ethernet"]
    product_line: Literal["quantum", "spectrum-x", "tomahawk"]
    radix_by_gbps: dict[int, Annotated[int, Field(ge=2, multiple_of=2, strict=True)]]
    """Ports available at each link speed (e.g. 64 at 400G, 128 at 200G); even, since a
    fat tree splits each switch's ports half down, half up."""
    in_network_reduction: Bool
    """SHARP-style in-network all-reduce (halves DP traffic per GPU, up to 2x)."""
    required_nic: Slug | None = None
    """A NIC the fabric requires (Spectrum-X needs BlueField-3 SuperNICs)."""
    power_w: PositiveFloat
    """Typical power without optics [W]."""
    price_usd: PositiveFloat
    rack_units: PositiveInt

    def radix(self, gbps: int) -> int:
        if gbps not in self.radix_by_gbps:
            raise KeyError(f"switch {self.id} has no ports at {gbps} Gb/s "
                           f"(has {sorted(self.radix_by_gbps)})")
        return self.radix_by_gbps[gbps]


class Nic(SourcedItem):
    port_gbps: PositiveInt
    """Speed of the port that faces the back-end fabric [Gb/s]."""
    families: list[Literal["infiniband", "ethernet"]]
    power_w: PositiveFloat
    price_usd: PositiveFloat


MediumKind = Literal["dac", "acc", "aec", "aoc", "multimode", "singlemode", "coherent"]


class Medium(SourcedItem):
    """A way to build one link: a cable assembly, or a transceiver pair plus fibre."""

    kind: MediumKind
    gbps: PositiveInt
    """Link speed it carries [Gb/s]."""
    reach_m: PositiveFloat
    links_per_module: PositiveInt = 1
    """Links one module/cable end serves (2 for twin-port OSFP)."""
    price_usd_per_end: NonNegativeFloat
    """Price of one end: one transceiver module, or half a cable assembly [USD]."""
    switch_end_price_usd: NonNegativeFloat | None = None
    """Price of one link end in a switch's twin-port cage (half a twin-port module) [USD];
    None: ``price_usd_per_end``. The node end of a node-leaf link stays a single-port
    module."""
    power_w_per_end: NonNegativeFloat
    fiber_usd_per_link: NonNegativeFloat = 0.0
    """Passive fibre/patching per link for transceiver media [USD]."""
    switch_families: tuple[Literal["infiniband", "ethernet"], ...] = ("infiniband", "ethernet")
    """Switch families whose links may use it (e.g. NVIDIA: AOCs are not practical for
    NDR InfiniBand)."""

    @property
    def is_transceiver(self) -> bool:
        return self.kind in ("multimode", "singlemode", "coherent")


Redundancy = Literal["N", "N+1", "2N"]
REDUNDANCY_LEVELS: tuple[str, ...] = ("N", "N+1", "2N")
Cooling = Literal["air", "rdhx", "dlc"]
COOLING_TECHNOLOGIES: tuple[str, ...] = ("air", "rdhx", "dlc")
"""Air, rear-door heat exchanger, direct liquid cooling."""
BuildPart = Literal["electrical", "cooling", "shell"]
"""A part of the facility build (models.facility.BUILD_PARTS)."""


UsdPerMw = Annotated[float, Field(gt=0, le=1e9, allow_inf_nan=False, strict=True)]
"""A facility part's cost per MW of critical IT [USD/MW]: bounded so sums stay finite."""
RackKw = Annotated[float, Field(gt=0, le=2000, allow_inf_nan=False, strict=True)]
"""Power one rack may take [kW]: up to 2 MW (today's densest racks plan ~0.6-1 MW)."""


class Facility(SourcedItem):
    pue: Annotated[float, Field(ge=1, le=3, allow_inf_nan=False)]
    build_usd_per_mw: PositiveFloat
    """Facility construction cost per MW of critical IT [USD/MW]."""
    build_shares: dict[BuildPart, Fraction]
    """The per-MW shortcut's build split into electrical, cooling and shell (sum 1)."""
    electricity_usd_per_kwh: PositiveFloat
    non_server_it_fraction: Fraction
    """Storage, front-end, management IT as a fraction of server+fabric power."""
    storage_usd_per_node: NonNegativeFloat
    """Storage and front-end network capex per node [USD]."""
    rack_usd: NonNegativeFloat
    """Rack, PDU and cabling infrastructure per rack [USD]."""
    checkpoint_storage_usd_per_gbyte_s: NonNegativeFloat
    """All-flash checkpoint tier per GB/s of sustained write bandwidth [USD/(GB/s)]."""
    checkpoint_storage_w_per_gbyte_s: NonNegativeFloat
    """Its power per GB/s of write bandwidth [W/(GB/s)]."""
    years: PositiveInt
    """Default TCO horizon [years]."""
    # --- support networks and storage (models.support), facility.support_networks ---
    support_networks: Literal["sized", "per-node"] = "sized"
    """'sized': front-end/storage network, storage appliances, management network and
    control plane sized from the design (models.support); 'per-node': the former
    shortcut, storage_usd_per_node per node at 0 W plus checkpoint_storage_*_per_gbyte_s."""
    frontend_switch: Slug = "tomahawk5"
    """Switch of the converged front-end/storage Ethernet (a catalog switch id)."""
    frontend_port_gbps: PositiveInt
    """Port speed of the front-end/storage network [Gb/s]."""
    storage_appliance_usd: NonNegativeFloat
    storage_appliance_w: NonNegativeFloat
    storage_appliance_write_gbytes_per_s: PositiveFloat
    storage_appliance_read_gbytes_per_s: PositiveFloat
    storage_appliance_usable_tb: PositiveFloat
    storage_appliance_ports: PositiveInt
    """Front-end ports of one appliance at frontend_port_gbps."""
    storage_appliance_rack_units: PositiveInt
    checkpoints_retained: PositiveInt
    """Checkpoints kept on the storage system (latest plus rollback points)."""
    dataset_bytes_per_token: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False,
                                                    strict=True)]
    """Stored bytes per training token (tokenised dataset) [B]."""
    control_plane_usd: NonNegativeFloat
    control_plane_w: NonNegativeFloat
    control_plane_nodes_per_server: PositiveInt
    control_plane_min_servers: PositiveInt
    management_switch_usd: NonNegativeFloat
    """Out-of-band 1 GbE management switch, one per rack [USD]."""
    management_switch_w: NonNegativeFloat
    management_uplinks_per_switch: PositiveInt
    management_uplink_usd: NonNegativeFloat
    """One management uplink: two modules and fibre [USD]."""
    management_aggregation_usd: NonNegativeFloat
    management_aggregation_w: NonNegativeFloat
    management_aggregation_ports: PositiveInt
    # --- the facility from parts (models.facility), facility_cost_mode = 'parts' ---
    facility_cost_mode: Literal["parts", "per-mw"] = "parts"
    """'parts': electrical chain by redundancy level, cooling by technology, shell and
    support space, PUE derived from them (models.facility); 'per-mw': the shortcut,
    build_usd_per_mw of critical IT and a fixed pue."""
    electrical_usd_per_mw: dict[Redundancy, UsdPerMw]
    """Electrical chain (substation share, generators, UPS, switchgear, distribution) per
    MW of critical IT by redundancy level [USD/MW]."""
    site_availability: dict[Redundancy, Fraction]
    """Site availability of the power and cooling chain by redundancy level."""
    electrical_loss_fraction: dict[Redundancy, Fraction]
    """Electrical losses (UPS, transformers) as a fraction of critical IT by level."""
    cooling_usd_per_mw: dict[Cooling, UsdPerMw]
    """Cooling plant and distribution per MW of critical IT by technology [USD/MW]."""
    cooling_max_rack_kw: dict[Cooling, RackKw]
    """Most power one rack can take with the technology [kW]."""
    cooling_overhead_fraction: dict[Cooling, Fraction]
    """Cooling energy as a fraction of critical IT (mechanical PUE share)."""
    shell_usd_per_mw: UsdPerMw
    """Site work, core shell and its plant and support space (electrical rooms, cooling
    plant, loading, offices) per MW of critical IT [USD/MW]."""
    white_space_usd_per_m2: Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False,
                                                   strict=True)]
    """Data hall fit-out per m2 of white space [USD/m2]."""
    white_space_m2_per_rack: PositiveFloat
    """White space one rack takes with its aisles [m2]."""
    other_overhead_fraction: Fraction
    """Lighting, offices and other facility loads as a fraction of critical IT."""
    # --- full TCO (models.tco) ---
    cost_of_capital: Annotated[float, Field(ge=0, le=0.5, allow_inf_nan=False)]
    """Annual cost of capital (WACC) that annualises capex."""
    facility_life_years: PositiveInt
    """Depreciation years of the facility (equipment: the TCO horizon, `years`)."""
    support_fraction_per_year: Fraction
    """Hardware support and maintenance per year, a fraction of equipment capex."""
    software_usd_per_gpu_year: Annotated[float, Field(ge=0, le=1e7, allow_inf_nan=False,
                                                      strict=True)]
    staff_usd_per_mw_year: Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False,
                                                  strict=True)]
    """Operations staff per MW of critical IT per year [USD]."""
    # --- cold-spare parts pool (models.spares_pool) ---
    spare_lead_time_days: PositiveFloat
    """Replacement lead time of a failed part (RMA or reorder) [days]."""
    spare_fill_rate: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)]
    """Probability that the pool covers the failures of one lead time."""

    @model_validator(mode="after")
    def _every_level_and_technology(self) -> Facility:
        problems = []
        for name in ("electrical_usd_per_mw", "site_availability", "electrical_loss_fraction"):
            if set(getattr(self, name)) != set(REDUNDANCY_LEVELS):
                problems.append(f"{name}: needs exactly {', '.join(REDUNDANCY_LEVELS)}")
        for name in ("cooling_usd_per_mw", "cooling_max_rack_kw", "cooling_overhead_fraction"):
            if set(getattr(self, name)) != set(COOLING_TECHNOLOGIES):
                problems.append(f"{name}: needs exactly {', '.join(COOLING_TECHNOLOGIES)}")
        if set(self.build_shares) != set(get_args(BuildPart)):
            problems.append(f"build_shares: needs exactly {', '.join(get_args(BuildPart))}")
        elif abs(sum(self.build_shares.values()) - 1) > 1e-9:
            problems.append(f"build_shares: must sum to 1, not "
                            f"{sum(self.build_shares.values()):g}")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Catalog(StrictModel):
    gpu: dict[Slug, GpuSystem]
    switch: dict[Slug, Switch]
    nic: dict[Slug, Nic]
    medium: dict[Slug, Medium]
    facility: Facility
    reliability: ReliabilityCatalog
    """Failure rates, restart parts and what-if profiles (solver/schema/reliability.py)."""

    @model_validator(mode="after")
    def _cross_references(self) -> Catalog:
        problems = []
        for kind in ("gpu", "switch", "nic", "medium"):
            for key, item in getattr(self, kind).items():
                if key != item.id:
                    problems.append(f"{kind}.{key}: id '{item.id}' differs from its key")
        for g in self.gpu.values():
            if g.default_nic not in self.nic:
                problems.append(f"gpu.{g.id}.default_nic: unknown nic '{g.default_nic}'")
        fe = self.switch.get(self.facility.frontend_switch)
        if fe is None:
            problems.append(f"facility.frontend_switch: unknown switch "
                            f"'{self.facility.frontend_switch}'")
        elif self.facility.frontend_port_gbps not in fe.radix_by_gbps:
            problems.append(f"facility.frontend_port_gbps: switch '{fe.id}' has no "
                            f"{self.facility.frontend_port_gbps} Gb/s ports")
        for s in self.switch.values():
            if s.required_nic is not None and s.required_nic not in self.nic:
                problems.append(f"switch.{s.id}.required_nic: unknown nic '{s.required_nic}'")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def kinds(self) -> tuple[str, ...]:
        return ("gpu", "switch", "nic", "medium", "facility")
