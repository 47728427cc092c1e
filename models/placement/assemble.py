"""Assemble the placement problem of a design: its fabric, blocks and switch groups on
the site's halls, media costs per routed length, and the CP-SAT zone model's data
(models.placement.problem); prechecks that name the hall or row constraint that fails.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from models.design.inputs import Inputs
from models.fabric import (
    Fabric,
    FabricSpec,
    design_fabric,
    leaf_groups,
    media_for,
    pod_tiers,
)
from models.placement.economics import MediaPricing, Medium, link_cost_units, media_pricing
from models.placement.halls import FabricParts, HallGeo, hall_geometry, max_length, routing
from models.placement.problem import Group, PlacementProblem, UpperTier, Zone
from models.space import node_power_w, space_layout

LEAF_SPINE_TIER = 2
"""Tier of the leaf-spine links (1 = node-leaf), the zone model's rings and remote costs."""


class Unplaceable(Exception):
    """No placement exists; the message names the constraint and the shortfall."""


@dataclass(frozen=True)
class DesignToPlace:
    """What placement needs of a design (from a ChosenDesign or a design.json)."""

    gpu: str
    switch: str
    nodes: int
    """Compute nodes to place, spares included."""
    tiers: int | None
    """Switch tiers in all (the super tier of pods included), as the design counts them;
    None = the fewest that fit."""
    pods: int
    oversubscription: float
    rail_optimized: bool
    nic_attachment: str
    lost_hours_per_interruption: float | None = None
    """Training time one job interruption costs [h] (:func:`lost_hours_per_interruption`);
    None without the reliability model's figures."""
    cost_usd_per_hour: float | None = None
    """The cluster's cost of ownership per hour: TCO / (years · 8760) [USD/h]."""
    switches_per_tier: tuple[int, ...] | None = None
    """The designed fabric's switches per tier, leaf first (None: not known); the
    placement checker fails a placement that builds another fabric."""
    links_per_tier: tuple[int, ...] | None = None
    """The designed fabric's links per tier, node-leaf first (None: not known)."""
    recovery: str = "storage"
    """The design's recovery mode (storage or in-memory)."""
    pods_in_buildings: bool = False
    """One pod per building (site order): each pod's blocks, spines and inner tiers stand
    in its building; only the tier joining the pods crosses buildings."""
    media: tuple[tuple[str, str], ...] | None = None
    """(link class, medium) the design stage chose (None: not known); placement picks
    media by routed length, and the checker reports where they differ
    (solver.placement_check.media_changes)."""
    cooling: str = "per-mw"
    """The facility's cooling technology: the halls it is placed in are
    ``Inputs.halls_for(cooling)`` (the design stage's rack power density)."""
    pod_join: str = "super"
    """How the pods are joined (models.fabric.FabricSpec.pod_join): 'super' or 'mesh'."""
    pods_in_halls: bool = False
    """One pod per hall (site order; with ``pods_in_buildings``): each pod whole in its
    hall."""
    support_racks: int = 0
    """Racks of front-end/storage switches, storage and control plane (models.support;
    0 in the per-node shortcut): placed in network rows."""
    support_power_w: float = 0.0
    """What the support design draws in all (models.support.SupportDesign.power_w) [W],
    shared equally by its support racks."""


@dataclass
class PlacementInputs:
    inputs: Inputs
    design: DesignToPlace
    parts: FabricParts
    fabric: Fabric
    halls: list[HallGeo]
    media: list[Medium]
    su_nodes: int
    leaves_per_block: int
    blocks: list[int]
    """Nodes of every block."""
    group_blocks: list[int]
    group_spines: list[int]
    switches_per_rack: int
    node_power_w: float
    leaf_power_w: float
    """Conservative: switch + every port at the most power-hungry medium."""
    routing_between_buildings_m: float
    pricing: MediaPricing
    problem: PlacementProblem | None = None
    notes: list[str] = field(default_factory=list)


def placement_inputs(inputs: Inputs, design: DesignToPlace, parts: FabricParts
                     ) -> PlacementInputs:
    """Fabric, halls, blocks and switch groups of ``design`` (built of ``parts``) on the
    instance's site."""
    spec = FabricSpec(nodes=design.nodes, ports_per_node=parts.gpu.nics_per_node,
                      radix=parts.radix,
                      tiers=design.tiers and pod_tiers(design.tiers, design.pods),
                      pods=design.pods,
                      oversubscription=design.oversubscription,
                      rail_optimized=design.rail_optimized, pod_join=design.pod_join)
    fabric = design_fabric(spec)
    media = media_for(inputs.medium.values(), parts.gbps, parts.switch.family)
    space = space_layout(fabric, parts.gpu, parts.switch, node_power_w(parts), media,
                         inputs.halls_for(design.cooling))
    halls = [hall_geometry(i, h) for i, h in enumerate(space.halls)]
    blocks, group_blocks, group_spines = space.blocks()
    out = PlacementInputs(inputs, design, parts, fabric, halls, media, space.su_nodes,
                          space.leaves_per_block, blocks, group_blocks, group_spines,
                          space.switches_per_rack,
                          node_power_w(parts), space.leaf_power_w,
                          inputs.site.cable_lengths.between_buildings_m,
                          media_pricing(inputs, design, parts))
    sites = len(halls) if design.pods_in_halls else len(inputs.site.buildings)
    if design.pods_in_buildings and design.pods != sites:
        kind = "halls" if design.pods_in_halls else "buildings"
        raise Unplaceable(f"pods aligned with {kind}: {design.pods} pods on a site of "
                          f"{sites} {kind}")
    precheck(out)
    out.problem = zone_problem(out)
    return out


