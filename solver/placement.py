"""Placement stage: a chosen design and the instance's floor plan -> racks on positions,
cables with routed lengths and media, placement.csv, cables.csv and floorplan.png.

Pipeline: :func:`placement_inputs` (geometry of every hall, blocks and switch groups,
media costs per routed length) -> ``models.placement.model.solve`` (CP-SAT zone model)
-> :func:`concrete_layout` (positions of every rack, inside each hall) -> :func:`cable_runs`
(every bundle of links with its routed length and the cheapest medium reaching it) ->
:func:`placement_summary`. ``solver.placement_check.check_placement`` re-checks the result
independently.

Cost of a medium per link over the instance's years [USD] (:func:`lifetime_cost_usd`):
capex ``2·price_per_end/lpm + fiber_per_link`` + energy ``2·power_per_end/lpm [W] · 8760 h ·
years · electricity [USD/kWh] / 1000 · PUE`` + failures ``λ·8760·years · (part + s·(L − r)·c)``
(:func:`failure_cost_usd`: the reliability model's per-link rate λ, replacement part, the
share s of failures that stop the job, the training hours L an interruption loses and the
cluster's cost rate c [USD/h]; 0 without the reliability model's figures). The cheapest
medium whose reach covers a link's routed length (ties: capex, id) builds it.

Conservative figures keep every model decision physically valid: a leaf switch or spine
rack is sized at its switch power plus every port carrying the most power-hungry medium at
the link speed; the model's length of a link between two zones is the largest routed
length between their positions.
"""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from models.fabric import Fabric, FabricSpec, LinkClass, design_fabric, media_line
from models.placement.geometry import (
    Position,
    Routing,
    block_leaf_offsets,
    routed_length_m,
)
from models.placement.model import PlacementSolution
from models.placement.model import solve as solve_model
from models.placement.problem import Group, PlacementProblem, UpperTier, Zone
from models.power_cost import BomLine
from models.reliability import ReliabilityRates
from models.reliability.goodput import lost_work_s
from models.reliability.rates import link_failure_rate
from solver.design_data import media_lines as bom_media_lines
from solver.errors import Infeasible, InvalidInstance, NoSolution
from solver.evaluators import ModelGoodput
from solver.fabric_inputs import FabricParts, resolve_fabric_parts
from solver.schema import Instance
from solver.schema.catalog import Medium
from solver.schema.site import Hall, default_halls

RACK_UNITS = 42
"""Usable height of one rack [U] (same figure as solver.design_data)."""
LEAF_SPINE_TIER = 2
"""Tier of the leaf-spine links (1 = node-leaf), the zone model's rings and remote costs."""
COST_UNITS_PER_USD = 100
"""The CP-SAT objective counts cents."""
HOURS_PER_YEAR = 8760


@dataclass(frozen=True)
class DesignToPlace:
    """What placement needs of a design (from a ChosenDesign or a design.json)."""

    gpu: str
    switch: str
    nodes: int
    """Compute nodes to place, spares included."""
    tiers: int | None
    pods: int
    oversubscription: float
    rail_optimized: bool
    nic_attachment: str
    lost_hours_per_interruption: float | None = None
    """Training time one job interruption costs [h] (:func:`lost_hours_per_interruption`);
    None without the reliability model's figures."""
    cost_usd_per_hour: float | None = None
    """The cluster's cost of ownership per hour: TCO / (years · 8760) [USD/h]."""


def lost_hours_per_interruption(reliability: dict[str, Any]) -> float | None:
    """Training time one interruption costs [h]: the restart (detection, hot-spare swap,
    job start-up, checkpoint reload) plus the work lost since the last checkpoint
    (``models.reliability.goodput.lost_work_s`` of the segment ``τ + δ`` and the MTBF).
    ``reliability``: the goodput model's figures of the design (restart_s,
    checkpoint_interval_s, checkpoint_write_s, mtbf_hours); None when they are absent."""
    keys = ("restart_s", "checkpoint_interval_s", "checkpoint_write_s", "mtbf_hours")
    if not all(k in reliability for k in keys):
        return None
    segment = reliability["checkpoint_interval_s"] + reliability["checkpoint_write_s"]
    lost = lost_work_s(segment, reliability["mtbf_hours"] * 3600.0)
    return (reliability["restart_s"] + lost) / 3600.0


def cost_usd_per_hour(tco_usd: float, years: int) -> float:
    """Capex amortised over the years plus energy, per hour [USD/h]: TCO / (years · 8760)."""
    return tco_usd / (years * HOURS_PER_YEAR)


def design_to_place(design, inst: Instance | None = None) -> DesignToPlace:
    """From a ``solver.design.ChosenDesign``; the cost rate needs ``inst`` (facility, years)."""
    c, cand = design.config, design.candidate
    pc = design.power_cost(inst) if inst is not None else None
    return DesignToPlace(c.gpu, c.switch, cand.nodes + cand.spare_nodes, cand.tiers, c.pods,
                         c.oversubscription, c.rail_optimized, c.nic_attachment,
                         lost_hours_per_interruption(cand.extra.get("reliability", {})),
                         cost_usd_per_hour(pc.tco_usd, pc.years) if pc else None)


