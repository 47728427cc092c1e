"""Catalog and site data -> inputs of ``models.fabric``, and the fabric bill of materials.

Shared by ``clusterplan fabric`` and the solve pipeline:

* :func:`backend_nic` is the one rule for the back-end NIC (solve, fabric, perf and
  reliability all use it); :func:`resolve_fabric_parts` picks it,
  the link speed (the NIC's ``port_gbps``) and the switch radix at that speed.
* :func:`link_lengths` maps ``CableLengths`` to the fabric's link-class names:

  ============== =====================================================================
  link class     CableLengths field
  ============== =====================================================================
  node-leaf      ``node_leaf_rail_optimized_m`` (rail-optimized: leaves at the end of
                 the row, so the node end leaves the rack) or
                 ``node_leaf_middle_of_rack_m`` (leaf in the rack group: copper)
  leaf-spine     ``leaf_spine_m``
  spine-core     ``spine_core_m``; ``between_buildings_m`` as the top of a campus tree
  core-super and ``between_buildings_m`` (a 4th tier, or the tier joining pods, spans
  above          the buildings of a campus); ``spine_core_m`` on a single-building site
  ============== =====================================================================

* :func:`frontend_network` sizes the front-end (storage/checkpoint) Ethernet.
* :func:`fabric_report` is the ``clusterplan fabric --json`` document of a fabric, and
  :func:`fabric_document` the whole document from catalog ids (``solver.api.fabric``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from models.design.candidates import link_lengths
from models.fabric import Fabric, FabricSpec, MediaLine, choose_media, design_fabric
from solver.errors import InvalidInstance
from solver.results import FabricDocument, Frontend, LinkClassRow, SplitFigures
from solver.schema import CableLengths, Catalog, GpuSystem, Nic, Switch

FRONTEND_SWITCH = "tomahawk5"
"""Front-end Ethernet switch (generic 51.2T box) and its port speed [Gb/s]."""
FRONTEND_GBPS = 400


@dataclass(frozen=True)
class FabricParts:
    gpu: GpuSystem
    switch: Switch
    nic: Nic
    gbps: int
    """Back-end link speed = the NIC's port speed [Gb/s]."""
    radix: int
    """Switch ports at ``gbps``."""


def backend_nic(catalog: Catalog, gpu: GpuSystem, switch: Switch) -> Nic:
    """The back-end NIC of `gpu` on `switch`: the one the switch requires (BlueField-3 for
    Spectrum-X), else the GPU system's default. solve, fabric, perf and reliability all
    use this rule."""
    return catalog.nic[switch.required_nic or gpu.default_nic]


def resolve_fabric_parts(catalog: Catalog, gpu_id: str, switch_id: str,
                         gpu_field: str = "gpu", switch_field: str = "switch") -> FabricParts:
    """GPU system, switch, NIC, speed and radix; every problem reported with its field name."""
    problems = []
    gpu = catalog.gpu.get(gpu_id)
    switch = catalog.switch.get(switch_id)
    if gpu is None:
        problems.append(f"{gpu_field}: unknown gpu system '{gpu_id}' "
                        f"(known: {', '.join(sorted(catalog.gpu))})")
    if switch is None:
        problems.append(f"{switch_field}: unknown switch '{switch_id}' "
                        f"(known: {', '.join(sorted(catalog.switch))})")
    if problems:
        raise InvalidInstance(problems, "fabric")
    nic = backend_nic(catalog, gpu, switch)
    if switch.family not in nic.families:
        problems.append(f"{switch_field}: {switch.family} switch '{switch.id}' cannot attach "
                        f"NIC '{nic.id}' ({'/'.join(nic.families)})")
    elif nic.port_gbps not in switch.radix_by_gbps:
        problems.append(f"{switch_field}: switch '{switch.id}' has no {nic.port_gbps} Gb/s "
                        f"ports for NIC '{nic.id}' (has {sorted(switch.radix_by_gbps)} Gb/s)")
    if problems:
        raise InvalidInstance(problems, "fabric")
    return FabricParts(gpu, switch, nic, nic.port_gbps, switch.radix(nic.port_gbps))