def block_power_w(inp: PlacementInputs) -> float:
    return inp.su_nodes * inp.node_power_w + inp.leaves_per_block * inp.leaf_power_w


def short_w(inp: PlacementInputs, blocks: list[int]) -> float:
    """What ``blocks`` (their nodes) draw less than as many full blocks [W]."""
    return (len(blocks) * inp.su_nodes - sum(blocks)) * inp.node_power_w


def precheck(inp: PlacementInputs) -> None:
    """Infeasible before any search: say which hall/row constraint fails and by how much."""
    usable = [g for g in inp.halls if g.nodes_per_rack]
    if not usable:
        g = inp.parts.gpu
        reasons = [f"{h.key}: {h.hall.cooling}-cooled at {h.hall.rack_power_kw:g} kW per rack "
                   f"(a {g.id} node draws {inp.node_power_w / 1e3:.1f} kW"
                   f"{', needs liquid cooling' if g.liquid_cooled else ''})" for h in inp.halls]
        raise Unplaceable("no hall can take a compute rack: " + "; ".join(reasons))
    if all(h.width > h.hall.positions_per_row for h in usable):  # a hall too short is
        raise Unplaceable("; ".join(                                 # left empty
            f"{h.key}: a scalable unit needs {h.width} consecutive positions in one row, "
            f"rows have {h.hall.positions_per_row} (short by "
            f"{h.width - h.hall.positions_per_row})" for h in usable))
    bw = block_power_w(inp)
    if all(not h.block_slots for h in usable):
        h = usable[0]
        raise Unplaceable(f"{h.key}: a row's busway takes {h.hall.row_cap_kw:g} kW, one "
                         f"scalable unit draws {bw / 1e3:.1f} kW (short by "
                         f"{bw / 1e3 - h.hall.row_cap_kw:.1f} kW)")
    slots = sum(len(h.block_slots) for h in inp.halls)
    if slots < len(inp.blocks):
        raise Unplaceable(
            f"not enough rack positions: {len(inp.blocks)} scalable units need block slots, "
            f"the halls' rows offer {slots} (short by {len(inp.blocks) - slots}; "
            + ", ".join(f"{h.key}: {len(h.block_slots)}" for h in inp.halls) + ")")
    need_kw = (len(inp.blocks) * bw - short_w(inp, inp.blocks)) / 1e3
    have_kw = sum(min(h.hall.hall_cap_kw, len(h.block_slots) * bw / 1e3) for h in inp.halls)
    if need_kw > have_kw:
        raise Unplaceable(f"hall power: the scalable units draw {need_kw:,.0f} kW, the halls "
                         f"can feed {have_kw:,.0f} kW of them (short by "
                         f"{need_kw - have_kw:,.0f} kW)")


