"""Independent re-check of a placement: positions, power, cooling, counts and reach.

It recomputes everything from the placed racks and cable runs with its own arithmetic
(not the placement code's): every position inside its hall and used once; per rack, row
(busway), hall and building power from the rack's nodes, switches and the link ends that
terminate in it; liquid-cooled systems only in liquid halls; every node, switch and link
of the fabric placed; the routed length of every run within its medium's reach; the
switch racks of a tier in a hall spread over at least two rows (power feeds). The halls
are those the design's cooling equips (``Inputs.halls_for``: its rack power density).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from models.design.inputs import Inputs


def check_placement(inputs: Inputs, result) -> list[str]:
    """Problems found (empty = the placement is valid). ``result``: a PlacementResult."""
    inp = result.inputs
    problems: list[str] = []
    halls = {(b, h.name): h for b, h in inputs.halls_for(inp.design.cooling)}
    seen: dict[tuple, str] = {}
    pos = {}
    for r in result.racks:
        p = r.position
        key = (p.building, p.hall, p.row, p.slot)
        hall = halls.get((p.building, p.hall))
        if hall is None:
            problems.append(f"{r.id}: unknown hall {p.building}/{p.hall}")
            continue
        if not (0 <= p.row < hall.rows and 0 <= p.slot < hall.positions_per_row):
            problems.append(f"{r.id}: position row {p.row} slot {p.slot} outside {p.hall}")
        if key in seen:
            problems.append(f"{r.id}: position {key} already holds {seen[key]}")
        seen[key] = r.id
        pos[r.id] = (p, hall)
    gpu, sw = inp.parts.gpu, inp.parts.switch
    node_w = (gpu.gpus_per_node * gpu.gpu_power_w + gpu.node_other_power_w
              + gpu.nics_per_node * inp.parts.nic.power_w)
    power = {r.id: r.nodes * node_w + r.switches * sw.power_w for r in result.racks}
    problems += _support(inp.design, result.racks, power)
    links_by_class: Counter[str] = Counter()
    for run in result.runs:
        m = inputs.medium[run.medium]
        for end in (run.a, run.b):
            power[end] += run.count * m.power_w_per_end / m.links_per_module
        links_by_class[run.link_class] += run.count
        (pa, ha), (pb, _) = pos[run.a], pos[run.b]
        length = _length(pa, pb, ha, inputs.site.cable_lengths.between_buildings_m)
        if m.reach_m + 1e-6 < length:
            problems.append(f"{run.link_class} {run.a}->{run.b}: {run.medium} reaches "
                            f"{m.reach_m:g} m, the route is {length:.2f} m")
        if m.gbps != inp.parts.gbps:
            problems.append(f"{run.link_class}: {run.medium} runs at {m.gbps}G, the fabric "
                            f"at {inp.parts.gbps}G")
        if sw.family not in m.switch_families:
            problems.append(f"{run.link_class}: {run.medium} is not a {sw.family} medium")
    rows: dict[tuple, float] = defaultdict(float)
    hall_w: dict[tuple, float] = defaultdict(float)
    bldg_w: dict[str, float] = defaultdict(float)
    for r in result.racks:
        p, hall = pos[r.id]
        w = power[r.id]
        if w > hall.rack_power_kw * 1e3 + 1e-6:
            problems.append(f"{r.id}: draws {w / 1e3:.2f} kW, positions of {p.hall} take "
                            f"{hall.rack_power_kw:g} kW")
        if r.nodes and gpu.liquid_cooled and hall.cooling != "liquid":
            problems.append(f"{r.id}: liquid-cooled {gpu.id} in air-cooled {p.hall}")
        rows[p.building, p.hall, p.row] += w
        hall_w[p.building, p.hall] += w
        bldg_w[p.building] += w
    for (b, h, row), w in sorted(rows.items()):
        cap = halls[b, h].row_cap_kw * 1e3
        if w > cap + 1e-6:
            problems.append(f"{b}/{h} row {row}: {w / 1e3:.1f} kW on a {cap / 1e3:g} kW busway")
    for (b, h), w in sorted(hall_w.items()):
        cap = halls[b, h].hall_cap_kw * 1e3
        if w > cap + 1e-6:
            problems.append(f"{b}/{h}: {w / 1e3:.1f} kW in a {cap / 1e3:g} kW hall")
    for b in inputs.site.buildings:
        if bldg_w[b.name] > b.it_power_mw * 1e6 + 1e-6:
            problems.append(f"{b.name}: {bldg_w[b.name] / 1e6:.2f} MW over {b.it_power_mw:g} MW")
    problems += _failure_domains(result.racks, {(g.building, g.hall.name): len(g.network_rows)
                                                for g in inp.halls})
    fabric = inp.fabric
    nodes = sum(r.nodes for r in result.racks)
    if nodes != inp.design.nodes:
        problems.append(f"{nodes} nodes placed, the design has {inp.design.nodes}")
    switches = sum(r.switches for r in result.racks)
    if switches != sum(fabric.switches_per_tier):
        problems.append(f"{switches} switches placed, the fabric has "
                        f"{sum(fabric.switches_per_tier)}")
    for lc in fabric.link_classes:
        if links_by_class[lc.name] != lc.links:
            problems.append(f"{lc.name}: {links_by_class[lc.name]} links cabled, the fabric has "
                            f"{lc.links}")
    if inp.design.pods_in_buildings:
        problems += _pods_in_buildings(inputs, result, pos)
    designed = inp.design.switches_per_tier, inp.design.links_per_tier
    placed = fabric.switches_per_tier, fabric.links_per_tier
    if designed[0] is not None and tuple(designed[0]) != tuple(placed[0]):
        problems.append(f"placement built switches per tier {list(placed[0])}, the design has "
                        f"{list(designed[0])}")
    if designed[1] is not None and tuple(designed[1]) != tuple(placed[1]):
        problems.append(f"placement built links per tier {list(placed[1])}, the design has "
                        f"{list(designed[1])}")
    return problems


def _support(design, racks, power: dict[str, float]) -> list[str]:
    """The design's support racks all placed, each drawing an equal share of the support
    design's power (set in ``power``: held to its position's rack power and counted in
    its row, hall and building; the share carries the per-rack management switches and
    the front-end link ends, as the design stage counts them)."""
    placed = [r for r in racks if r.role == "support"]
    for r in placed:
        power[r.id] = design.support_power_w / design.support_racks
    if len(placed) != design.support_racks:
        return [f"{len(placed)} support racks placed, the design has {design.support_racks}"]
    return []


def _pods_in_buildings(inputs: Inputs, result, pos: dict) -> list[str]:
    """Pods aligned with buildings (or halls): building ``i`` (hall ``i`` with one pod per
    hall, site order) holds pod ``i``'s nodes, ``⌈n/P⌉`` each and the rest in the last
    pod, and only the top link class (the one joining the pods) crosses sites."""
    fabric = result.inputs.fabric
    in_halls = result.inputs.design.pods_in_halls

    def site(p) -> str:
        return f"{p.building}/{p.hall}" if in_halls else p.building

    names = ([f"{b}/{h.name}" for b, h in inputs.halls_for(result.inputs.design.cooling)]
             if in_halls else [b.name for b in inputs.site.buildings])
    pods, total = len(names), result.inputs.design.nodes
    size = -(-total // pods)
    want = {b: max(0, min(size, total - i * size)) for i, b in enumerate(names)}
    have: Counter[str] = Counter()
    for r in result.racks:
        have[site(r.position)] += r.nodes
    out = [f"{b}: {have[b]} nodes placed, its pod has {want[b]}" for b in names
           if have[b] != want[b]]
    top = fabric.link_classes[-1].name
    crossing: Counter[str] = Counter()
    for run in result.runs:
        if run.link_class != top and site(pos[run.a][0]) != site(pos[run.b][0]):
            crossing[run.link_class] += run.count
    kind = "halls" if in_halls else "buildings"
    out += [f"{lc}: {n} links cross {kind}; only {top} links may join the pods"
            for lc, n in sorted(crossing.items())]
    if fabric.mesh:
        out += _mesh(result, {rid: site(p) for rid, (p, _) in pos.items()}, names,
                     fabric.link_classes[-1])
    return out


def _mesh(result, site: dict[str, str], names: list[str], top) -> list[str]:
    """A mesh joining the pods: every link joins switch racks of two different pod sites,
    and each pair of sites has the same share, ``links / (P(P−1)/2)``."""
    pairs: Counter[tuple[str, str]] = Counter()
    out = []
    switches = {r.id: r.switches for r in result.racks}
    for run in result.runs:
        if run.link_class != top.name:
            continue
        a, b = site[run.a], site[run.b]
        if a == b or not (switches[run.a] and switches[run.b]):
            out.append(f"{top.name} {run.a}->{run.b}: a mesh link must join the pod-top "
                       f"switches of two pods")
        pairs[tuple(sorted((a, b)))] += run.count
    want = top.links * 2 // (len(names) * (len(names) - 1))
    out += [f"{top.name}: {pairs[a, b]} links between {a} and {b}, the mesh gives each pair "
            f"of pods {want}" for i, a in enumerate(sorted(names))
            for b in sorted(names)[i + 1:] if pairs[a, b] != want]
    return out


def media_changes(designed: tuple[tuple[str, str], ...] | None, runs) -> list[dict]:
    """Link classes whose placed media differ from the design stage's medium: placement
    picks each run's medium by its routed length, so a class may come out in other media
    (their cost, power and failures enter the placed BOM, limits and goodput). One row a
    changed class: link_class, designed medium, placed {medium: links}. Empty when the
    designed media are not known."""
    placed: dict[str, Counter[str]] = defaultdict(Counter)
    for run in runs:
        placed[run.link_class][run.medium] += run.count
    return [{"link_class": lc, "designed": medium, "placed": dict(sorted(placed[lc].items()))}
            for lc, medium in designed or () if set(placed[lc]) != {medium}]


def _failure_domains(racks, network_rows: dict[tuple[str, str], int]) -> list[str]:
    """Switch racks of one tier in a hall must not share one row (one busway feed) where
    the hall has more than one network row: a feed failure would take the whole tier of
    that hall down."""
    rows: dict[tuple, set[int]] = defaultdict(set)
    count: Counter[tuple] = Counter()
    for r in racks:
        if r.switches and r.role not in ("compute", "leaf"):
            key = (r.position.building, r.position.hall, r.role)
            rows[key].add(r.position.row)
            count[key] += 1
    return [f"{b}/{h}: all {count[b, h, role]} {role} racks on one row (one power feed)"
            for (b, h, role), used in sorted(rows.items())
            if count[b, h, role] > 1 and len(used) < 2 and network_rows[b, h] > 1]


def _length(a, b, hall, between_m: float) -> float:
    """Routed length: in-rack, Manhattan in trays plus drops and slack, or between
    buildings (solver.schema.site module doc)."""
    if (a.building, a.hall, a.row, a.slot) == (b.building, b.hall, b.row, b.slot):
        return hall.in_rack_m
    ends = 2 * hall.drop_m + hall.slack_m
    if a.building != b.building:
        return between_m + ends
    return abs(a.x_m - b.x_m) + abs(a.y_m - b.y_m) + ends