def frontend_network(nodes: int, gpu: GpuSystem, catalog: Catalog) -> Fabric:
    """Front-end Ethernet: ``⌈frontend_gbps_per_node / 400⌉`` ports per node on a
    non-blocking fat tree of Tomahawk-5 switches at 400G, middle-of-rack (rail-grouped if a
    node has more ports than half a switch), fewest tiers
    (2 up to 8,192 ports, 3 beyond). Its capex and power are not added here: the
    facility's ``storage_usd_per_node`` and ``non_server_it_fraction`` already cover it."""
    radix = catalog.switch[FRONTEND_SWITCH].radix(FRONTEND_GBPS)
    ports = math.ceil(gpu.frontend_gbps_per_node / FRONTEND_GBPS)
    return design_fabric(FabricSpec(nodes=nodes, ports_per_node=ports, radix=radix,
                                    rail_optimized=ports > radix // 2))


def fabric_report(gpus: int, fabric: Fabric, parts: FabricParts, media: tuple[MediaLine, ...],
                  frontend: Fabric) -> FabricDocument:
    """The ``clusterplan fabric --json`` document of ``gpus`` GPUs on ``fabric``: counts,
    media, capex and power (capex = switches + back-end NICs + media; power likewise)."""
    nics = fabric.endpoints
    transceivers: Counter[str] = Counter()
    cables: Counter[str] = Counter()
    for line in media:
        if line.transceivers:
            transceivers[line.medium_id] += line.transceivers
        cables[line.medium_id] += line.cables
    capex = SplitFigures(fabric.switches_total * parts.switch.price_usd,
                         nics * parts.nic.price_usd, sum(x.capex_usd for x in media))
    power = SplitFigures(fabric.switches_total * parts.switch.power_w,
                         nics * parts.nic.power_w, sum(x.power_w for x in media))
    return FabricDocument(
        gpus=gpus, gpu=parts.gpu.id, switch=parts.switch.id, nic=parts.nic.id,
        gbps=parts.gbps, nodes=fabric.spec.nodes, ports_per_node=fabric.spec.ports_per_node,
        rail_optimized=fabric.spec.rail_optimized, endpoints=fabric.endpoints,
        radix=fabric.radix, tiers=fabric.tiers, pod_tiers=fabric.pod_tiers,
        max_endpoints=fabric.max_endpoints, pods=fabric.pods,
        oversubscription=fabric.wired_oversubscription,
        oversubscription_requested=fabric.spec.oversubscription,
        switches_per_tier=tuple(fabric.switches_per_tier),
        switches_total=fabric.switches_total, links_per_tier=tuple(fabric.links_per_tier),
        link_classes=tuple(
            LinkClassRow(x.link_class, x.links, x.length_m, x.medium_id, x.kind,
                         x.transceivers, x.cables, x.capex_usd, x.power_w) for x in media),
        transceivers=dict(sorted(transceivers.items())), cables=dict(sorted(cables.items())),
        capex_usd=capex.switches + capex.nics + capex.media,
        power_w=power.switches + power.nics + power.media,
        capex_breakdown_usd=capex, power_breakdown_w=power,
        frontend=Frontend(FRONTEND_SWITCH, FRONTEND_GBPS, frontend.spec.ports_per_node,
                          frontend.tiers, frontend.switches_total,
                          tuple(frontend.switches_per_tier), sum(frontend.links_per_tier)),
        pod_join="mesh" if fabric.mesh else "super")


def design_with_media(parts: FabricParts, spec: FabricSpec, lengths: CableLengths,
                      catalog: Catalog, twin_port: bool, single_building: bool = False
                      ) -> tuple[Fabric, tuple[MediaLine, ...]]:
    """Design the fabric and choose the cheapest medium per link class."""
    fabric = design_fabric(spec)
    media = choose_media(fabric, link_lengths(lengths, fabric, single_building),
                         sorted(catalog.medium.values(), key=lambda m: m.id), parts.gbps,
                         twin_port)
    return fabric, media


def fabric_document(gpus: int, gpu: str, switch: str, tiers: int | None, oversubscription: float,
          pods: int, rail_optimized: bool, twin_port: bool,
          instance: Path | None, pod_join: str = "super") -> FabricDocument:
    """The fabric document; bad options raise InvalidInstance naming the option."""
    from solver.loading import load_catalog, load_instance

    problems = []
    if gpus < 1:
        problems.append(f"--gpus: must be a positive number of GPUs (got {gpus})")
    if tiers is not None and not 1 <= tiers <= 5:
        problems.append(f"--tiers: must be 1..5 (got {tiers})")
    if not 1 <= oversubscription <= 64:
        problems.append(f"--oversubscription: must be 1..64 (got {oversubscription})")
    if pods < 1:
        problems.append(f"--pods: must be >= 1 (got {pods})")
    if pod_join not in ("super", "mesh"):
        problems.append(f"--pod-join: must be super or mesh (got {pod_join!r})")
    elif pod_join == "mesh" and pods < 2:
        problems.append(f"--pod-join: a mesh joins two or more pods (--pods is {pods})")
    if problems:
        raise InvalidInstance(problems, "fabric")
    if instance is not None:
        inst = load_instance(instance)
        catalog, lengths = inst.catalog, inst.site.cable_lengths
        single_building = len(inst.site.buildings) == 1
    else:
        catalog, lengths, single_building = load_catalog(), CableLengths(), False
    parts = resolve_fabric_parts(catalog, gpu, switch, "--gpu", "--switch")
    nodes = math.ceil(gpus / parts.gpu.gpus_per_node)
    spec = FabricSpec(nodes=nodes, ports_per_node=parts.gpu.nics_per_node, radix=parts.radix,
                      tiers=tiers, pods=pods, oversubscription=oversubscription,
                      rail_optimized=rail_optimized, pod_join=pod_join)
    try:
        fabric, media = design_with_media(parts, spec, lengths, catalog, twin_port,
                                          single_building)
    except ValueError as exc:
        raise InvalidInstance([f"--tiers/--pods/--oversubscription/--pod-join: {exc}"],
                              "fabric") from None
    return fabric_report(gpus, fabric, parts, media,
                         frontend_network(nodes, parts.gpu, catalog))
