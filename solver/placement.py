"""Placement stage: a chosen design and the instance's floor plan -> racks on positions,
cables with routed lengths and media, placement.csv, cables.csv and floorplan.png.

Pipeline: ``models.placement.assemble.placement_inputs`` (geometry of every hall, blocks
and switch groups, media costs per routed length) -> ``models.placement.model.solve``
(CP-SAT zone model) -> :func:`concrete_layout` (positions of every rack, inside each
hall) -> :func:`cable_runs` (every bundle of links with its routed length and the cheapest
medium reaching it, ``models.placement.economics``) -> :func:`placement_summary`.
``solver.placement_check.check_placement`` re-checks the result independently.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from models.design.inputs import Inputs
from models.fabric import LinkClass, MediaLine, media_line
from models.placement.assemble import (
    LEAF_SPINE_TIER,
    DesignToPlace,
    PlacementInputs,
    Unplaceable,
    infeasibility_reason,
    placement_inputs,
)
from models.placement.economics import (
    COST_UNITS_PER_USD,
    cost_usd_per_hour,
    failure_cost_usd,
    first_reaching,
    lifetime_cost_usd,
    link_cost_units,
    lost_hours_per_interruption,
    media_by_cost,
)
from models.placement.geometry import Position, block_leaf_offsets, routed_length_m
from models.placement.halls import HallGeo, max_length, routing
from models.placement.model import PlacementSolution
from models.placement.model import solve as solve_model
from models.space import split_by_weight
from models.support import SUPPORT_CATEGORIES
from solver.backends import SolveOptions
from solver.backends.cpsat import placement_first_pass, placement_hub_pass, placement_solver
from solver.backends.highs import bound_lp
from solver.fabric_inputs import resolve_fabric_parts
from solver.placement_check import check_placement, media_changes
from solver.results import Status


def design_to_place(design, inputs: Inputs | None = None) -> DesignToPlace:
    """From a ``models.design.chosen.ChosenDesign``; the cost rate needs ``inputs``
    (facility, years)."""
    c, cand = design.config, design.candidate
    pc = design.power_cost(inputs) if inputs is not None else None
    support_racks = cand.extra.get("support", {}).get("support_racks", 0)
    return DesignToPlace(c.gpu, c.switch, cand.nodes + cand.spare_nodes, cand.tiers, c.pods,
                         c.oversubscription, c.rail_optimized, c.nic_attachment,
                         lost_hours_per_interruption(cand.extra.get("reliability", {})),
                         cost_usd_per_hour(pc.tco_usd, pc.years) if pc else None,
                         tuple(cand.switches_per_tier), tuple(cand.links_per_tier),
                         cand.extra.get("reliability", {}).get("recovery", "storage"),
                         c.pods_in_buildings,
                         tuple((m["link_class"], m["medium"]) for m in design.media()),
                         c.cooling, c.pod_join, c.pods_in_halls, support_racks,
                         sum(x.power_w for x in cand.lines if x.category in SUPPORT_CATEGORIES)
                         if support_racks else 0.0)


@dataclass(frozen=True)
class Rack:
    id: str
    role: str
    """compute | leaf | spine | core | super | ... | support (front-end/storage switches,
    storage appliances, control plane)."""
    position: Position
    contents: str
    power_w: float
    switches: int = 0
    nodes: int = 0


@dataclass(frozen=True)
class Bundle:
    """``count`` links of one class between two racks."""

    link_class: str
    tier: int
    a: str
    b: str
    count: int


@dataclass
class Layout:
    racks: list[Rack]
    bundles: list[Bundle]
    block_racks: list[dict[str, Any]]
    """Per block: compute rack ids with node counts, leaf rack ids with leaf counts."""


def concrete_layout(inp: PlacementInputs, sol: PlacementSolution) -> Layout:
    """Positions of every rack from the zone solution and the links between them."""
    halls = inp.halls
    ring_slots: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for h in halls:
        r = routing(h, inp.inputs)
        z = inp.problem.zones[h.index]
        for row, start in h.block_slots:
            length = max_length(h.leaf_positions(row, start), list(h.network_positions), r)
            k = z.ring_cost.index(link_cost_units(inp.media, length, LEAF_SPINE_TIER, inp.pricing))
            ring_slots[h.index, k].append((row, start))
    free: dict[int, list[tuple[int, int]]] = {h.index: [] for h in halls}
    taken: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for (g, h, k), n in sorted(sol.local.items()):
        slots = ring_slots[h, k]
        taken[g, h] += slots[:n]
        ring_slots[h, k] = slots[n:]
    for (h, _k), slots in sorted(ring_slots.items()):
        free[h] += slots
    for (g, h, _j), n in sorted(sol.remote.items()):
        taken[g, h] += free[h][:n]
        free[h] = free[h][n:]
    racks: list[Rack] = []
    bundles: list[Bundle] = []
    blocks_info: list[dict[str, Any]] = []
    net_free = {h.index: list(h.network_positions) for h in halls}
    spine_racks: dict[int, list[Rack]] = {}
    gpu = inp.parts.gpu
    for g, hub in enumerate(sol.hub):
        spine_racks[g] = _switch_racks(inp, "spine", f"g{g}", inp.group_spines[g],
                                       net_free[hub], racks)
    first_block = 0
    ports = gpu.nics_per_node
    for g, nblocks in enumerate(inp.group_blocks):
        slots = [(h, s) for h in range(len(halls)) for s in taken[g, h]]
        if len(slots) != nblocks:
            raise Unplaceable(f"zone solution places {len(slots)} of group {g}'s "
                              f"{nblocks} scalable units")
        for b, (h, (row, start)) in enumerate(slots):
            geo = halls[h]
            block = first_block + b
            nodes = inp.blocks[block]
            info = _block_racks(inp, geo, block, nodes, row, start, racks)
            blocks_info.append(info)
            for rid, n in info["compute"]:
                for lid, leaves in info["leaves"]:
                    bundles.append(Bundle("node-leaf", 1, rid, lid,
                                          n * ports * leaves // inp.leaves_per_block))
            if inp.fabric.tiers >= 2:
                up = inp.leaves_per_block * inp.fabric.leaf_uplinks
                targets = spine_racks[g]
                for lid, leaves in info["leaves"]:
                    per = split_by_weight(up * leaves // inp.leaves_per_block,
                                 [t.switches for t in targets])
                    bundles += [Bundle("leaf-spine", LEAF_SPINE_TIER, lid, t.id, c)
                                for t, c in zip(targets, per, strict=True) if c]
        first_block += nblocks
    lower = [r for g in sorted(spine_racks) for r in spine_racks[g]]
    for t in range(2, inp.fabric.tiers - inp.fabric.mesh):
        lc = inp.fabric.link_classes[t]
        role = lc.name.split("-")[1]
        upper: list[Rack] = []
        for h in range(len(halls)):
            upper += _switch_racks(inp, role, f"h{h}", sol.upper[t - 2][h], net_free[h], racks)
        inner = inp.problem.upper[t - 2].building_switches
        if inner:  # a tier inside pods aligned with buildings or halls: pod by pod
            pod_links = lc.links // inp.fabric.pods
            for b, _ in inner:
                bundles += _spread(lc, [r for r in lower if _site(inp, r) == b],
                                   [u for u in upper if _site(inp, u) == b], pod_links)
        else:
            bundles += _spread(lc, lower, upper, lc.links)
        lower = upper
    if inp.fabric.mesh:
        bundles += _mesh(inp, inp.fabric.link_classes[-1], lower)
    racks += _support_racks(inp, sol, net_free)
    return Layout(racks, bundles, blocks_info)


def _support_racks(inp: PlacementInputs, sol: PlacementSolution,
                   net_free: dict[int, list[Position]]) -> list[Rack]:
    """The zone solution's support racks per hall on its next free network positions
    (beside the switch racks), each drawing an equal share of the support design's power
    [W]."""
    d = inp.design
    share = d.support_power_w / d.support_racks if d.support_racks else 0.0
    return [Rack(f"support-h{h}-{i}", "support", net_free[h].pop(0),
                 "front-end/storage switches, storage, control plane", share)
            for h, n in enumerate(sol.support) for i in range(n)]


def _site(inp: PlacementInputs, rack: Rack) -> str:
    """The pod site of a rack: its building, or with one pod per hall its hall's key."""
    p = rack.position
    return f"{p.building}/{p.hall}" if inp.design.pods_in_halls else p.building


