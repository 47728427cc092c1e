"""Space: racks, scalable-unit blocks and network racks of a fabric on a site's halls.

One model for the design stage (models.design: racks in the BOM, block slots per
building in the MILP) and for placement (models.placement: the halls' block slots and
network rows), so every design the MILP returns has the positions placement needs.

* Nodes per rack in a hall: ``min(max_nodes_per_rack, ⌊42 U / node U⌋, ⌊rack kW / node
  kW⌋)``; 0 where the hall cannot cool the system. The one rack capacity of the code:
  with the facility built from parts the hall's rack kW and cooling are the chosen
  cooling technology's (models.design.inputs.Inputs.halls_for), at the design stage and
  in placement alike.
* A **block** is one placement scalable unit: ``k/2`` nodes and their ``rails`` leaves
  (rail-optimized), ``⌊(k/2)/ports⌋`` nodes and one leaf (middle-of-rack), laid out in
  ``width`` consecutive positions of one row: ``⌈nodes/npr⌉`` compute racks, the leaves
  in the middle compute rack when its height and power allow, else in ``⌈leaves·U/42⌉``
  leaf racks in the middle. Blocks are counted pod by pod as models.fabric builds them.
* Switches are sized conservatively: switch power plus every port at the most
  power-hungry medium of the link speed; ``⌊42/U⌋`` of them a rack, fewer where the
  site's smallest rack power cannot feed them.
* Network racks: each tier-2 group's spines in their own racks, each upper tier packed;
  their power is their switches at the conservative switch power.
* Rack power of a building: its halls' power (the site's halls carry the building's IT
  power less the non-server IT share, solver.prepare.site_halls), at most its IT power.
* Network rows of a hall: the middle ``max(1, ⌈1.5 · R_net · P_hall / ΣP / positions⌉)``
  rows (its power share of the network racks, 50% headroom); every other row takes
  ``min(⌊positions / width⌋, ⌊row kW / block kW⌋)`` blocks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from models.fabric import Fabric, leaf_group_sizes, leaf_groups, pod_nodes

RACK_UNITS = 42
"""Usable height of one rack [U]."""
NETWORK_ROW_HEADROOM = 1.5
"""Network rows hold this many times a hall's share of the network racks (assumption by
clusterplan: room for growth, patching and aisles)."""

Hall = Any
"""A hall of the site (solver.schema.site.Hall): rows, positions_per_row, rack_power_kw,
row_cap_kw, hall_cap_kw, cooling."""


def node_power_w(p: Any) -> float:
    """One node with its GPUs and back-end NICs [W] (``p``: anything with ``gpu`` and
    ``nic``, e.g. a ConfigParts or solver.fabric_inputs.FabricParts)."""
    return (p.gpu.gpus_per_node * p.gpu.gpu_power_w + p.gpu.node_other_power_w
            + p.gpu.nics_per_node * p.nic.power_w)


def nodes_per_rack(gpu: Any, node_w: float, hall: Hall) -> int:
    """Nodes per rack in ``hall`` (:func:`rack_nodes` at its rack power and cooling)."""
    return rack_nodes(gpu, node_w, hall.rack_power_kw, hall.cooling == "liquid")


def rack_nodes(gpu: Any, node_w: float, rack_kw: float, liquid: bool) -> int:
    """``min(max_nodes_per_rack, ⌊42 U / node U⌋, ⌊rack kW / node kW⌋)``; 0 when the rack
    cannot cool the system (liquid-cooled systems need ``liquid``). A rack-scale system
    (NVL72: a 48U node) is its own rack: one per position."""
    if gpu.liquid_cooled and not liquid:
        return 0
    by_height = 1 if gpu.node_rack_units >= RACK_UNITS else RACK_UNITS // gpu.node_rack_units
    return max(0, min(gpu.max_nodes_per_rack, by_height,
                      math.floor(rack_kw * 1e3 / node_w + 1e-9)))


def switch_power_w(switch: Any, radix: int, media: Sequence[Any]) -> float:
    """A switch with every port at the most power-hungry medium of ``media`` [W]
    (conservative: whatever medium placement picks fits the racks and rows)."""
    return switch.power_w + radix * max(m.power_w_per_end / m.links_per_module for m in media)


def switches_per_rack(switch: Any, switch_w: float, rack_kw: float) -> int:
    """``max(1, min(⌊42/U⌋, ⌊rack kW / switch kW⌋))``."""
    return max(1, min(RACK_UNITS // switch.rack_units, math.floor(rack_kw * 1e3 / switch_w)))


def block_size(fabric: Fabric) -> tuple[int, int]:
    """(nodes, leaves) of one block: the whole fabric for a single switch; ``k/2`` nodes and
    one leaf per rail rail-optimized; ``⌊(k/2)/ports⌋`` nodes and one leaf middle-of-rack.
    A pod of ``⌈nodes/pods⌉`` nodes smaller than that is one block of its own nodes (with
    all its leaves): its racks and power are those of the nodes it has, not of a full
    scalable unit."""
    spec = fabric.spec
    half = spec.radix // 2
    if fabric.tiers == 1:
        return spec.nodes, 1
    pod = -(-spec.nodes // fabric.pods)
    if spec.rail_optimized:
        return min(half, pod), spec.ports_per_node
    return min(half // spec.ports_per_node, pod), 1


def split_by_weight(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` by largest remainder (sums exactly)."""
    w = sum(weights)
    if not w:
        return [0] * len(weights)
    base = [total * x // w for x in weights]
    rest = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % w), i))
    for i in rest[:total - sum(base)]:
        base[i] += 1
    return base