def zone_problem(inp: PlacementInputs) -> PlacementProblem:
    """The CP-SAT zone model's data (models.placement.model)."""
    inputs = inp.inputs
    zones, remote = [], []
    leaf_pos = {h.index: [p for r, s in h.block_slots for p in h.leaf_positions(r, s)]
                for h in inp.halls}
    for h in inp.halls:
        r = routing(h, inputs)
        ring: dict[int, int] = Counter()
        for row, start in h.block_slots:
            length = max_length(h.leaf_positions(row, start), list(h.network_positions), r)
            ring[_cost(inp, length, "leaf-spine", LEAF_SPINE_TIER, h.key)] += 1
        costs = tuple(sorted(ring))
        zones.append(Zone(h.key, h.building, tuple(ring[c] for c in costs), costs,
                          len(h.network_positions), int(h.hall.hall_cap_kw * 1e3)))
        remote.append(tuple(
            0 if o.index == h.index else
            _cost(inp, max_length(leaf_pos[h.index] or list(h.network_positions),
                                  list(o.network_positions), r), "leaf-spine", LEAF_SPINE_TIER,
                  h.key)
            for o in inp.halls))
    spine_w = inp.leaf_power_w
    pod_building = pod_buildings(inp)
    group_building = ([pod_building[g.pod] for g in leaf_groups(inp.fabric)] if pod_building
                      else [None] * len(inp.group_blocks))
    first = [sum(inp.group_blocks[:g]) for g in range(len(inp.group_blocks))]
    groups = tuple(Group(b, inp.leaves_per_block * inp.fabric.leaf_uplinks, s,
                         -(-s // inp.switches_per_rack), round(s * spine_w), where,
                         round(short_w(inp, inp.blocks[i:i + b])) if where else 0)
                   for b, s, where, i in zip(inp.group_blocks, inp.group_spines,
                                             group_building, first, strict=True))
    upper = []
    pods = inp.fabric.pods
    # a mesh joining the pods has no switches to place: its links join the pod tops of two
    # buildings at campus reach wherever they stand (solver.placement wires it)
    for t in range(2, inp.fabric.tiers - inp.fabric.mesh):
        lc = inp.fabric.link_classes[t]
        inner = bool(pod_building) and t < inp.fabric.pod_tiers
        cost = tuple(tuple(
            0 if not (a.network_positions and b.network_positions)
            or (inner and pod_site(inp, a) != pod_site(inp, b))
            else (pods if inner else 1) * _cost(
                inp, max_length(list(a.network_positions), list(b.network_positions),
                                routing(a, inputs)), lc.name, lc.tier, a.key)
            for b in inp.halls) for a in inp.halls)
        per_pod = inp.fabric.switches_per_tier[t] // pods
        upper.append(UpperTier(lc.name, inp.fabric.switches_per_tier[t], inp.switches_per_rack,
                               round(spine_w), lc.links, cost,
                               tuple((b, per_pod) for b in pod_building) if inner else ()))
    # a building's racks may draw its IT power less the non-server IT share, as its
    # halls' (solver.prepare.site_halls): (1 + share) x rack power <= building MW
    share = 1 + inputs.facility.non_server_it_fraction
    caps = {b.name: int(b.it_power_mw * 1e6 / share) for b in inputs.site.buildings}
    return PlacementProblem(tuple(zones), groups, round(block_power_w(inp)), tuple(remote),
                            tuple(upper), caps, inp.design.support_racks,
                            support_rack_power_w(inp.design))


def support_rack_power_w(design: DesignToPlace) -> int:
    """One support rack's share of the support design's power, rounded up [W] (the zone
    model's integer watts; the placed racks carry the exact share)."""
    if not design.support_racks:
        return 0
    return math.ceil(design.support_power_w / design.support_racks - 1e-9)


def pod_buildings(inp: PlacementInputs) -> tuple[str, ...]:
    """The site of each pod when the design aligns pods with the site (site order): its
    building's name, or with one pod per hall its hall's key (``building/hall``); else
    ()."""
    if not inp.design.pods_in_buildings:
        return ()
    if inp.design.pods_in_halls:
        return tuple(h.key for h in inp.halls)
    return tuple(b.name for b in inp.inputs.site.buildings)


def pod_site(inp: PlacementInputs, hall: HallGeo) -> str:
    """The pod site a hall belongs to: the hall itself with one pod per hall, else its
    building."""
    return hall.key if inp.design.pods_in_halls else hall.building


def _cost(inp: PlacementInputs, length: float, link_class: str, tier: int, where: str) -> int:
    cost = link_cost_units(inp.media, length, tier, inp.pricing)
    if cost is None:
        longest = max(m.reach_m for m in inp.media)
        raise Unplaceable(f"{where}: a {link_class} link needs {length:,.0f} m, the longest "
                         f"medium reaches {longest:,.0f} m (short by {length - longest:,.0f} m)")
    return cost


def infeasibility_reason(inp: PlacementInputs) -> str:
    """Why CP-SAT found no placement after the prechecks passed: network positions or the
    hall/building power caps (with the shortfall)."""
    p = inp.problem
    net_need = sum(g.spine_racks for g in p.groups) + sum(
        -(-t.switches // t.per_rack) for t in p.upper) + p.support_racks
    net_have = sum(z.network_positions for z in p.zones)
    if net_need > net_have:
        return (f"network rows: {net_need} switch and support racks need positions, the "
                f"halls' network rows offer {net_have} (short by {net_need - net_have})")
    need_w = (len(inp.blocks) * p.block_power_w - sum(g.short_w for g in p.groups)
              + sum(g.spine_power_w for g in p.groups)
              + sum(t.switches * t.switch_power_w for t in p.upper)
              + p.support_racks * p.support_rack_power_w)
    have_w = sum(min(z.power_cap_w, p.building_cap_w[z.building]) for z in p.zones)
    have_w = min(have_w, sum(p.building_cap_w.values()))
    if need_w > have_w:
        return (f"hall/building power: racks draw {need_w / 1e3:,.0f} kW, halls and buildings "
                f"feed {have_w / 1e3:,.0f} kW (short by {(need_w - have_w) / 1e3:,.0f} kW)")
    return ("halls cannot hold the scalable units, switch groups and their power together "
            "(every single hall and row constraint holds on its own; "
            + ", ".join(f"{z.name}: {sum(z.ring_slots)} unit slots, "
                        f"{z.network_positions} network positions, "
                        f"{z.power_cap_w / 1e3:,.0f} kW" for z in p.zones) + ")")
