"""CP-SAT zone model of rack placement: blocks, switch groups and upper tiers into halls.

Structure (what makes 100,000 GPUs tractable):

* A **block** is one scalable unit (its compute racks and leaf switches, contiguous in one
  row, leaves in the middle). Blocks of a **group** (the leaves one tier-2 switch group
  joins) are identical, so the model counts blocks instead of naming them.
* Zones are halls. Each hall's block slots are split into **rings** by the leaf-spine
  medium cost of a slot when the group's spine racks stand in that hall's network rows
  (ring cost = cost of the cheapest medium reaching the slot's largest routed length to
  any network position, so every ring assignment is physically reachable).
* Group ``g``'s spine racks (its **hub**) stand in one hall. A block of ``g`` in the hub's
  hall pays its ring's cost per link; a block in hall ``i`` with the hub in hall ``j ≠ i``
  pays ``remote[i][j]`` (largest routed length between the halls).
* Upper tier ``t ≥ 3`` (core, super, ...): ``sw[t][h]`` switches in hall ``h``. The links
  arriving at tier ``t`` are spread over its switches in proportion, so links between a
  lower-tier switch in hall ``i`` and tier-``t`` switches in hall ``j`` number
  ``links_t · D_{t-1}[i] · sw_t[j] / (S_{t-1} · S_t)`` (``D_2`` = spines by hub hall).

* **Pods aligned with buildings**: a group of pod ``p`` has its hub and blocks in building
  ``p`` only, and a tier inside the pods holds ``S_t/P`` switches in each building. Its
  links stay inside each pod, so the link cost of a zone pair is ``P·cost`` within one
  building and 0 across (the proportional count above, taken per pod); only the tier
  joining the pods crosses buildings. The hub-enumeration bound is not used then.

Identical groups are aggregated into types (exact: no constraint is per group, so any
split of a type's totals over its groups is a placement, :func:`disaggregate`).
Variables per type ``τ``: ``hubs[τ,h] ≥ 0`` (groups with their hub in hall ``h``),
``loc[τ,h,k]`` (their blocks in ring ``k`` of hall ``h``), ``rem[τ,i,j]`` (blocks in hall
``i`` of groups hubbed in ``j``); per upper tier ``sw[t,h]``, ``racks[t,h]``; products
``z[τ,i,j] = hubs[τ,i]·sw[3,j]`` with the valid rows ``Σ_i z = count_τ·sw[3,j]`` and
``Σ_j z = S_3·hubs[τ,i]``, and ``p[t,i,j] = sw[t-1,i]·sw[t,j]`` above tier 3.

Constraints: ``Σ_h hubs[τ,h] = count_τ``; ``Σ_k loc[τ,h,k] + Σ_i rem[τ,i,h] =
blocks_τ·hubs[τ,h]``; ring slots
``Σ_g loc[g,h,k] ≤ slots[h,k]``; hall slots ``Σ loc + Σ rem ≤ Σ_k slots[h,k]``; network
positions ``Σ_g hub·spine_racks_g + Σ_t racks[t,h] + sup[h] ≤ net[h]`` with
``per_rack_t · racks[t,h] ≥ sw[t,h]`` and ``Σ_h sup[h] = S`` the support racks (no links
in the model: their front-end cabling is the design stage's); hall and building power
[W], each support rack drawing ``w_sup`` (every block full,
less ``short_w_τ·hubs[τ,h]`` for a group bound to the hall or building: its blocks stand
with its hub there, so its partly filled blocks count the nodes they have).

Objective (integer cost units, e.g. 0.01 USD of lifetime media cost):
``Σ loc·links·ring_cost + Σ rem·links·remote + Σ_t Σ_ij p[t,i,j]·round(links_t·cost_t[i][j]
/ (S_{t-1}·S_t))``. Only integer coefficients enter CP-SAT.

Bound: the linear relaxation of the products lets spines and cores pair up inside one
hall, so CP-SAT's own bound is weak on large sites; :mod:`models.placement.bound`
enumerates the hub distributions instead and its bound enters as ``objective ≥ bound``;
where they are too many to enumerate hall by hall, :mod:`models.placement.core_split`
enumerates the core switches per building instead (the larger bound is used).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter
from dataclasses import dataclass

from ortools.sat.python import cp_model

from models.placement.core_split import site_bound
from models.placement.problem import Group, PlacementProblem, group_types, upper_coefficients


@dataclass(frozen=True)
class PlacementSolution:
    status: str
    """optimal | feasible | infeasible | unknown."""
    objective: int
    bound: int
    hub: tuple[int, ...]
    """Hub zone of each group."""
    local: dict[tuple[int, int, int], int]
    """(group, zone, ring) -> blocks, non-zero only."""
    remote: dict[tuple[int, int, int], int]
    """(group, zone, hub zone) -> blocks, non-zero only."""
    upper: tuple[tuple[int, ...], ...]
    """Switches of each upper tier per zone."""
    upper_racks: tuple[tuple[int, ...], ...]
    runtime_s: float
    bound_method: str = "cp-sat"
    """Where ``bound`` comes from: cp-sat, or the hub bound's method (exhaustive | by
    building) when that is higher."""
    support: tuple[int, ...] = ()
    """Support racks per zone."""

    def within(self, gap: float) -> bool:
        """Placed, and ``(objective − bound) / objective ≤ gap``."""
        return (self.status in ("optimal", "feasible")
                and self.objective - self.bound <= gap * max(abs(self.objective), 1))


def build_model(problem: PlacementProblem) -> tuple[cp_model.CpModel, dict]:
    """The CP-SAT model of the module doc, aggregated over identical groups, and its
    variable containers."""
    m = cp_model.CpModel()
    zones = problem.zones
    nz = len(zones)
    types = group_types(problem.groups)
    hubs, loc, rem = {}, {}, {}
    for ty, (grp, members) in enumerate(types):
        count = len(members)
        # a group bound to a building has its hub and blocks there (0 elsewhere)
        ok = [grp.building in (None, z.building, z.name) for z in zones]
        for h, z in enumerate(zones):
            hubs[ty, h] = m.NewIntVar(0, count * ok[h], f"hubs[{ty},{h}]")
            for k, slots in enumerate(z.ring_slots):
                loc[ty, h, k] = m.NewIntVar(0, min(count * grp.blocks, slots) * ok[h],
                                            f"loc[{ty},{h},{k}]")
            for j in range(nz):
                if j != h:
                    rem[ty, h, j] = m.NewIntVar(
                        0, min(count * grp.blocks, sum(z.ring_slots)) * ok[h] * ok[j],
                        f"rem[{ty},{h},{j}]")
        m.Add(sum(hubs[ty, h] for h in range(nz)) == count)
        for h, z in enumerate(zones):
            m.Add(sum(loc[ty, h, k] for k in range(len(z.ring_slots)))
                  + sum(rem[ty, i, h] for i in range(nz) if i != h)
                  == grp.blocks * hubs[ty, h])
    blocks_in = []
    for h, z in enumerate(zones):
        for k, slots in enumerate(z.ring_slots):
            m.Add(sum(loc[ty, h, k] for ty in range(len(types))) <= slots)
        here = (sum(loc[ty, h, k] for ty in range(len(types))
                    for k in range(len(z.ring_slots)))
                + sum(rem[ty, h, j] for ty in range(len(types)) for j in range(nz) if j != h))
        m.Add(here <= sum(z.ring_slots))
        blocks_in.append(here)
    sw, racks, prods = [], [], []
    below, below_max = None, 0
    for t, tier in enumerate(problem.upper):
        sw_t = [m.NewIntVar(0, tier.switches, f"sw[{t},{h}]") for h in range(nz)]
        racks_t = [m.NewIntVar(0, -(-tier.switches // tier.per_rack), f"racks[{t},{h}]")
                   for h in range(nz)]
        m.Add(sum(sw_t) == tier.switches)
        for b, n in tier.building_switches:
            m.Add(sum(sw_t[h] for h, z in enumerate(zones) if b in (z.building, z.name)) == n)
        for h in range(nz):
            m.Add(tier.per_rack * racks_t[h] >= sw_t[h])
        p_t = {}
        if t == 0:
            # D_2[i]·sw[j] = Σ_types S_type·(hubs[type,i]·sw[j]); the products z satisfy
            # Σ_i z[i,j] = count·sw[j] and Σ_j z[i,j] = hubs[i]·S_3 (transportation rows).
            for ty, (grp, members) in enumerate(types):
                z = {(i, j): m.NewIntVar(0, len(members) * tier.switches, f"z[{ty},{i},{j}]")
                     for i in range(nz) for j in range(nz)}
                for (i, j), v in z.items():
                    m.AddMultiplicationEquality(v, [hubs[ty, i], sw_t[j]])
                for j in range(nz):
                    m.Add(sum(z[i, j] for i in range(nz)) == len(members) * sw_t[j])
                for i in range(nz):
                    m.Add(sum(z[i, j] for j in range(nz)) == tier.switches * hubs[ty, i])
                for (i, j), v in z.items():
                    p_t[ty, i, j] = (grp.spine_switches, v)
        else:
            for i in range(nz):
                for j in range(nz):
                    v = m.NewIntVar(0, below_max * tier.switches, f"p[{t},{i},{j}]")
                    m.AddMultiplicationEquality(v, [below[i], sw_t[j]])
                    p_t[i, j] = (1, v)
        sw.append(sw_t)
        racks.append(racks_t)
        prods.append(p_t)
        below, below_max = sw_t, tier.switches
    sup = [m.NewIntVar(0, problem.support_racks, f"sup[{h}]") for h in range(nz)]
    m.Add(sum(sup) == problem.support_racks)
    for h, z in enumerate(zones):
        net = (sum(grp.spine_racks * hubs[ty, h] for ty, (grp, _) in enumerate(types))
               + sum(r[h] for r in racks) + sup[h])
        m.Add(net <= z.network_positions)
    one_hall = {b for b, n in Counter(z.building for z in zones).items() if n == 1}

    def short(sites: set[str], h: int) -> cp_model.LinearExpr:
        """Power the partly filled blocks of the groups bound to one of ``sites`` and
        hubbed in zone h draw less than full blocks (Group.short_w)."""
        return sum(grp.short_w * hubs[ty, h] for ty, (grp, _) in enumerate(types)
                   if grp.short_w and grp.building in sites)

    # a group bound to a hall, or to a building of one hall, is counted in that hall; one
    # bound to a building of several halls, in the building
    power = [blocks_in[h] * problem.block_power_w
             - short({z.name} | ({z.building} & one_hall), h)
             + sum(grp.spine_power_w * hubs[ty, h] for ty, (grp, _) in enumerate(types))
             + sum(tier.switch_power_w * sw[t][h] for t, tier in enumerate(problem.upper))
             + problem.support_rack_power_w * sup[h]
             for h, z in enumerate(zones)]
    for h, z in enumerate(zones):
        m.Add(power[h] <= z.power_cap_w)
    for b, cap in sorted(problem.building_cap_w.items()):
        m.Add(sum(power[h] - short({b} - one_hall, h) for h, z in enumerate(zones)
                  if z.building == b) <= cap)
    coef = upper_coefficients(problem)
    objective = (
        sum(types[ty][0].links_per_block * zones[h].ring_cost[k] * v
            for (ty, h, k), v in loc.items())
        + sum(types[ty][0].links_per_block * problem.remote_cost[h][j] * v
              for (ty, h, j), v in rem.items())
        + sum(coef[t][key[-2]][key[-1]] * w * v
              for t, p_t in enumerate(prods) for key, (w, v) in p_t.items()))
    m.Minimize(objective)
    return m, {"types": types, "hubs": hubs, "loc": loc, "rem": rem, "sw": sw,
               "racks": racks, "support": sup, "objective": objective}


def disaggregate(problem: PlacementProblem, types: list[tuple[Group, list[int]]],
                 hubs: dict, loc: dict, rem: dict) -> tuple[tuple[int, ...], dict, dict]:
    """Per-group hubs and block counts from the aggregated values: the groups of a type
    take hubs in hall order; each group fills its ``blocks`` from its hub hall's pool of
    ring and remote blocks in order (exact: no constraint is per group)."""
    nz = len(problem.zones)
    hub = [0] * len(problem.groups)
    local: dict[tuple[int, int, int], int] = {}
    remote: dict[tuple[int, int, int], int] = {}
    for ty, (grp, members) in enumerate(types):
        queue = list(members)
        for h in range(nz):
            pool = [("loc", k, loc[ty, h, k]) for k in range(len(problem.zones[h].ring_slots))]
            pool += [("rem", i, rem[ty, i, h]) for i in range(nz) if i != h]
            pool = [list(x) for x in pool if x[2]]
            for _ in range(hubs[ty, h]):
                g = queue.pop(0)
                hub[g] = h
                need = grp.blocks
                while need:
                    kind, where, left = pool[0]
                    take = min(need, left)
                    key = (g, h, where) if kind == "loc" else (g, where, h)
                    target = local if kind == "loc" else remote
                    target[key] = target.get(key, 0) + take
                    need -= take
                    pool[0][2] -= take
                    if pool[0][2] == 0:
                        pool.pop(0)
    return tuple(hub), dict(sorted(local.items())), dict(sorted(remote.items()))


def pods_in_buildings(problem: PlacementProblem) -> bool:
    """Some group or tier is bound to a building (pods aligned with buildings)."""
    return (any(g.building is not None for g in problem.groups)
            or any(t.building_switches for t in problem.upper))


def solve(problem: PlacementProblem, solver: cp_model.CpSolver,
          first: cp_model.CpSolver | None = None,
          hubbed: cp_model.CpSolver | None = None, bound_lp=None) -> PlacementSolution:
    """Solve with ``solver``, a CP-SAT solver configured by the caller (the project's
    settings: ``solver.backends.cpsat.placement_solver``; with its deterministic workers
    and time the same problem gives the same placement).

    ``hubbed`` (``cpsat.placement_hub_pass``): first the groups' hubs are fixed where the
    hub bound is least (``HubBound.hubs``); the rest of the model is then linear and
    small, and ``hubbed`` solves it in milliseconds (the default design: 0.04% above the
    bound). ``first``: then, if that is not within ``solver``'s gap limit, a quick pass
    (``cpsat.placement_first_pass``) on the whole model: its answer stands when within
    the gap; otherwise ``solver`` solves from scratch (hinted with the first pass's
    placement it ended further from the bound: 0.83% vs 0.55% at the default 30 s). With
    two or more upper tiers (gb200-campus), before that search, :func:`descend` from the
    first pass's placement, from :func:`packed_upper` and from :func:`mixed_upper`
    (``hubbed`` solving each linear pass; gb200-campus: 0.1 s CPU each, $662.7M where the
    30 s search finds $668.3M). The least
    objective found is returned.

    ``bound_lp``: a ``highspy.Highs`` for the core-split bound's linear programs
    (``solver.backends.highs.bound_lp``; without it that bound is not computed,
    :func:`models.placement.core_split.site_bound`).

    The hub-enumeration bound (:mod:`models.placement.bound`), when the distributions are
    few enough to enumerate, enters as ``objective ≥ bound`` (valid, and it lets CP-SAT
    stop once within its relative gap limit of it); the reported bound is the larger of
    the two (never the bound of the pass with fixed hubs, which holds for those hubs only).
    """
    model, v = build_model(problem)
    # the enumerated bound is derived for groups and tiers free to use any hall
    enumerated = None if pods_in_buildings(problem) else site_bound(problem, bound_lp)
    if enumerated is not None:
        model.Add(v["objective"] >= enumerated.bound)
    limit = solver.parameters.relative_gap_limit
    found: list[PlacementSolution] = []
    spent = 0.0
    if hubbed is not None and enumerated is not None and enumerated.hubs is not None:
        fixed = with_hubs(model, v, enumerated.hubs)
        found.append(_solution(problem, v, hubbed, hubbed.Solve(fixed), enumerated,
                               hubbed.WallTime(), own_bound=False))
        spent += hubbed.WallTime()
        if found[-1].within(limit):
            return found[-1]
    if first is not None:
        found.append(_solution(problem, v, first, first.Solve(model), enumerated,
                               spent + first.WallTime()))
        spent += first.WallTime()
        if found[-1].within(limit):
            return found[-1]
    if hubbed is not None and len(problem.upper) > 1:
        starts = [s for s in found if s.status in ("optimal", "feasible")]
        for start in [*starts, packed_upper(problem), mixed_upper(problem)]:
            better = descend(problem, model, v, hubbed, enumerated, start)
            if better is not None:
                spent += better.runtime_s
                found.append(dataclasses.replace(better, runtime_s=spent))
        best = min((s for s in found if s.status in ("optimal", "feasible")),
                   key=lambda s: s.objective, default=None)
        if best is not None and best.within(limit):
            return best
    found.append(_solution(problem, v, solver, solver.Solve(model), enumerated,
                           spent + solver.WallTime()))
    placed = [s for s in found if s.status in ("optimal", "feasible")]
    if not placed:
        return found[-1]
    best = min(placed, key=lambda s: s.objective)
    proof = max(placed, key=lambda s: s.bound)
    return dataclasses.replace(
        best, status="optimal" if best.objective <= proof.bound else "feasible",
        bound=proof.bound, bound_method=proof.bound_method, runtime_s=found[-1].runtime_s)


def with_hubs(model: cp_model.CpModel, v: dict,
              hubs: tuple[tuple[int, ...], ...]) -> cp_model.CpModel:
    """A copy of ``model`` with the groups of each type hubbed as ``hubs[type][zone]``."""
    return with_values(model, [(var, hubs[ty][h]) for (ty, h), var in v["hubs"].items()])


def with_values(model: cp_model.CpModel, fixed: list) -> cp_model.CpModel:
    """A copy of ``model`` with each ``(variable, value)`` of ``fixed`` fixed."""
    copy = model.clone()
    for var, value in fixed:
        copy.Add(copy.GetIntVarFromProtoIndex(var.Index()) == value)
    return copy


def packed_upper(problem: PlacementProblem) -> tuple[tuple[int, ...], ...]:
    """A start for :func:`descend`: the upper tiers packed tier by tier into the zones'
    network positions in zone order (cores and the tier above side by side)."""
    left = [z.network_positions for z in problem.zones]
    out = []
    for tier in problem.upper:
        need, row = tier.switches, [0] * len(left)
        for h in range(len(left)):
            row[h] = min(need, max(0, left[h]) * tier.per_rack)
            need -= row[h]
            left[h] -= -(-row[h] // tier.per_rack)
        out.append(tuple(row))
    return tuple(out)


def mixed_upper(problem: PlacementProblem) -> tuple[tuple[int, ...], ...]:
    """A start for :func:`descend`: the upper tiers' racks packed into the zones' network
    positions in zone order, each zone taking every tier's racks in proportion to what is
    left of them (cores and the tier above mixed in each hall, so each hall's pairs get its
    own-hall cost; gb200-campus: $662.7M from here, $664.2M from :func:`packed_upper`)."""
    need = [-(-tier.switches // tier.per_rack) for tier in problem.upper]
    switches = [tier.switches for tier in problem.upper]
    out = [[0] * len(problem.zones) for _ in problem.upper]
    for h, zone in enumerate(problem.zones):
        total = sum(need)
        if not total:
            break
        room = min(max(0, zone.network_positions), total)
        share = [room * n // total for n in need]
        for t in itertools.cycle(range(len(need))):
            if sum(share) == room:
                break
            share[t] += share[t] < need[t]
        for t, tier in enumerate(problem.upper):
            out[t][h] = min(switches[t], share[t] * tier.per_rack)
            switches[t] -= out[t][h]
            need[t] -= share[t]
    return tuple(map(tuple, out))


DESCENT_ROUNDS = 20
"""Most rounds of :func:`descend` (each round lowers the cost or ends it)."""


def descend(problem: PlacementProblem, model: cp_model.CpModel, v: dict,
            solver: cp_model.CpSolver, enumerated,
            start: PlacementSolution | tuple[tuple[int, ...], ...]) -> PlacementSolution | None:
    """A placement by alternating passes from ``start`` (a placement, or upper tiers
    alone): each pass frees one part (the hubs, or one upper tier's switches per zone) and
    fixes the rest, which leaves every product with a fixed factor, so the pass is linear
    and ``solver`` solves it to optimality in milliseconds; rounds repeat until no pass
    lowers the cost. A local optimum: the bound is never its own."""
    types = v["types"]
    if isinstance(start, PlacementSolution):
        hubs = {(ty, h): sum(start.hub[g] == h for g in members)
                for ty, (_, members) in enumerate(types) for h in range(len(problem.zones))}
        upper, best = start.upper, start
    else:
        hubs, upper, best = None, start, None
    parts = ["hubs", *range(len(problem.upper))]
    spent = 0.0
    for _ in range(DESCENT_ROUNDS):
        improved = False
        for free in parts:
            if free != "hubs" and hubs is None:
                continue
            fixed = [(var, upper[t][h]) for t, row in enumerate(v["sw"]) if t != free
                     for h, var in enumerate(row)]
            if free != "hubs":
                fixed += [(var, hubs[key]) for key, var in v["hubs"].items()]
            code = solver.Solve(with_values(model, fixed))
            spent += solver.WallTime()
            found = _solution(problem, v, solver, code, enumerated, spent, own_bound=False)
            if found.status in ("optimal", "feasible") and (
                    best is None or found.objective < best.objective):
                best, improved = found, True
                hubs = {key: solver.Value(var) for key, var in v["hubs"].items()}
                upper = found.upper
        if not improved:
            break
    return None if best is None else dataclasses.replace(best, runtime_s=spent)


def _solution(problem: PlacementProblem, v: dict, solver: cp_model.CpSolver, code: int,
              enumerated, runtime_s: float, own_bound: bool = True) -> PlacementSolution:
    """The placement of a finished solve (status from the objective against the larger of
    CP-SAT's and the enumerated bound; ``own_bound`` False: CP-SAT's bound is of a
    restricted model and is not used)."""
    status = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible",
              cp_model.INFEASIBLE: "infeasible"}.get(code, "unknown")
    if status not in ("optimal", "feasible"):
        return PlacementSolution(status if own_bound else "unknown", 0, 0, (), {}, {}, (), (),
                                 runtime_s)
    val = {name: {key: solver.Value(x) for key, x in v[name].items()}
           for name in ("hubs", "loc", "rem")}
    hub, local, remote = disaggregate(problem, v["types"], val["hubs"], val["loc"], val["rem"])
    upper = tuple(tuple(solver.Value(x) for x in row) for row in v["sw"])
    upper_racks = tuple(tuple(solver.Value(x) for x in row) for row in v["racks"])
    support = tuple(solver.Value(x) for x in v["support"])
    objective, bound, method = (round(solver.ObjectiveValue()),
                                round(solver.BestObjectiveBound()) if own_bound else 0,
                                "cp-sat")
    if enumerated is not None and enumerated.bound >= bound:
        bound, method = enumerated.bound, enumerated.method
    # CP-SAT calls a stop at the gap limit OPTIMAL; only a closed gap is.
    status = "optimal" if objective <= bound else "feasible"
    return PlacementSolution(status, objective, bound, hub, local, remote, upper,
                             upper_racks, runtime_s, method, support)