def design_from_summary(summary: dict[str, Any]) -> DesignToPlace:
    """From a design.json written by ``clusterplan solve``: its ``design`` section, the
    reliability figures of ``throughput.reliability`` and the TCO of ``cost``."""
    d = summary["design"]
    cost = summary.get("cost", {})
    return DesignToPlace(d["gpu"], d["switch"], d["nodes"] + d["spare_nodes"], d["tiers"],
                         d["pods"], d["oversubscription"], d["rail_optimized"],
                         d["nic_attachment"],
                         lost_hours_per_interruption(
                             summary.get("throughput", {}).get("reliability", {})),
                         cost_usd_per_hour(cost["tco_usd"], cost["tco_years"])
                         if "tco_usd" in cost and "tco_years" in cost else None)


@dataclass(frozen=True)
class HallGeo:
    """A hall with its building, positions, and the block/network layout rules."""

    building: str
    hall: Hall
    index: int
    nodes_per_rack: int
    width: int
    """Positions of one block (compute racks + leaf racks)."""
    compute_racks: int
    leaf_racks: int
    network_rows: tuple[int, ...]
    block_slots: tuple[tuple[int, int], ...]
    """(row, first position) of every block slot."""
    network_positions: tuple[Position, ...]
    """Network positions in fill order (alternating rows: spread over busways)."""

    @property
    def key(self) -> str:
        return f"{self.building}/{self.hall.name}"

    def position(self, row: int, slot: int) -> Position:
        x0, y0 = self.hall.origin_m
        return Position(self.building, self.hall.name, row, slot,
                        x0 + slot * self.hall.rack_pitch_m, y0 + row * self.hall.row_pitch_m)

    def leaf_positions(self, start_row: int, start: int) -> list[Position]:
        return [self.position(start_row, start + o)
                for o in block_leaf_offsets(self.width, self.leaf_racks)]


@dataclass
class Inputs:
    inst: Instance
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


# ---------------------------------------------------------------------------------------
# Media costs


@dataclass(frozen=True)
class FailurePricing:
    """What a link failure costs the design being placed.

    rates: the goodput model's failure rates (the reliability catalog times the instance's
        what-if multipliers, ``solver.evaluators.ModelGoodput.rates``).
    lost_hours_per_interruption: training time a node-link interruption costs [h].
    cost_usd_per_hour: the cluster's cost of ownership per hour [USD/h].
    """

    rates: ReliabilityRates
    lost_hours_per_interruption: float
    cost_usd_per_hour: float


@dataclass(frozen=True)
class MediaPricing:
    """Prices one link over the instance's years; ``failure`` None: no failure term
    (``note`` says why, or what the term assumes)."""

    inst: Instance
    failure: FailurePricing | None
    note: str


def media_pricing(inst: Instance, design: DesignToPlace, parts: FabricParts) -> MediaPricing:
    """The failure term needs the reliability model (``objective.reliability_model =
    'model'``) and the design's lost hours per interruption and cost rate."""
    if inst.objective.reliability_model != "model":
        return MediaPricing(inst, None, "no failure cost: the instance prices failures as a "
                            "fixed overhead (objective.reliability_model = 'overhead')")
    missing = [name for name in ("lost_hours_per_interruption", "cost_usd_per_hour")
               if getattr(design, name) is None]
    if missing:
        return MediaPricing(inst, None, f"no failure cost: the design carries no "
                            f"{' or '.join(missing)}")
    rates = ModelGoodput(inst).rates(parts)
    hours, rate = design.lost_hours_per_interruption, design.cost_usd_per_hour
    return MediaPricing(inst, FailurePricing(rates, hours, rate), (
        f"failure cost: every link fails at its medium's catalog rate (failure_rate_"
        f"multipliers applied) over {inst.years} years; each failure costs a replacement "
        f"part (the failed transceiver, or the whole cable assembly) and, when it stops the "
        f"job, {hours:.3f} h of training (restart plus the work since the last checkpoint) "
        f"at the cluster's ${rate:,.0f}/h cost of ownership (TCO over the years). A node "
        f"link failure always stops the job; a switch-to-switch link failure stops it "
        f"{rates.fabric_interrupt_fraction:.0%} of the time (the fabric routes around the "
        f"rest) and restarts without a spare swap"))