def _mesh(inp: PlacementInputs, lc: LinkClass, tops: list[Rack]) -> list[Bundle]:
    """The mesh joining pods aligned with buildings (or halls): every pair of pods gets
    ``links / (P(P−1)/2)`` links between their pod-top racks, each pod's share in
    proportion to its racks' switches (models.fabric: the same uplinks from each pod top
    to each peer pod)."""
    pods = inp.fabric.pods
    by_building: dict[str, list[Rack]] = defaultdict(list)
    for r in tops:
        by_building[_site(inp, r)].append(r)
    buildings = sorted(by_building)
    if len(buildings) != pods:
        raise Unplaceable(f"a mesh of {pods} pods found pod tops in {len(buildings)} sites")
    per_pair = lc.links // (pods * (pods - 1) // 2)
    out = []
    for i, a in enumerate(buildings):
        for b in buildings[i + 1:]:
            out += _spread(lc, by_building[a], by_building[b], per_pair)
    return out


def _spread(lc: LinkClass, lower: list[Rack], upper: list[Rack], links: int) -> list[Bundle]:
    """``links`` links of ``lc`` from the ``lower`` switch racks to the ``upper`` ones, each
    end's share in proportion to its switches (largest remainder)."""
    out = []
    for lo, n in zip(lower, split_by_weight(links, [r.switches for r in lower]), strict=True):
        per = split_by_weight(n, [u.switches for u in upper])
        out += [Bundle(lc.name, lc.tier, lo.id, u.id, c)
                for u, c in zip(upper, per, strict=True) if c]
    return out


