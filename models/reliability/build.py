"""One builder of ``ReliabilityInputs`` from a design's fabric and media, shared by the
`reliability` command, the design candidates and the placement, so all three count the
same links and media."""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil
from typing import Any

from models.fabric import Fabric, MediaLine
from models.reliability.design import ReliabilityInputs

GPUS_PER_HOST_RACK_SCALE = 4
"""GPUs per host (compute tray) in rack-scale systems: an NVL72 rack has 18 trays of 4."""


def hosts_per_node(gpu: Any) -> int:
    """Host servers per node: 1 for HGX-style nodes, trays of 4 GPUs in rack-scale ones."""
    if gpu.gpus_per_node <= 8:
        return 1
    return ceil(gpu.gpus_per_node / GPUS_PER_HOST_RACK_SCALE)


def design_inputs(gpu: Any, nic: Any, radix: int, rail_optimized: bool, nodes: int,
                  fabric: Fabric | None, media: Sequence[MediaLine], recovery: str,
                  checkpoint_gb: float, checkpoint_gbps: float, availability_target: float,
                  spares: int | None = None, node_kind: str | None = None
                  ) -> ReliabilityInputs:
    """ReliabilityInputs of a design: `nodes` training nodes on `fabric` with `media`.

    Node links: gpu.nics_per_node per node, split over the node-leaf media by their share
    of the node-leaf links (placement may build one link class with several media);
    `node_kind` when no media are given yet (spares are sized before media are chosen).
    Switch links: every other link class of the media, by kind, all counted (copper too).
    ``gpu``: nics_per_node, gpus_per_node; ``nic``: port_gbps.
    """
    node_lines: dict[str, int] = {}
    switch_links: dict[str, int] = {}
    for line in media:
        into = node_lines if line.link_class == "node-leaf" else switch_links
        into[line.kind] = into.get(line.kind, 0) + line.links
    links = gpu.nics_per_node
    total = sum(node_lines.values())
    if total:
        per_node = {kind: links * n / total for kind, n in sorted(node_lines.items())}
    elif node_kind is not None:
        per_node = {node_kind: float(links)}
    else:
        raise ValueError("design_inputs needs the node-leaf medium or node_kind")
    return ReliabilityInputs(
        gpus=nodes * gpu.gpus_per_node, gpus_per_node=gpu.gpus_per_node,
        node_links_optical=0, node_links_copper=0, node_links_by_kind=per_node,
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