def failure_cost_usd(m: Medium, tier: int, pricing: MediaPricing) -> float:
    """Expected cost of the failures of one link of ``m`` over the instance's years [USD]:
    ``λ·8760·years · (part + s·(L − r)·c)``, 0 without a failure pricing.

    part: the failed end's transceiver, ``price_per_end/lpm``, or a cable assembly (DAC,
    ACC, AEC, AOC) replaced whole, ``2·price_per_end/lpm``. Node links (``tier`` 1): the
    failure stops the job (s = 1, r = 0: the restart L includes the hot-spare swap).
    Switch-to-switch links: the fabric routes around it, and only the share
    s = fabric_interrupt_fraction of failures stops the job, restarting without a spare
    swap (r = replace_s) — the goodput model's failure classes."""
    f = pricing.failure
    if f is None:
        return 0.0
    failures = link_failure_rate(m.kind, f.rates) * HOURS_PER_YEAR * pricing.inst.years
    part = (1 if m.is_transceiver else 2) * m.price_usd_per_end / m.links_per_module
    share, saved_h = ((1.0, 0.0) if tier == 1
                      else (f.rates.fabric_interrupt_fraction, f.rates.replace_s / 3600.0))
    return failures * (part + share * (f.lost_hours_per_interruption - saved_h)
                       * f.cost_usd_per_hour)


def lifetime_cost_usd(m: Medium, tier: int, pricing: MediaPricing) -> float:
    """Capex, energy and failures over the instance's years of one link of tier ``tier``
    (1 = node-leaf) built with ``m`` [USD]."""
    inst = pricing.inst
    fac = inst.catalog.facility
    capex = 2 * m.price_usd_per_end / m.links_per_module + m.fiber_usd_per_link
    watts = 2 * m.power_w_per_end / m.links_per_module
    energy = watts / 1e3 * HOURS_PER_YEAR * inst.years * fac.electricity_usd_per_kwh * fac.pue
    return capex + energy + failure_cost_usd(m, tier, pricing)


def cheapest_medium(media: list[Medium], length_m: float, tier: int,
                    pricing: MediaPricing) -> Medium | None:
    """Cheapest medium (lifetime cost, then capex, then id) whose reach covers ``length_m``."""
    options = [m for m in media if m.reach_m >= length_m - 1e-9]
    if not options:
        return None
    return min(options, key=lambda m: (lifetime_cost_usd(m, tier, pricing),
                                       2 * m.price_usd_per_end / m.links_per_module, m.id))


def link_cost_units(media: list[Medium], length_m: float, tier: int,
                    pricing: MediaPricing) -> int | None:
    m = cheapest_medium(media, length_m, tier, pricing)
    return None if m is None else round(lifetime_cost_usd(m, tier, pricing) * COST_UNITS_PER_USD)


# ---------------------------------------------------------------------------------------
# Inputs


def site_halls(inst: Instance) -> list[tuple[str, Hall]]:
    """(building, hall) in site order; generated halls for buildings that list none."""
    out, problems = [], []
    for bi, b in enumerate(inst.site.buildings):
        halls = b.halls or default_halls(b.it_power_mw, inst.site.rack_power_kw)
        names = [h.name for h in halls]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            problems.append(f"site.buildings[{bi}].halls: duplicate hall names "
                            f"{', '.join(dupes)}")
        out += [(b.name, h) for h in halls]
    if problems:
        raise InvalidInstance(problems)
    return out


def nodes_per_rack(inst: Instance, parts: FabricParts, hall: Hall) -> int:
    """``min(max_nodes_per_rack, ⌊42 U / node U⌋, ⌊rack kW / node kW⌋)``; 0 when the hall
    cannot cool the system (liquid-cooled systems need a liquid hall). A rack-scale
    system (NVL72: a 48U node) is its own rack: one per position."""
    g = parts.gpu
    if g.liquid_cooled and hall.cooling != "liquid":
        return 0
    node_w = node_power_w(parts)
    by_height = 1 if g.node_rack_units >= RACK_UNITS else RACK_UNITS // g.node_rack_units
    return max(0, min(g.max_nodes_per_rack, by_height,
                      math.floor(hall.rack_power_kw * 1e3 / node_w + 1e-9)))


def node_power_w(parts: FabricParts) -> float:
    g = parts.gpu
    return (g.gpus_per_node * g.gpu_power_w + g.node_other_power_w
            + g.nics_per_node * parts.nic.power_w)