def _switch_racks(inp: PlacementInputs, role: str, tag: str, switches: int, free: list[Position],
                  racks: list[Rack]) -> list[Rack]:
    """``switches`` switches of ``role`` into racks on the next free network positions."""
    out = []
    per = inp.switches_per_rack
    for i, start in enumerate(range(0, switches, per)):
        n = min(per, switches - start)
        pos = free.pop(0)
        rack = Rack(f"{role}-{tag}-{i}", role, pos, f"{n} x {inp.parts.switch.id}",
                    n * inp.leaf_power_w, switches=n)
        racks.append(rack)
        out.append(rack)
    return out


def _block_racks(inp: PlacementInputs, geo: HallGeo, block: int, nodes: int, row: int, start: int,
                 racks: list[Rack]) -> dict[str, Any]:
    """Compute racks (filled in order) and leaf racks (middle) of one block."""
    leaf_off = set(block_leaf_offsets(geo.width, geo.leaf_racks)) if geo.leaf_racks else set()
    inside = block_leaf_offsets(geo.width, 0)[0] if not geo.leaf_racks else None
    compute, leaves = [], []
    left = nodes
    gpu = inp.parts.gpu
    for off in range(geo.width):
        pos = geo.position(row, start + off)
        if off in leaf_off:
            continue
        n = min(geo.nodes_per_rack, left)
        left -= n
        if n == 0 and off != inside:
            continue
        rid = f"su{block}-c{off}"
        contents = f"{n} x {gpu.id}"
        power = n * inp.node_power_w
        sw = 0
        if off == inside:
            contents += f" + {inp.leaves_per_block} x {inp.parts.switch.id} (leaf)"
            power += inp.leaves_per_block * inp.leaf_power_w
            sw = inp.leaves_per_block
            leaves.append((rid, inp.leaves_per_block))
        racks.append(Rack(rid, "compute", pos, contents, power, switches=sw, nodes=n))
        compute.append((rid, n))
    per = split_by_weight(inp.leaves_per_block, [1] * len(leaf_off))
    for i, off in enumerate(sorted(leaf_off)):
        rid = f"su{block}-l{off}"
        racks.append(Rack(rid, "leaf", geo.position(row, start + off),
                          f"{per[i]} x {inp.parts.switch.id}", per[i] * inp.leaf_power_w,
                          switches=per[i]))
        leaves.append((rid, per[i]))
    return {"block": block, "compute": compute, "leaves": leaves}


@dataclass(frozen=True)
class CableRun:
    """A bundle with its routed length and medium."""

    link_class: str
    tier: int
    a: str
    b: str
    count: int
    length_m: float
    medium: str


def cable_runs(inp: PlacementInputs, layout: Layout) -> list[CableRun]:
    """Routed length of every bundle and the cheapest medium reaching it (the media ranked
    by cost once per tier)."""
    where = {r.id: r.position for r in layout.racks}
    geo = {h.key: h for h in inp.halls}
    ranked = {tier: media_by_cost(inp.media, tier, inp.pricing)
              for tier in sorted({b.tier for b in layout.bundles})}
    runs = []
    for b in layout.bundles:
        pa, pb = where[b.a], where[b.b]
        length = routed_length_m(pa, pb, routing(geo[f"{pa.building}/{pa.hall}"], inp.inputs))
        m = first_reaching(ranked[b.tier], length)
        if m is None:
            raise Unplaceable(f"{pa.building}/{pa.hall} row {pa.row}: a {b.link_class} link "
                              f"of {length:,.1f} m is beyond every medium's reach")
        runs.append(CableRun(b.link_class, b.tier, b.a, b.b, b.count, round(length, 2), m.id))
    return runs