def block_structure(fabric: Fabric, su_nodes: int, leaves_per_block: int
                    ) -> tuple[list[int], list[int], list[int]]:
    """Blocks (``su_nodes`` nodes and their leaves), the blocks of each tier-2 group and
    each group's spines, exactly as ``models.fabric`` counts the fabric: pod by pod (each
    pod built for ``⌈nodes/pods⌉`` nodes, so its blocks are those of a full pod even when
    the last pod holds fewer nodes), groups from ``models.fabric.leaf_groups``. A group's
    blocks are its leaves over the block's leaves; where a block's leaves straddle two
    groups (leaves per block not dividing the group), the pod's blocks are split over its
    groups in proportion to their leaves.
    Returns (nodes of every block, blocks per group, spines per group)."""
    if fabric.pod_tiers == 1:
        return [fabric.spec.nodes], [1], [0]
    size = -(-fabric.spec.nodes // fabric.pods)
    per_pod = -(-size // su_nodes)
    blocks = [max(0, min(su_nodes, n - i * su_nodes))
              for n in pod_nodes(fabric.spec) for i in range(per_pod)]
    groups = leaf_groups(fabric)
    group_blocks: list[int] = []
    for pod in range(fabric.pods):
        leaves = [g.leaves for g in groups if g.pod == pod]
        if all(n % leaves_per_block == 0 for n in leaves):
            group_blocks += [n // leaves_per_block for n in leaves]
        else:
            group_blocks += split_by_weight(per_pod, leaves)
    return blocks, group_blocks, [g.spines for g in groups]


@dataclass(frozen=True)
class BlockShape:
    """One block in one hall."""

    nodes_per_rack: int
    compute_racks: int
    leaf_racks: int
    """0: the leaves ride in the middle compute rack."""
    power_w: float
    """Nodes with their NICs and the leaves at their conservative power [W]."""

    @property
    def width(self) -> int:
        """Consecutive positions of one block."""
        return self.compute_racks + self.leaf_racks

    def leaf_offsets(self) -> tuple[int, ...]:
        """Offsets of the leaf racks (the middle ones; the middle compute rack when the
        leaves ride in it)."""
        if self.leaf_racks == 0:
            return ((self.width - 1) // 2,)
        start = (self.width - self.leaf_racks) // 2
        return tuple(range(start, start + self.leaf_racks))

    def node_link_m(self, hall: Hall) -> float:
        """Longest routed node-leaf link of the block [m]: the farthest compute rack from a
        leaf rack, ``Δpositions · pitch + 2 · drop + slack`` (models.placement.geometry),
        or ``in_rack_m`` when every node shares the leaves' rack."""
        leaf = self.leaf_offsets()
        compute = [o for o in range(self.width) if self.leaf_racks == 0 or o not in leaf]
        far = max(abs(o - x) for o in compute for x in leaf)
        if far == 0:
            return hall.in_rack_m
        return far * hall.rack_pitch_m + 2 * hall.drop_m + hall.slack_m

    def racks(self, nodes: int) -> int:
        """Racks of a block holding ``nodes`` nodes: compute racks filled from the first
        position (the middle one stays when it holds the leaves) and its leaf racks."""
        used = -(-nodes // self.nodes_per_rack)
        if self.leaf_racks:
            leaf = set(self.leaf_offsets())
            compute = [o for o in range(self.width) if o not in leaf]
            return sum(1 for o in compute[:used]) + self.leaf_racks
        middle = self.leaf_offsets()[0]
        return used + (1 if middle >= used else 0)


def block_shape(gpu: Any, switch: Any, node_w: float, su_nodes: int, leaves: int,
                leaf_w: float, hall: Hall) -> BlockShape | None:
    """The block in ``hall`` (module doc); None where the hall takes no compute rack."""
    npr = nodes_per_rack(gpu, node_w, hall)
    if npr == 0:
        return None
    compute = math.ceil(su_nodes / npr)
    mid_nodes = min(npr, su_nodes - ((compute - 1) // 2) * npr)
    fits_inside = (mid_nodes * gpu.node_rack_units + leaves * switch.rack_units <= RACK_UNITS
                   and mid_nodes * node_w + leaves * leaf_w <= hall.rack_power_kw * 1e3)
    leaf_racks = 0 if fits_inside else math.ceil(leaves * switch.rack_units / RACK_UNITS)
    return BlockShape(npr, compute, leaf_racks, su_nodes * node_w + leaves * leaf_w)


def network_rows(hall: Hall, net_racks: int, share: float) -> int:
    """Rows of ``hall`` for network racks: ``max(1, ⌈1.5 · share · R_net / positions⌉)``
    (0 without network racks), at most all rows."""
    if not net_racks:
        return 0
    return min(hall.rows, max(1, math.ceil(NETWORK_ROW_HEADROOM * net_racks * share
                                           / hall.positions_per_row)))


def blocks_per_row(hall: Hall, shape: BlockShape) -> int:
    """``min(⌊positions / width⌋, ⌊row kW / block kW⌋)``."""
    return max(0, min(hall.positions_per_row // shape.width,
                      math.floor(hall.row_cap_kw * 1e3 / shape.power_w)))


@dataclass(frozen=True)
class HallSpace:
    building: str
    hall: Hall
    shape: BlockShape | None
    network_rows: int
    block_slots: int


@dataclass(frozen=True)
class SpaceLayout:
    """A fabric's blocks, switch racks and the halls' room for them."""

    fabric: Fabric
    su_nodes: int
    """Nodes of one block."""
    leaves_per_block: int
    pod_nodes: tuple[int, ...]
    """Nodes of each pod (one pod without pods)."""
    blocks_per_pod: int
    leaf_power_w: float
    switches_per_rack: int
    network_racks: int
    halls: tuple[HallSpace, ...]
    node_power_w: float
    """One node with its NICs [W]."""

    @property
    def block_count(self) -> int:
        return len(self.pod_nodes) * self.blocks_per_pod

    def blocks(self) -> tuple[list[int], list[int], list[int]]:
        """:func:`block_structure` of the fabric: nodes of every block, blocks per group,
        spines per group."""
        return block_structure(self.fabric, self.su_nodes, self.leaves_per_block)

    def block_sizes(self) -> dict[int, int]:
        """Nodes of a block -> how many blocks hold that many (pod by pod, as
        :func:`block_structure` lays them)."""
        out: dict[int, int] = {}
        for n in self.pod_nodes:
            full, rest = divmod(n, self.su_nodes)
            full = min(full, self.blocks_per_pod)
            sizes = {self.su_nodes: full}
            if full < self.blocks_per_pod:
                sizes[rest] = sizes.get(rest, 0) + 1
                sizes[0] = sizes.get(0, 0) + self.blocks_per_pod - full - 1
            for size, count in sizes.items():
                if count:
                    out[size] = out.get(size, 0) + count
        return out

    @property
    def node_link_m(self) -> float:
        """Longest node-leaf link of a block in any hall that takes compute racks [m]
        (0 without one)."""
        return max((h.shape.node_link_m(h.hall) for h in self.halls if h.shape is not None),
                   default=0.0)

    @property
    def block_power_w(self) -> float:
        """One full block at the conservative switch power, as placement counts every
        block (a partly filled last block of a pod included) [W]."""
        return max((h.shape.power_w for h in self.halls if h.shape is not None), default=0.0)

    @property
    def pod_blocks_power_w(self) -> tuple[float, ...]:
        """Each pod's blocks as placement powers them [W]: the nodes the pod has (a partly
        filled last block counts its own nodes, not a full one) and every block's leaves at
        the conservative switch power, ``n_i node_W + (B/P) leaves leaf_W``."""
        leaves_w = self.blocks_per_pod * self.leaves_per_block * self.leaf_power_w
        return tuple(n * self.node_power_w + leaves_w for n in self.pod_nodes)

    @property
    def pod_power_w(self) -> float:
        """The largest pod (the first) as placement powers it [W]: its blocks
        (:attr:`pod_blocks_power_w`) and the switches above its leaves inside the pod
        (tiers 2 … pod_tiers, ``S_t / pods`` each) at the conservative switch power."""
        f = self.fabric
        inner = sum(f.switches_per_tier[1:f.pod_tiers]) // f.pods
        return self.pod_blocks_power_w[0] + inner * self.leaf_power_w

    @property
    def network_power_w(self) -> float:
        """Switches in network racks (every tier-2 group's spines and every upper tier) at
        the conservative switch power, as placement counts them (models.placement.assemble)
        and the design MILP's block_power family [W]. The spines are the groups' of
        :func:`block_structure`, summed without laying out the blocks (hot path: once per
        candidate)."""
        spines = self.fabric.pods * sum(s * n for _, s, n in leaf_group_sizes(self.fabric))
        return (spines + sum(self.fabric.switches_per_tier[2:])) * self.leaf_power_w

    @property
    def group_spine_power_w(self) -> float:
        """The largest tier-2 group's spines at the conservative switch power [W] (0
        without tier 2): placement stands a group's spine racks in one hall (its hub,
        models.placement.model), so this much network power cannot be split over
        buildings (the design MILP's spine_hub family)."""
        return max((s for _, s, _ in leaf_group_sizes(self.fabric)), default=0) * (
            self.leaf_power_w)

    def block_slots_by_hall(self, by_power: bool = True) -> tuple[int, ...]:
        """Blocks each hall can take (site order): its block slots and, ``by_power``,
        ``⌊hall kW / block kW⌋`` (every block full)."""
        return tuple(min(h.block_slots, math.floor(h.hall.hall_cap_kw * 1e3 / h.shape.power_w))
                     if h.shape is not None and by_power else h.block_slots
                     for h in self.halls)

    def block_slots_by_building(self, by_power: bool = True) -> dict[str, int]:
        """Blocks each building's halls can take (:meth:`block_slots_by_hall`)."""
        out: dict[str, int] = {}
        for h, room in zip(self.halls, self.block_slots_by_hall(by_power), strict=True):
            out[h.building] = out.get(h.building, 0) + room
        return out

    def pods_own_halls(self, pods_in_buildings: bool, pods_in_halls: bool) -> bool:
        """Each pod stands alone in a hall (one pod per hall, or per building of one hall):
        its blocks' power, with the nodes each has (:attr:`pod_blocks_power_w`), is then
        counted against its hall whole (the design MILP's pod_power family), so the hall's
        slots are its rows' only (``block_slots_by_hall(by_power=False)``), not ``⌊hall kW /
        block kW⌋`` of full blocks."""
        if not pods_in_buildings:
            return False
        buildings = [h.building for h in self.halls]
        return pods_in_halls or len(set(buildings)) == len(buildings)

    @cached_property
    def racks(self) -> int:
        """Compute, leaf and network racks, blocks at the narrowest usable hall's shape
        (the most nodes per rack; placement may use wider halls' shapes); kept once
        computed (a layout is shared by the candidates of several configurations)."""
        shapes = [h.shape for h in self.halls if h.shape is not None]
        if not shapes:
            return self.network_racks
        shape = max(shapes, key=lambda s: (s.nodes_per_rack, -s.leaf_racks))
        return (sum(count * shape.racks(n) for n, count in self.block_sizes().items())
                + self.network_racks)


def rack_power_by_building(halls: Sequence[tuple[str, Hall]]) -> dict[str, float]:
    """Power the racks of each building may draw: the sum of its halls' power [W]."""
    out: dict[str, float] = {}
    for b, h in halls:
        out[b] = out.get(b, 0.0) + h.hall_cap_kw * 1e3
    return out


def space_layout(fabric: Fabric, gpu: Any, switch: Any, node_w: float, media: Sequence[Any],
                 halls: Sequence[tuple[str, Hall]]) -> SpaceLayout:
    """Blocks, network racks and each hall's block slots of ``fabric`` built of ``gpu``
    nodes (``node_w`` each) and ``switch`` switches with ``media`` (those of the link
    speed) on ``halls`` ((building, hall) pairs)."""
    su_nodes, leaves = block_size(fabric)
    leaf_w = switch_power_w(switch, fabric.radix, media)
    if fabric.pod_tiers == 1:
        pods, per_pod = (fabric.spec.nodes,), 1
    else:
        pods = pod_nodes(fabric.spec)
        size = -(-fabric.spec.nodes // fabric.pods)
        per_pod = -(-size // su_nodes)
    per_rack = switches_per_rack(switch, leaf_w, min(h.rack_power_kw for _, h in halls))
    net = (fabric.pods * sum(n * -(-s // per_rack) for _, s, n in leaf_group_sizes(fabric))
           + sum(-(-s // per_rack) for s in fabric.switches_per_tier[2:]))
    total_kw = sum(h.hall_cap_kw for _, h in halls)
    out = []
    for b, h in halls:
        shape = block_shape(gpu, switch, node_w, su_nodes, leaves, leaf_w, h)
        rows = network_rows(h, net, h.hall_cap_kw / total_kw)
        slots = (h.rows - rows) * blocks_per_row(h, shape) if shape else 0
        out.append(HallSpace(b, h, shape, rows, slots))
    return SpaceLayout(fabric, su_nodes, leaves, tuple(pods), per_pod, leaf_w, per_rack, net,
                       tuple(out), node_w)