def hall_geometry(building: str, hall: Hall, index: int, inst: Instance, parts: FabricParts,
                  su_nodes: int, leaves: int, leaf_w: float, net_rows: int) -> HallGeo:
    """Block shape, block slots and network positions of one hall.

    Leaves ride in the block's middle compute rack when its height and power allow, else
    in ``⌈leaves·U/42⌉`` leaf racks in the block's middle. The middle ``net_rows`` rows hold
    network racks; every other row takes ``min(⌊P/width⌋, ⌊row kW / block kW⌋)`` blocks."""
    npr = nodes_per_rack(inst, parts, hall)
    sw = parts.switch
    if npr == 0:
        return HallGeo(building, hall, index, 0, 0, 0, 0, (), (), ())
    compute = math.ceil(su_nodes / npr)
    mid_nodes = min(npr, su_nodes - ((compute - 1) // 2) * npr)
    fits_inside = (mid_nodes * parts.gpu.node_rack_units + leaves * sw.rack_units <= RACK_UNITS
                   and mid_nodes * node_power_w(parts) + leaves * leaf_w
                   <= hall.rack_power_kw * 1e3)
    leaf_racks = 0 if fits_inside else math.ceil(leaves * sw.rack_units / RACK_UNITS)
    width = compute + leaf_racks
    block_w = su_nodes * node_power_w(parts) + leaves * leaf_w
    net_rows = min(net_rows, hall.rows)
    first = (hall.rows - net_rows) // 2
    rows_net = tuple(range(first, first + net_rows))
    per_row = min(hall.positions_per_row // width, math.floor(hall.row_cap_kw * 1e3 / block_w))
    slots = tuple((r, i * width) for r in range(hall.rows) if r not in rows_net
                  for i in range(max(0, per_row)))
    center = (hall.positions_per_row - 1) / 2
    net = sorted((abs(p - center), p, r) for r in rows_net
                  for p in range(hall.positions_per_row))
    geo = HallGeo(building, hall, index, npr, width, compute, leaf_racks, rows_net, slots, ())
    return HallGeo(building, hall, index, npr, width, compute, leaf_racks, rows_net, slots,
                   tuple(geo.position(r, p) for _, p, r in net))


def routing(geo: HallGeo, inst: Instance) -> Routing:
    h = geo.hall
    return Routing(h.drop_m, h.slack_m, h.in_rack_m, inst.site.cable_lengths.between_buildings_m)


def max_length(a: list[Position], b: list[Position], r: Routing) -> float:
    """Largest routed length between any position of ``a`` and any of ``b`` (bounding
    boxes: Manhattan distance is maximised at box corners)."""
    if not a or not b:
        return 0.0
    if a[0].building != b[0].building:
        return routed_length_m(a[0], b[0], r)
    xs_a, ys_a = [p.x_m for p in a], [p.y_m for p in a]
    xs_b, ys_b = [p.x_m for p in b], [p.y_m for p in b]
    dx = max(max(xs_a) - min(xs_b), max(xs_b) - min(xs_a))
    dy = max(max(ys_a) - min(ys_b), max(ys_b) - min(ys_a))
    return max(dx, 0) + max(dy, 0) + 2 * r.drop_m + r.slack_m


def placement_inputs(inst: Instance, design: DesignToPlace) -> Inputs:
    """Fabric, halls, blocks and switch groups of ``design`` on the instance's site."""
    parts = resolve_fabric_parts(inst.catalog, design.gpu, design.switch)
    spec = FabricSpec(nodes=design.nodes, ports_per_node=parts.gpu.nics_per_node,
                      radix=parts.radix, tiers=design.tiers, pods=design.pods,
                      oversubscription=design.oversubscription,
                      rail_optimized=design.rail_optimized)
    fabric = design_fabric(spec)
    half = parts.radix // 2
    ports = parts.gpu.nics_per_node
    if fabric.tiers == 1:
        su_nodes, leaves = design.nodes, 1
    elif design.rail_optimized:
        su_nodes, leaves = half, ports
    else:
        su_nodes, leaves = half // ports, 1
    media = sorted((m for m in inst.catalog.medium.values() if m.gbps == parts.gbps),
                   key=lambda m: m.id)
    max_end_w = max(m.power_w_per_end / m.links_per_module for m in media)
    leaf_w = parts.switch.power_w + parts.radix * max_end_w
    blocks = [min(su_nodes, design.nodes - i) for i in range(0, design.nodes, su_nodes)]
    per_group = max(1, half // leaves) if fabric.tiers >= 3 else len(blocks)
    group_blocks = [min(per_group, len(blocks) - i) for i in range(0, len(blocks), per_group)]
    spines_total = fabric.switches_per_tier[1] if fabric.tiers >= 2 else 0
    group_spines = group_spine_counts(spines_total, [b * leaves for b in group_blocks], half)
    switches_per_rack = max(1, min(RACK_UNITS // parts.switch.rack_units,
                                   math.floor(min_rack_kw(inst) * 1e3 / leaf_w)))
    net_racks = (sum(-(-s // switches_per_rack) for s in group_spines)
                 + sum(-(-s // switches_per_rack) for s in fabric.switches_per_tier[2:]))
    pairs = site_halls(inst)
    total_kw = sum(h.hall_cap_kw for _, h in pairs)
    halls = []
    for i, (b, h) in enumerate(pairs):
        share = 1.5 * net_racks * h.hall_cap_kw / total_kw
        rows = max(1, math.ceil(share / h.positions_per_row)) if net_racks else 0
        halls.append(hall_geometry(b, h, i, inst, parts, su_nodes, leaves, leaf_w, rows))
    out = Inputs(inst, design, parts, fabric, halls, media, su_nodes, leaves, blocks,
                 group_blocks, group_spines, switches_per_rack, node_power_w(parts), leaf_w,
                 inst.site.cable_lengths.between_buildings_m, media_pricing(inst, design, parts))
    precheck(out)
    out.problem = zone_problem(out)
    return out


def min_rack_kw(inst: Instance) -> float:
    return min(h.rack_power_kw for _, h in site_halls(inst))


def _split(total: int, weights: list[int]) -> list[int]:
    """``total`` split in proportion to ``weights`` by largest remainder (sums exactly)."""
    w = sum(weights)
    if not w:
        return [0] * len(weights)
    base = [total * x // w for x in weights]
    rest = sorted(range(len(weights)), key=lambda i: (-(total * weights[i] % w), i))
    for i in rest[:total - sum(base)]:
        base[i] += 1
    return base


def group_spine_counts(total: int, group_leaves: list[int], half: int) -> list[int]:
    """Spines of each tier-2 group: the fewest divisor of ``h`` at least the group's
    leaves (models.fabric's balanced plane wiring, one plane per group of single leaves);
    split in proportion to the leaves when that does not reproduce the fabric's count
    (pods, multi-plane groups)."""
    exact = [next(d for d in range(1, half + 1) if half % d == 0 and d >= n)
             if n <= half else 0 for n in group_leaves]
    return exact if sum(exact) == total else _split(total, group_leaves)


def block_power_w(inp: Inputs) -> float:
    return inp.su_nodes * inp.node_power_w + inp.leaves_per_block * inp.leaf_power_w


def precheck(inp: Inputs) -> None:
    """Infeasible before any search: say which hall/row constraint fails and by how much."""
    usable = [g for g in inp.halls if g.nodes_per_rack]
    if not usable:
        g = inp.parts.gpu
        reasons = [f"{h.key}: {h.hall.cooling}-cooled at {h.hall.rack_power_kw:g} kW per rack "
                   f"(a {g.id} node draws {inp.node_power_w / 1e3:.1f} kW"
                   f"{', needs liquid cooling' if g.liquid_cooled else ''})" for h in inp.halls]
        raise Infeasible("no hall can take a compute rack: " + "; ".join(reasons))
    for h in usable:
        if h.width > h.hall.positions_per_row:
            raise Infeasible(
                f"{h.key}: a scalable unit needs {h.width} consecutive positions in one row, "
                f"rows have {h.hall.positions_per_row} (short by "
                f"{h.width - h.hall.positions_per_row})")
    bw = block_power_w(inp)
    if all(not h.block_slots for h in usable):
        h = usable[0]
        raise Infeasible(f"{h.key}: a row's busway takes {h.hall.row_cap_kw:g} kW, one "
                         f"scalable unit draws {bw / 1e3:.1f} kW (short by "
                         f"{bw / 1e3 - h.hall.row_cap_kw:.1f} kW)")
    slots = sum(len(h.block_slots) for h in inp.halls)
    if slots < len(inp.blocks):
        raise Infeasible(
            f"not enough rack positions: {len(inp.blocks)} scalable units need block slots, "
            f"the halls' rows offer {slots} (short by {len(inp.blocks) - slots}; "
            + ", ".join(f"{h.key}: {len(h.block_slots)}" for h in inp.halls) + ")")
    need_kw = len(inp.blocks) * bw / 1e3
    have_kw = sum(min(h.hall.hall_cap_kw, len(h.block_slots) * bw / 1e3) for h in inp.halls)
    if need_kw > have_kw:
        raise Infeasible(f"hall power: the scalable units draw {need_kw:,.0f} kW, the halls "
                         f"can feed {have_kw:,.0f} kW of them (short by "
                         f"{need_kw - have_kw:,.0f} kW)")


def zone_problem(inp: Inputs) -> PlacementProblem:
    """The CP-SAT zone model's data (models.placement.model)."""
    inst, media = inp.inst, inp.media
    zones, remote = [], []
    leaf_pos = {h.index: [p for r, s in h.block_slots for p in h.leaf_positions(r, s)]
                for h in inp.halls}
    for h in inp.halls:
        r = routing(h, inst)
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
    spine_w = inp.parts.switch.power_w + inp.parts.radix * max(
        m.power_w_per_end / m.links_per_module for m in media)
    groups = tuple(Group(b, inp.leaves_per_block * (inp.parts.radix // 2) if inp.fabric.tiers >= 2
                         else 0, s, -(-s // inp.switches_per_rack), round(s * spine_w))
                   for b, s in zip(inp.group_blocks, inp.group_spines, strict=True))
    upper = []
    for t in range(2, inp.fabric.tiers):
        lc = inp.fabric.link_classes[t]
        cost = tuple(tuple(_cost(inp, max_length(list(a.network_positions),
                                                 list(b.network_positions), routing(a, inst)),
                                 lc.name, lc.tier, a.key) if a.network_positions
                           and b.network_positions else 0
                           for b in inp.halls) for a in inp.halls)
        upper.append(UpperTier(lc.name, inp.fabric.switches_per_tier[t], inp.switches_per_rack,
                               round(spine_w), lc.links, cost))
    caps = {b.name: int(b.it_power_mw * 1e6) for b in inst.site.buildings}
    return PlacementProblem(tuple(zones), groups, round(block_power_w(inp)), tuple(remote),
                            tuple(upper), caps)


def _cost(inp: Inputs, length: float, link_class: str, tier: int, where: str) -> int:
    cost = link_cost_units(inp.media, length, tier, inp.pricing)
    if cost is None:
        longest = max(m.reach_m for m in inp.media)
        raise Infeasible(f"{where}: a {link_class} link needs {length:,.0f} m, the longest "
                         f"medium reaches {longest:,.0f} m (short by {length - longest:,.0f} m)")
    return cost


# ---------------------------------------------------------------------------------------
# Concrete layout


@dataclass(frozen=True)
class Rack:
    id: str
    role: str
    """compute | leaf | spine | core | super | ..."""
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


def concrete_layout(inp: Inputs, sol: PlacementSolution) -> Layout:
    """Positions of every rack from the zone solution and the links between them."""
    halls = inp.halls
    ring_slots: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for h in halls:
        r = routing(h, inp.inst)
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
    ports, half = gpu.nics_per_node, inp.parts.radix // 2
    for g, nblocks in enumerate(inp.group_blocks):
        slots = [(h, s) for h in range(len(halls)) for s in taken[g, h]]
        if len(slots) != nblocks:
            raise NoSolution(f"zone solution places {len(slots)} of group {g}'s "
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
                up = inp.leaves_per_block * half
                targets = spine_racks[g]
                for lid, leaves in info["leaves"]:
                    per = _split(up * leaves // inp.leaves_per_block,
                                 [t.switches for t in targets])
                    bundles += [Bundle("leaf-spine", LEAF_SPINE_TIER, lid, t.id, c)
                                for t, c in zip(targets, per, strict=True) if c]
        first_block += nblocks
    lower = [r for g in sorted(spine_racks) for r in spine_racks[g]]
    for t in range(2, inp.fabric.tiers):
        lc = inp.fabric.link_classes[t]
        role = lc.name.split("-")[1]
        upper: list[Rack] = []
        for h in range(len(halls)):
            upper += _switch_racks(inp, role, f"h{h}", sol.upper[t - 2][h], net_free[h], racks)
        per_lower = _split(lc.links, [r.switches for r in lower])
        for lo, n in zip(lower, per_lower, strict=True):
            per = _split(n, [u.switches for u in upper])
            bundles += [Bundle(lc.name, lc.tier, lo.id, u.id, c)
                        for u, c in zip(upper, per, strict=True) if c]
        lower = upper
    return Layout(racks, bundles, blocks_info)


def _switch_racks(inp: Inputs, role: str, tag: str, switches: int, free: list[Position],
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


def _block_racks(inp: Inputs, geo: HallGeo, block: int, nodes: int, row: int, start: int,
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
    per = _split(inp.leaves_per_block, [1] * len(leaf_off))
    for i, off in enumerate(sorted(leaf_off)):
        rid = f"su{block}-l{off}"
        racks.append(Rack(rid, "leaf", geo.position(row, start + off),
                          f"{per[i]} x {inp.parts.switch.id}", per[i] * inp.leaf_power_w,
                          switches=per[i]))
        leaves.append((rid, per[i]))
    return {"block": block, "compute": compute, "leaves": leaves}


# ---------------------------------------------------------------------------------------
# Cables, media and the summary


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


def cable_runs(inp: Inputs, layout: Layout) -> list[CableRun]:
    """Routed length of every bundle and the cheapest medium reaching it."""
    where = {r.id: r.position for r in layout.racks}
    geo = {h.key: h for h in inp.halls}
    runs = []
    for b in layout.bundles:
        pa, pb = where[b.a], where[b.b]
        length = routed_length_m(pa, pb, routing(geo[f"{pa.building}/{pa.hall}"], inp.inst))
        m = cheapest_medium(inp.media, length, b.tier, inp.pricing)
        if m is None:
            raise Infeasible(f"{pa.building}/{pa.hall} row {pa.row}: a {b.link_class} link of "
                             f"{length:,.1f} m is beyond every medium's reach")
        runs.append(CableRun(b.link_class, b.tier, b.a, b.b, b.count, round(length, 2), m.id))
    return runs


def cables_table(runs: list[CableRun]) -> list[dict[str, Any]]:
    """cables.csv rows: (link class, medium, length rounded up to 0.1 m) -> count."""
    agg: Counter[tuple[int, str, str, float]] = Counter()
    for r in runs:
        agg[r.tier, r.link_class, r.medium, math.ceil(r.length_m * 10 - 1e-9) / 10] += r.count
    return [{"link_class": c, "medium": m, "length_m": length, "count": n}
            for (_, c, m, length), n in sorted(agg.items())]


def media_lines(inp: Inputs, runs: list[CableRun]):
    """models.fabric.MediaLine per (link class, medium) over the routed runs."""
    by: dict[tuple[int, str, str], list[CableRun]] = defaultdict(list)
    for r in runs:
        by[r.tier, r.link_class, r.medium].append(r)
    twin = inp.design.nic_attachment == "twin"
    lines = []
    for (tier, lc, mid), rs in sorted(by.items()):
        links = sum(r.count for r in rs)
        longest = max(r.length_m for r in rs)
        lines.append(media_line(LinkClass(lc, tier, links), inp.inst.catalog.medium[mid],
                                longest, twin))
    return lines


@dataclass
class PlacementResult:
    status: str
    summary: dict[str, Any]
    racks: list[Rack]
    runs: list[CableRun]
    inputs: Inputs
    solution: PlacementSolution


def placed_bom_lines(result: PlacementResult) -> list[BomLine]:
    """BOM lines of the media the placement's routed lengths call for."""
    inst = result.inputs.inst
    return [line for ml in media_lines(result.inputs, result.runs)
            for line in bom_media_lines(ml, inst.catalog.medium[ml.medium_id].fiber_usd_per_link)]


def place(inst: Instance, design: DesignToPlace, time_limit_s: float = 30.0,
          workers: int = 2, seed: int = 0) -> PlacementResult:
    """Place ``design`` on the instance's floor plan. Raises Infeasible (exit 4) naming the
    failing hall/row constraint, NoSolution (exit 5) when CP-SAT finds nothing in time."""
    start = time.perf_counter()
    inp = placement_inputs(inst, design)
    sol = solve_model(inp.problem, time_limit_s, workers, seed)
    if sol.status == "infeasible":
        raise Infeasible(infeasibility_reason(inp))
    if sol.status == "unknown":
        raise NoSolution(f"no placement found within {time_limit_s:g} s")
    layout = concrete_layout(inp, sol)
    runs = cable_runs(inp, layout)
    summary = placement_summary(inp, sol, layout, runs, time.perf_counter() - start)
    return PlacementResult(sol.status, summary, layout.racks, runs, inp, sol)


def infeasibility_reason(inp: Inputs) -> str:
    """Why CP-SAT found no placement after the prechecks passed: network positions or the
    hall/building power caps (with the shortfall)."""
    p = inp.problem
    net_need = sum(g.spine_racks for g in p.groups) + sum(
        -(-t.switches // t.per_rack) for t in p.upper)
    net_have = sum(z.network_positions for z in p.zones)
    if net_need > net_have:
        return (f"network rows: {net_need} switch racks need positions, the halls' network "
                f"rows offer {net_have} (short by {net_need - net_have})")
    need_w = (len(inp.blocks) * p.block_power_w + sum(g.spine_power_w for g in p.groups)
              + sum(t.switches * t.switch_power_w for t in p.upper))
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


def placement_summary(inp: Inputs, sol: PlacementSolution, layout: Layout,
                      runs: list[CableRun], runtime_s: float) -> dict[str, Any]:
    """The ``clusterplan place --json`` document."""
    lines = media_lines(inp, runs)
    roles = Counter(r.role for r in layout.racks)
    halls_used = sorted({f"{r.position.building}/{r.position.hall}" for r in layout.racks})
    medium = inp.inst.catalog.medium
    lifetime = sum(r.count * lifetime_cost_usd(medium[r.medium], r.tier, inp.pricing)
                   for r in runs)
    failures = sum(r.count * failure_cost_usd(medium[r.medium], r.tier, inp.pricing)
                   for r in runs)
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
                           "spine groups enumerated, the rest relaxed; models.placement.bound)."),
        "runtime_s": round(runtime_s, 3),
        "solver": {"backend": "cp-sat", "runtime_s": round(sol.runtime_s, 3),
                   "zones": len(inp.problem.zones), "groups": len(inp.problem.groups)},
        "design": {"gpu": inp.design.gpu, "switch": inp.design.switch,
                   "nodes": inp.design.nodes, "rail_optimized": inp.design.rail_optimized,
                   "tiers": inp.fabric.tiers,
                   "switches_per_tier": list(inp.fabric.switches_per_tier),
                   "links_per_tier": list(inp.fabric.links_per_tier)},
        "bom_media": [{"link_class": x.link_class, "medium": x.medium_id, "kind": x.kind,
                       "links": x.links, "longest_m": x.length_m,
                       "transceivers": x.transceivers, "cables": x.cables,
                       "capex_usd": round(x.capex_usd, 2), "power_w": round(x.power_w, 2)}
                      for x in lines],
        "halls": [{"hall": h.key, "rows": h.hall.rows,
                   "positions_per_row": h.hall.positions_per_row,
                   "nodes_per_rack": h.nodes_per_rack, "unit_width": h.width,
                   "unit_slots": len(h.block_slots), "network_rows": list(h.network_rows),
                   "power_cap_kw": h.hall.hall_cap_kw,
                   "power_kw": round(sum(r.power_w for r in layout.racks
                                         if r.position.hall == h.hall.name
                                         and r.position.building == h.building) / 1e3, 1)}
                  for h in inp.halls],
        "notes": inp.notes,
    }


# ---------------------------------------------------------------------------------------
# Files


def placement_csv(racks: list[Rack]) -> str:
    """placement.csv: rack, building, hall, row, position, role, contents, power_kw."""
    lines = ["rack,building,hall,row,position,role,contents,power_kw"]
    for r in sorted(racks, key=lambda r: (r.position.building, r.position.hall,
                                          r.position.row, r.position.slot)):
        p = r.position
        lines.append(f"{r.id},{p.building},{p.hall},{p.row},{p.slot},{r.role},"
                     f"\"{r.contents}\",{r.power_w / 1e3:.3f}")
    return "\n".join(lines) + "\n"


def cables_csv(runs: list[CableRun]) -> str:
    """cables.csv: link_class, medium, length_m (rounded up to 0.1 m), count."""
    lines = ["link_class,medium,length_m,count"]
    lines += [f"{c['link_class']},{c['medium']},{c['length_m']:.1f},{c['count']}"
              for c in cables_table(runs)]
    return "\n".join(lines) + "\n"


ROLE_COLOURS = {"leaf": "#1f77b4", "spine": "#2ca02c", "core": "#9467bd", "super": "#8c564b",
                "hyper": "#e377c2", "apex": "#7f7f7f"}


def floorplan_png(result: PlacementResult, path) -> None:
    """Halls side by side, rows of positions; compute racks shaded by power (heat map),
    switch racks coloured by role."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    halls = result.inputs.halls
    cols = min(len(halls), 3)
    rows = math.ceil(len(halls) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 5 * rows), squeeze=False)
    cmap = plt.get_cmap("YlOrRd")
    heat = [r.power_w / 1e3 for r in result.racks if r.role == "compute"] or [1.0]
    vmin, vmax = min(heat), max(heat)
    by_hall: dict[str, list[Rack]] = defaultdict(list)
    for r in result.racks:
        by_hall[f"{r.position.building}/{r.position.hall}"].append(r)
    for ax, h in zip(axes.flat, halls, strict=False):
        ax.set_title(f"{h.key} ({h.hall.cooling}, {h.hall.hall_cap_kw / 1e3:,.1f} MW)",
                     fontsize=9)
        for row in range(h.hall.rows):
            for slot in range(h.hall.positions_per_row):
                ax.add_patch(Rectangle((slot, row), 0.9, 0.8, fc="#f2f2f2", ec="none"))
        for r in by_hall[h.key]:
            p = r.position
            colour = (cmap(0.3 + 0.7 * (r.power_w / 1e3 - vmin) / max(vmax - vmin, 1e-9))
                      if r.role == "compute"
                      else ROLE_COLOURS.get(r.role, "black"))
            ax.add_patch(Rectangle((p.slot, p.row), 0.9, 0.8, fc=colour, ec="none"))
        ax.set_xlim(-0.5, h.hall.positions_per_row + 0.5)
        ax.set_ylim(h.hall.rows + 0.5, -0.5)
        ax.set_xlabel("position")
        ax.set_ylabel("row")
        ax.set_aspect(h.hall.row_pitch_m / h.hall.rack_pitch_m / 2)
    for ax in list(axes.flat)[len(halls):]:
        ax.axis("off")
    legend = [Patch(color=cmap(0.9), label=f"compute (heat: kW, max {vmax:.0f})")]
    roles = sorted({r.role for r in result.racks} - {"compute"})
    legend += [Patch(color=ROLE_COLOURS.get(x, "black"), label=x) for x in roles]
    fig.legend(handles=legend, loc="lower center", ncol=len(legend), fontsize=9)
    s = result.summary
    fig.suptitle(f"{result.inputs.inst.name}: {s['racks_total']:,} racks, optics capex "
                 f"${s['optics_capex_usd'] / 1e6:,.1f}M, longest link {s['max_link_m']:,.0f} m")
    fig.tight_layout(rect=(0, 0.04, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_placement_outputs(result: PlacementResult, out_dir) -> list:
    """placement.csv, cables.csv (atomically) and floorplan.png into ``out_dir``."""
    import os
    import tempfile
    from pathlib import Path

    from solver.outputs import write_atomically

    out_dir = Path(out_dir)
    written = write_atomically(out_dir, {"placement.csv": placement_csv(result.racks),
                                         "cables.csv": cables_csv(result.runs)})
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".tmp-", suffix=".png")
    os.close(fd)
    floorplan_png(result, tmp)
    os.replace(tmp, out_dir / "floorplan.png")
    return [*written, out_dir / "floorplan.png"]