def cables_table(runs: list[CableRun]) -> list[dict[str, Any]]:
    """cables.csv rows: (link class, medium, length rounded up to 0.1 m) -> count."""
    agg: Counter[tuple[int, str, str, float]] = Counter()
    for r in runs:
        agg[r.tier, r.link_class, r.medium, math.ceil(r.length_m * 10 - 1e-9) / 10] += r.count
    return [{"link_class": c, "medium": m, "length_m": length, "count": n}
            for (_, c, m, length), n in sorted(agg.items())]


def media_lines(inp: PlacementInputs, runs: list[CableRun]):
    """models.fabric.MediaLine per (link class, medium) over the routed runs."""
    by: dict[tuple[int, str, str], list[CableRun]] = defaultdict(list)
    for r in runs:
        by[r.tier, r.link_class, r.medium].append(r)
    twin = inp.design.nic_attachment == "twin"
    lines = []
    for (tier, lc, mid), rs in sorted(by.items()):
        links = sum(r.count for r in rs)
        longest = max(r.length_m for r in rs)
        lines.append(media_line(LinkClass(lc, tier, links), inp.inputs.medium[mid],
                                longest, twin))
    return lines


@dataclass(frozen=True)
class PlacementResult:
    """A placement: its status, the ``clusterplan place --json`` document (``to_dict``),
    the racks and cable runs; without a placement (infeasible, no solution) only the
    status and the diagnosis in the document."""

    status: Status
    summary: dict[str, Any]
    racks: tuple[Rack, ...] = ()
    runs: tuple[CableRun, ...] = ()
    inputs: PlacementInputs | None = None
    solution: PlacementSolution | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.summary


def failed_placement(status: Status, diagnosis: str) -> PlacementResult:
    return PlacementResult(status, {"status": status, "diagnosis": diagnosis})


def bom_media_rows(lines: list[MediaLine]) -> list[dict[str, Any]]:
    """The placement document's ``bom_media``: each placed link class and medium."""
    return [{"link_class": x.link_class, "medium": x.medium_id, "kind": x.kind,
             "links": x.links, "longest_m": x.length_m,
             "transceivers": x.transceivers, "cables": x.cables,
             "capex_usd": round(x.capex_usd, 2), "power_w": round(x.power_w, 2)}
            for x in lines]


def placed_media_lines(result: PlacementResult) -> list[MediaLine]:
    """The media the placement's routed lengths call for, per link class and medium."""
    return media_lines(result.inputs, result.runs)


def place(inputs: Inputs, design: DesignToPlace, options: SolveOptions) -> PlacementResult:
    """Place ``design`` on the instance's floor plan and re-check it independently
    (solver.placement_check). Infeasible: the diagnosis names the failing hall/row
    constraint and the shortfall; no_solution: CP-SAT found nothing in time."""
    start = time.perf_counter()
    try:
        inp = placement_inputs(inputs, design, resolve_fabric_parts(
            inputs, design.gpu, design.switch))
        sol = solve_model(inp.problem, placement_solver(options),
                          placement_first_pass(options), placement_hub_pass(options),
                          bound_lp())
        if sol.status == "infeasible":
            return failed_placement(Status.INFEASIBLE, infeasibility_reason(inp))
        if sol.status == "unknown":
            return failed_placement(Status.NO_SOLUTION, "no placement found within "
                                    f"{options.placement_time_limit_s:g} s")
        layout = concrete_layout(inp, sol)
        runs = cable_runs(inp, layout)
    except Unplaceable as exc:
        return failed_placement(Status.INFEASIBLE, str(exc))
    summary = placement_summary(inp, sol, layout, runs, time.perf_counter() - start)
    result = PlacementResult(Status(sol.status), summary, tuple(layout.racks), tuple(runs),
                             inp, sol)
    problems = check_placement(inputs, result)
    if problems:
        return failed_placement(Status.INFEASIBLE, "placement failed the independent "
                                "check:\n" + "\n".join(f"  - {p}" for p in problems[:20]))
    return dataclasses.replace(result, summary=summary | {
        "verified": True, "media_changes": media_changes(design.media, runs)})


