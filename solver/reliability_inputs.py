"""Inputs of the reliability model: rates from the instance's catalog, and one builder of
``ReliabilityInputs`` from a fabric and its media, shared by `clusterplan reliability`,
the design candidates and the placement, so all three count the same links and media.

The reliability catalog is part of every catalog (``Catalog.reliability``, loaded with
the others and overridable as ``[catalog.reliability...]``). Every problem is raised as
InvalidInstance (exit code 3) naming the option or field.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

from models.fabric import Fabric, MediaLine
from models.reliability import (
    COPPER_KINDS,
    Rate,
    ReliabilityInputs,
    ReliabilityRates,
    RestartParts,
    checkpoint_size_gb,
    param_count,
)
from solver.errors import InvalidInstance
from solver.schema import GpuSystem, Nic, Workload
from solver.schema.reliability import Rate as RateFigure
from solver.schema.reliability import ReliabilityCatalog

GPUS_PER_HOST_RACK_SCALE = 4
"""GPUs per host (compute tray) in rack-scale systems: an NVL72 rack has 18 trays of 4."""


def load_reliability_catalog() -> ReliabilityCatalog:
    """The shipped reliability catalog, validated with the rest of the catalog."""
    from solver.loading import load_catalog

    return load_catalog().reliability


def _rate(figure: RateFigure) -> Rate:
    if figure.events is not None:
        return Rate.from_events(figure.mttf_hours, figure.events)
    return Rate.from_mttf(figure.mttf_hours, figure.mttf_range_hours)


def reliability_rates(catalog: ReliabilityCatalog, generation: str,
                      profile: str = "default", option: str = "reliability.profile"
                      ) -> ReliabilityRates:
    """The model's rates [1/h] with their ranges, and the restart parts by recovery mode,
    for a GPU generation under a rate profile."""
    if profile not in catalog.profiles():
        raise InvalidInstance([f"{option}: unknown profile '{profile}' "
                               f"(known: {', '.join(catalog.profiles())})"])
    cat = catalog.with_profile(profile)
    if generation not in cat.gpu:
        raise InvalidInstance([f"catalog.reliability.gpu: no failure rate for GPU generation "
                               f"'{generation}' (known: {', '.join(sorted(cat.gpu))})"])
    rec = cat.recovery
    return ReliabilityRates(
        gpu=_rate(cat.gpu[generation]), host=_rate(cat.host), nic=_rate(cat.nic),
        link={k: _rate(v) for k, v in sorted(cat.link.items())}, switch=_rate(cat.switch),
        software=_rate(cat.software), sdc=_rate(cat.sdc), planned=_rate(cat.planned),
        fabric_interrupt_fraction=rec.fabric_interrupt_fraction.value,
        restart={mode: RestartParts(**{name: getattr(parts, name).value
                                       for name in type(parts).model_fields})
                 for mode, parts in sorted(cat.restart.items())},
        host_copy_gbytes_per_s_per_gpu=rec.host_copy_gbytes_per_s_per_gpu.value,
        node_repair_h=rec.node_repair_h.value, switch_replace_h=rec.switch_replace_h.value,
        profile=profile)


def workload_checkpoint_gb(workload: Workload) -> float:
    """Checkpoint size of a workload: param_count x bytes per parameter (Adam)."""
    return checkpoint_size_gb(param_count(workload), workload.precision)


def hosts_per_node(gpu: GpuSystem) -> int:
    """Host servers per node: 1 for HGX-style nodes, trays of 4 GPUs in rack-scale ones."""
    if gpu.gpus_per_node <= 8:
        return 1
    return ceil(gpu.gpus_per_node / GPUS_PER_HOST_RACK_SCALE)


def design_inputs(gpu: GpuSystem, nic: Nic, radix: int, rail_optimized: bool, nodes: int,
                  fabric: Fabric | None, media: Sequence[MediaLine], recovery: str,
                  checkpoint_gb: float, checkpoint_gbps: float, availability_target: float,
                  spares: int | None = None, node_kind: str | None = None
                  ) -> ReliabilityInputs:
    """ReliabilityInputs of a design: `nodes` training nodes on `fabric` with `media`.

    Node links: gpu.nics_per_node per node, of the node-leaf medium's kind (`node_kind`
    when no media are given yet: spares are sized before media are chosen). Switch links:
    every other link class of the media, by kind, all counted (copper ones too).
    """
    kinds = {line.link_class: line.kind for line in media}
    node_kind = kinds.get("node-leaf", node_kind)
    if node_kind is None:
        raise ValueError("design_inputs needs the node-leaf medium or node_kind")
    switch_links: dict[str, int] = {}
    for line in media:
        if line.link_class != "node-leaf":
            switch_links[line.kind] = switch_links.get(line.kind, 0) + line.links
    links, copper = gpu.nics_per_node, node_kind in COPPER_KINDS
    return ReliabilityInputs(
        gpus=nodes * gpu.gpus_per_node, gpus_per_node=gpu.gpus_per_node,
        node_links_optical=0 if copper else links, node_links_copper=links if copper else 0,
        node_optic_kind="multimode" if copper else node_kind,
        node_copper_kind=node_kind if copper else "dac",
        switches=fabric.switches_total if fabric else 0, switch_links_optical=0,
        switch_links=switch_links, rail_optimized=rail_optimized,
        checkpoint_size_gb=checkpoint_gb, checkpoint_gbps=checkpoint_gbps, recovery=recovery,
        leaf_down_ports=max(1, radix // 2),
        peer_gbytes_per_s_per_node=links * nic.port_gbps / 8.0,
        availability_target=availability_target, spare_nodes=spares,
        hosts_per_node=hosts_per_node(gpu))


def placed_media(bom_media: Sequence[dict]) -> list[MediaLine]:
    """The placement's media lines ({link_class, medium, kind, links, longest_m,
    transceivers, cables, capex_usd, power_w}) as MediaLine, for design_inputs."""
    return [MediaLine(m["link_class"], m["medium"], m["kind"], m["links"], m["longest_m"],
                      m["transceivers"], m["cables"], m["capex_usd"], m["power_w"])
            for m in bom_media]