def placement_summary(inp: PlacementInputs, sol: PlacementSolution, layout: Layout,
                      runs: list[CableRun], runtime_s: float) -> dict[str, Any]:
    """The ``clusterplan place --json`` document."""
    lines = media_lines(inp, runs)
    roles = Counter(r.role for r in layout.racks)
    halls_used = sorted({f"{r.position.building}/{r.position.hall}" for r in layout.racks})
    medium = inp.inputs.medium
    per_link = {(m, tier): (lifetime_cost_usd(medium[m], tier, inp.pricing),
                            failure_cost_usd(medium[m], tier, inp.pricing))
                for m, tier in {(r.medium, r.tier) for r in runs}}
    lifetime = sum(r.count * per_link[r.medium, r.tier][0] for r in runs)
    failures = sum(r.count * per_link[r.medium, r.tier][1] for r in runs)
    gap = ((sol.objective - sol.bound) / sol.objective) if sol.objective else 0.0
    cables: dict[tuple[str, str], dict[str, Any]] = {}
    for r in runs:
        c = cables.setdefault((r.link_class, r.medium), {
            "link_class": r.link_class, "medium": r.medium, "count": 0, "total_length_m": 0.0,
            "max_length_m": 0.0})
        c["count"] += r.count
        c["total_length_m"] += r.count * r.length_m
        c["max_length_m"] = max(c["max_length_m"], r.length_m)
    order = {lc.name: lc.tier for lc in inp.fabric.link_classes}
    return {
        "status": sol.status,
        "racks": dict(sorted(roles.items())),
        "racks_total": len(layout.racks),
        "halls_used": halls_used,
        "cables": [dict(c, total_length_m=round(c["total_length_m"], 1))
                   for _, c in sorted(cables.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))],
        "optics_capex_usd": round(sum(x.capex_usd for x in lines), 2),
        "optics_power_w": round(sum(x.power_w for x in lines), 2),
        "transceivers": sum(x.transceivers for x in lines),
        "cable_assemblies": sum(x.cables for x in lines),
        "media_lifetime_cost_usd": round(lifetime, 2),
        "media_failure_cost_usd": round(failures, 2),
        "media_failure_cost_note": inp.pricing.note,
        "max_link_m": max((r.length_m for r in runs), default=0.0),
        "objective_usd": sol.objective / COST_UNITS_PER_USD,
        "objective_bound": sol.bound / COST_UNITS_PER_USD,
        "gap": round(gap, 6),
        "gap_usd": (sol.objective - sol.bound) / COST_UNITS_PER_USD,
        "bound_method": sol.bound_method,
        "objective_note": ("CP-SAT zone model: lifetime media cost (capex, energy and "
                           "expected failures) of leaf-spine and upper links at each zone "
                           "pair's largest routed length; node-leaf links are fixed by the "
                           "scalable-unit layout. media_lifetime_cost_usd is the cost of all "
                           "links at the routed lengths of the final layout (never above for "
                           "the modelled links); media_failure_cost_usd is its failure part. "
                           "objective_bound: CP-SAT's bound or, when higher, the hub bound "
                           "(bound_method exhaustive or by building: every placement of the "
                           "spine groups enumerated, the rest relaxed; models.placement.bound) "
                           "or the core-split bound (by core split: every split of the core "
                           "switches over the buildings enumerated, the rest a linear "
                           "program; models.placement.core_split)."),
        "runtime_s": round(runtime_s, 3),
        "solver": {"backend": "cp-sat", "runtime_s": round(sol.runtime_s, 3),
                   "zones": len(inp.problem.zones), "groups": len(inp.problem.groups)},
        "design": {"gpu": inp.design.gpu, "switch": inp.design.switch,
                   "nodes": inp.design.nodes, "rail_optimized": inp.design.rail_optimized,
                   "tiers": inp.fabric.tiers,
                   "switches_per_tier": list(inp.fabric.switches_per_tier),
                   "links_per_tier": list(inp.fabric.links_per_tier)},
        "bom_media": bom_media_rows(lines),
        "halls": [{"hall": h.key, "rows": h.hall.rows,
                   "positions_per_row": h.hall.positions_per_row,
                   "nodes_per_rack": h.nodes_per_rack, "unit_width": h.width,
                   "unit_slots": len(h.block_slots), "network_rows": list(h.network_rows),
                   "power_cap_kw": h.hall.hall_cap_kw,
                   "racks": sum(1 for r in layout.racks if r.position.hall == h.hall.name
                                and r.position.building == h.building),
                   "nodes": sum(r.nodes for r in layout.racks if r.position.hall == h.hall.name
                                and r.position.building == h.building),
                   "power_kw": round(sum(r.power_w for r in layout.racks
                                         if r.position.hall == h.hall.name
                                         and r.position.building == h.building) / 1e3, 1)}
                  for h in inp.halls],
        "notes": inp.notes,
    }
