"""A lower bound on the zone model's optimum by enumerating where the spine groups stand.

The zone model (:mod:`models.placement.model`) is bilinear: the spine-to-core cost is
``Σ_ij coef_ij · D_i · sw_j`` with ``D_i = Σ_τ S_τ · hubs[τ,i]`` spines in zone ``i`` and
``sw_j`` tier-3 switches in zone ``j`` (a fat tree wires every core to one spine of every
group, so the link counts are a product of the two distributions). Its linear relaxation
lets spines and cores pair up inside one hall, which no placement can do, so CP-SAT's own
bound stays far below the optimum. For a *fixed* hub distribution ``H`` the rest is
nearly linear, and a valid bound ``LB(H) ≤ min cost given H`` is cheap:

* leaf-spine: the blocks ``B_τ = blocks_τ · H[τ,j]`` of the groups hubbed in zone ``j`` take
  the cheapest of: its own rings (``ring_slots`` at ``ring_cost``) and every other zone's
  slots (at ``remote[i][j]``), each as if no other hub competed for them; types with more
  links per block take the cheaper options first (optimal for costs ``links_τ · c``);
* spine-core: cores fill zones in ascending ``G_j = Σ_i coef_ij · D_i`` (the exact LP of the
  core distribution for fixed ``H``), zone ``j`` holding at most
  ``per_rack · (network_positions_j − Σ_τ spine_racks_τ · H[τ,j])`` and the switches its
  power left after the spines allows;
* tiers above 3: ``min_ij coef_ij · S_{t-1} · S_t`` (every product sums to ``S_{t-1}·S_t``).

The leaf-spine term above lets every hub hall take the same remote slots. When all groups
have the same links per block, :func:`room_bound` also counts room: hall ``j`` holds at most
``L_j = min(slots_j, ⌊(P_j − spine power_j)/block power⌋)`` blocks and building ``b`` at most
``C_b = min(Σ_{j∈b} L_j, ⌊(P_b − spine power_b)/block power⌋)``. The blocks hubbed in ``b``
stay in ``b`` at most ``C_b`` (blocks from elsewhere are ignored); a block of hub hall ``j``
pays its own hall's cheapest ``L_j`` ring slots, at least ``s_j = min`` remote cost from a
sibling hall with room, or at least ``x_j = min`` remote cost from another building. That
relaxation is solved exactly by keeping in ``b`` the ``C_b`` blocks that save most against
``x_j``; the larger of the two leaf-spine terms enters ``LB(H)``. On the default site it
lifts the bound from 2.8% to 0.04% below the best placement.

A fourth tier (core-super, above 65,536 endpoints: the GB200 campus) enters
:func:`higher_tiers_bound` as if every core stood beside every super switch, which the
network positions forbid when spines, cores and supers compete for them (the GB200
campus: 129 spine, 98 core and 49 super racks in 160 positions a building). The building
bound counts it per core instead: a core in zone ``i`` pays at least
``m_i·S_4 − δ_i·z_i`` (``m_i`` its least cost to another zone, ``δ_i = max(0, m_i −
coef4_ii)``), and ``z_i ≤ u_i(y_i) = min(S_4, p_4·(positions left by the spines) −
(p_4/p_3)·y_i)`` with ``y_i`` cores there. ``y·u(y)`` is concave, so the cores' cost per
zone is convex in ``y_i`` and its least value at a price enters the dual exactly
(:func:`fourth_tier_cost`).

That lets every zone take all ``S_4`` tier-4 switches beside its cores at once, which
``Σ_i z_i = S_4`` forbids. The equality is priced too: ``μ·(Σ_i z_i − S_4)`` is 0 on every
placement, so for any ``μ`` (and any core price ``λ``) the dual stays a lower bound. Per
zone the least of ``y·p − δ·y·z + μ·z`` over ``0 ≤ z ≤ u(y)`` is at ``z = 0`` or
``z = u(y)`` (linear in ``z``), each piece linear or a convex quadratic in ``y``
(:func:`fourth_tier_cost`). ``(λ, μ)`` are found by coordinate ascent (golden sections
on the concave dual). On gb200-campus's merged halls it lifts the bound from $618.0M to
$636.6M (the placement found: $664.2M).

Sites with too many hub vectors even by building (GB200: 129 groups, 12 halls, 2.6e12 a
building) are bounded on :func:`merged_halls`: each building one zone, every cost the
least over the halls' pairs. Any placement maps onto the merged model at no more cost,
so its bound is one of the model's (loose by the hall-level differences: 4% on a pair in
one building).

Every term relaxes a constraint of the model, so ``min_H LB(H)`` over *all* hub
distributions that fit the zones' network positions and power is a lower bound on the
optimum (:func:`exhaustive_bound`, vectorised over chunks of distributions).

Large sites have too many distributions; :func:`building_bound` decomposes by building.
With ``cf_i = min_{j in another building} coef_ij`` the spine-core cost is at least
``Σ_b [S_3 · Σ_{i∈b} cf_i·D_i + Σ_{j∈b} sw_j · g_j]`` with
``g_j = Σ_{i∈b} (coef_ij − cf_i) · D_i`` (cores in another building cost at least ``cf``),
which is separable by building except for ``Σ_j sw_j = S_3`` and the group counts.
Relaxing the first with a price ``λ`` (any ``λ`` gives a valid bound; the best is found by
golden-section search on the concave dual) leaves, per building and hub vector, the cost
``A_b + Σ_{j∈b} cap_j · min(0, g_j + λ)``, combined over buildings by a dynamic program
on the group counts. Each building's hub vectors are enumerated exhaustively.
:func:`hub_bound` returns the exhaustive bound when it fits ``max_distributions``, else
the building bound.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from models.placement.problem import PlacementProblem, Zone, group_types, upper_coefficients

MAX_DISTRIBUTIONS = 4_000_000
"""Default cap on the hub distributions enumerated (measured: the default site's 250,272
in 0.19 s; gb200-campus's 5.8M per-building vectors, by building, in 2.8 s)."""
CHUNK = 250_000
GOLDEN_STEPS = 40
SUPER_PRICE_ROUNDS = 2
"""Rounds of coordinate ascent on the tier-4 and core prices (:func:`building_bound`;
gb200-campus: the second round adds 0.6%, a third and fourth nothing)."""
SUPER_PRICE_STEPS = 20
"""Golden-section steps of each search in those rounds (to 1e-4 of the bracket)."""
FLOAT_EXACT = 2.0 ** 50
"""Largest magnitude the float dual handles exactly enough (integers to 2^53)."""


@dataclass(frozen=True)
class HubBound:
    bound: int
    """Lower bound on the zone model's objective [cost units]."""
    method: str
    """exhaustive | by building."""
    distributions: int
    """Hub distributions that fit (exhaustive), or per-building hub vectors covered before
    the fit filter and the symmetry reduction (by building)."""
    hubs: tuple[tuple[int, ...], ...] | None = None
    """Exhaustive: a distribution of least ``LB(H)``, groups of each type (``group_types``
    order) hubbed per zone: the start of a placement (models.placement.model.solve)."""


def hub_loads(types, hubs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Spine switches, spine racks and spine power [W] per zone, for each row of ``hubs``
    ``[rows, types, zones]``."""
    def weighted(attr: str) -> np.ndarray:
        return sum(getattr(grp, attr) * hubs[:, t, :] for t, (grp, _) in enumerate(types))
    return weighted("spine_switches"), weighted("spine_racks"), weighted("spine_power_w")


def zone_limits(problem: PlacementProblem, zones) -> tuple[np.ndarray, np.ndarray]:
    """Network positions and power cap [W] of ``zones``."""
    return (np.array([problem.zones[j].network_positions for j in zones]),
            np.array([problem.zones[j].power_cap_w for j in zones]))


def fits(problem: PlacementProblem, zones, racks: np.ndarray, watts: np.ndarray) -> np.ndarray:
    """Rows whose spine racks and power fit every zone's network positions and power."""
    net, cap_w = zone_limits(problem, zones)
    return (racks <= net).all(1) & (watts <= cap_w).all(1)


def core_room(problem: PlacementProblem, zones, racks: np.ndarray,
              watts: np.ndarray) -> np.ndarray:
    """Most tier-3 switches each zone can take beside its spines: ``per_rack`` times the
    network positions the spine racks leave, what the power the spines leave feeds, and
    never more than the tier has."""
    tier = problem.upper[0]
    net, cap_w = zone_limits(problem, zones)
    by_power = (cap_w - watts) // tier.switch_power_w if tier.switch_power_w else tier.switches
    return np.minimum(np.minimum(tier.per_rack * (net - racks), by_power),
                      tier.switches).clip(0)


def count_compositions(total: int, caps: list[int]) -> int:
    """Ways to write ``total`` as ``Σ x_j`` with ``0 ≤ x_j ≤ caps[j]`` (dynamic program)."""
    ways = [1] + [0] * total
    for cap in caps:
        ways = [sum(ways[n - x] for x in range(min(cap, n) + 1)) for n in range(total + 1)]
    return ways[total]


def compositions(total: int, caps: list[int]) -> np.ndarray:
    """Every ``x`` with ``Σ x = total``, ``0 ≤ x_j ≤ caps[j]`` as rows (lexicographic).
    Built a column at a time: each row so far (``left`` still to place) takes every ``x_j``
    from ``max(0, left - Σ caps[j+1:])`` to ``min(caps[j], left)``, its children kept
    together in increasing ``x_j``, so the rows stay in lexicographic order."""
    rows = np.zeros((1, 0), dtype=np.int64)
    left = np.array([total], dtype=np.int64)
    for j, cap in enumerate(caps):
        low = np.maximum(0, left - sum(caps[j + 1:]))
        count = (np.minimum(cap, left) - low + 1).clip(0)
        parent = np.repeat(np.arange(len(rows)), count)
        x = low[parent] + np.arange(len(parent)) - np.repeat(np.cumsum(count) - count, count)
        rows = np.column_stack([rows[parent], x])
        left = left[parent] - x
    return rows[left == 0]  # with no caps, the empty row only when total is 0


def hall_leaf_spine_table(problem: PlacementProblem, types, j: int) -> np.ndarray:
    """Cheapest placement of the blocks of the groups hubbed in zone ``j`` (module doc),
    for every count of each type hubbed there: an array indexed ``[n_type0, n_type1, ...]``."""
    zones = problem.zones
    options = sorted([*zip(zones[j].ring_cost, zones[j].ring_slots, strict=True)]
                     + [(problem.remote_cost[i][j], sum(zones[i].ring_slots))
                        for i in range(len(zones)) if i != j])
    order = sorted(range(len(types)), key=lambda t: (-types[t][0].links_per_block, t))
    table = np.zeros(tuple(len(members) + 1 for _, members in types), dtype=np.int64)
    for counts in itertools.product(*[range(n) for n in table.shape]):
        room = [cap for _, cap in options]
        for t in order:
            grp, left = types[t][0], types[t][0].blocks * counts[t]
            for k, (cost, _) in enumerate(options):
                take = min(left, room[k])
                table[counts] += take * grp.links_per_block * cost
                room[k] -= take
                left -= take
    return table


def leaf_spine_bound(tables: list[np.ndarray], hubs: np.ndarray, zones) -> np.ndarray:
    """Σ over ``zones`` of their :func:`hall_leaf_spine_table` per row of ``hubs``
    ``[rows, types, len(zones)]``."""
    total = np.zeros(len(hubs), dtype=np.int64)
    for k, j in enumerate(zones):
        total += tables[j][tuple(hubs[:, :, k].T)]
    return total


def spine_core_bound(problem: PlacementProblem, types,
                     hubs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cores filled into zones in ascending per-switch cost (module doc), per row; and
    whether the zones can hold every core at all (rows that cannot are infeasible)."""
    tier = problem.upper[0]
    coef = np.array(upper_coefficients(problem)[0], dtype=np.int64)
    spines, racks, watts = hub_loads(types, hubs)
    per_switch = spines @ coef
    room = core_room(problem, range(len(problem.zones)), racks, watts)
    order = np.argsort(per_switch, axis=1, kind="stable")
    cost = np.take_along_axis(per_switch, order, 1)
    room = np.take_along_axis(room, order, 1)
    left = np.full(len(hubs), tier.switches, dtype=np.int64)
    total = np.zeros(len(hubs), dtype=np.int64)
    for k in range(cost.shape[1]):
        take = np.minimum(left, room[:, k])
        total += take * cost[:, k]
        left -= take
    return total, left == 0


def higher_tiers_bound(problem: PlacementProblem, first: int = 1) -> int:
    """``Σ_{t ≥ 3 + first} min coef_t · S_{t-1} · S_t`` (tier 4 on: ``first`` 1)."""
    coef = upper_coefficients(problem)
    return sum(min(min(row) for row in coef[t]) * problem.upper[t - 1].switches
               * problem.upper[t].switches for t in range(first, len(problem.upper)))


@dataclass(frozen=True)
class FourthTier:
    """Per zone ``i``, what a tier-3 switch there pays the tier-4 switches at least (module
    doc): ``far_i = m_i · S_4`` with ``m_i = min_{j≠i} coef4_ij``, less ``δ_i · z_i`` with
    ``δ_i = max(0, m_i − coef4_ii)`` for the ``z_i`` tier-4 switches in its own zone."""

    far: np.ndarray
    delta: np.ndarray
    switches: int
    """``S_4``."""
    per_rack: float
    """Tier-4 switches per rack ``p_4``."""
    ratio: float
    """``p_4 / p_3``: tier-4 switches one tier-3 switch's rack space would hold."""


def fourth_tier(problem: PlacementProblem) -> FourthTier | None:
    """The tier-4 figures of :func:`fourth_tier_cost`; ``None`` with fewer than two upper
    tiers."""
    if len(problem.upper) < 2:
        return None
    coef = np.array(upper_coefficients(problem)[1], dtype=float)
    n = len(coef)
    own = np.diag(coef)
    other = np.where(np.eye(n, dtype=bool), np.inf, coef).min(1) if n > 1 else own
    tier3, tier4 = problem.upper[0], problem.upper[1]
    return FourthTier(other * tier4.switches, np.maximum(0.0, other - own), tier4.switches,
                      float(tier4.per_rack), tier4.per_rack / tier3.per_rack)


def fourth_tier_cost(t4: FourthTier, zones, price: np.ndarray, room: np.ndarray,
                     racks_left: np.ndarray, super_price: float = 0.0) -> np.ndarray:
    """``min over 0 ≤ y ≤ room, 0 ≤ z ≤ u(y)`` of ``y·(price + far) − δ·y·z + μ·z`` per row
    and zone of ``zones``: ``y`` tier-3 switches at ``price`` each, their tier-4 links at
    least ``far − δ·z`` each with ``z ≤ u(y) = min(S_4, p_4·racks_left − (p_4/p_3)·y)``
    tier-4 switches beside them (the rack space the spines and those ``y`` leave), each
    tier-4 switch at ``μ = super_price`` (the price on ``Σ_i z_i = S_4``, module doc).

    Linear in ``z``: ``z = 0`` or ``z = u(y)``, so the least is the smaller of
    ``min_y y·p`` (``p = price + far``: at ``y = 0`` or ``room``) and
    ``min_y y·p + (μ − δ·y)·u(y)``. On ``u = S_4`` (``y ≤ bend``) the latter is linear,
    least at an end; above it, ``y·p + (μ − δ·y)(a − b·y)`` (``a = p_4·racks_left``) is a
    quadratic with ``δ·b ≥ 0`` (convex), least at an end or its stationary point
    ``(δ·a + μ·b − p)/(2·δ·b)``. With ``μ = 0`` it is the convex ``y·p − δ·y·u(y)``."""
    far, delta = t4.far[list(zones)], t4.delta[list(zones)]
    p = price + far
    a = t4.per_rack * racks_left
    b = t4.ratio

    def value(y):
        return y * p + (super_price - delta * y) * np.minimum(t4.switches, a - b * y)

    bend = np.clip((a - t4.switches) / b, 0, room)
    with np.errstate(divide="ignore", invalid="ignore"):
        stationary = np.where(delta > 0, (delta * a + super_price * b - p) / (2 * delta * b),
                              0.0)
    stationary = np.clip(stationary, bend, room)
    without = np.minimum(0.0 * room, room * p)
    return np.minimum(without, np.minimum(np.minimum(value(0.0 * room), value(room)),
                                          np.minimum(value(bend), value(stationary))))


def hub_distributions(problem: PlacementProblem, types) -> Iterator[np.ndarray]:
    """Chunks ``[rows, types, zones]`` of every hub distribution that fits each zone's
    network positions and power."""
    zones = range(len(problem.zones))
    per_type = [compositions(len(members), hub_caps(problem, grp, len(members), zones))
                for grp, members in types]
    first, rest = per_type[0], per_type[1:]
    for combo in itertools.product(*[range(len(r)) for r in rest]):
        tail = [rest[k][i] for k, i in enumerate(combo)]
        for start in range(0, len(first), CHUNK):
            head = first[start:start + CHUNK]
            hubs = np.stack([head] + [np.broadcast_to(x, head.shape) for x in tail], axis=1)
            _, racks, watts = hub_loads(types, hubs)
            hubs = hubs[fits(problem, zones, racks, watts)]
            if len(hubs):
                yield hubs


NO_ROOM = np.iinfo(np.int64).max // 4
"""room_bound of a distribution whose blocks cannot all find room."""


def block_room(problem: PlacementProblem, types, hubs: np.ndarray) -> tuple[np.ndarray, dict]:
    """Blocks each zone can hold beside the spines hubbed there, ``L_j`` per row, and each
    building's ``C_b`` (module doc)."""
    _, _, watts = hub_loads(types, hubs)
    slots = np.array([sum(z.ring_slots) for z in problem.zones])
    power = np.array([z.power_cap_w for z in problem.zones])
    per_block = problem.block_power_w
    room = (np.minimum(slots, (power - watts) // per_block) if per_block
            else np.broadcast_to(slots, watts.shape)).clip(0)
    building = {}
    for halls in buildings(problem):
        total = room[:, halls].sum(1)
        cap = problem.building_cap_w.get(problem.zones[halls[0]].building)
        if cap is not None and per_block:
            total = np.minimum(total, (cap - watts[:, halls].sum(1)) // per_block).clip(0)
        building[tuple(halls)] = total
    return room, building


def building_leaf_spine(problem: PlacementProblem, halls: tuple[int, ...],
                        hubbed: tuple[int, ...], room: tuple[int, ...], kept: int) -> int:
    """The room relaxation of one building (module doc) in cost units per link: blocks
    ``hubbed`` per hall, ``room`` per hall, at most ``kept`` of them in the building;
    NO_ROOM when blocks that cannot leave find no room."""
    n = len(problem.zones)
    total, savings, stuck = 0, [], 0
    for j, blocks, own in zip(halls, hubbed, room, strict=True):
        if not blocks:
            continue
        z = problem.zones[j]
        rings = sorted((c, k) for c, k in zip(z.ring_cost, z.ring_slots, strict=True) if k)
        inside = list(itertools.islice(itertools.chain.from_iterable(
            itertools.repeat(c, k) for c, k in rings), min(own, blocks)))
        sibling = [problem.remote_cost[i][j] for i, r in zip(halls, room, strict=True)
                   if i != j and r]
        if sibling:
            inside = sorted(inside + [min(sibling)] * blocks)[:blocks]
        away = [problem.remote_cost[i][j] for i in range(n) if i not in halls]
        if not away:  # nowhere else to go: the cheapest room inside, or none
            stuck += blocks
            savings += [(math.inf, c) for c in inside]
            continue
        leave = min(away)
        total += blocks * leave
        savings += [(leave - c, c) for c in inside if c < leave]
    savings.sort(key=lambda s: -s[0])
    chosen = savings[:kept]
    if sum(1 for s, _ in chosen if s == math.inf) < stuck:
        return NO_ROOM
    return total + sum(c if s == math.inf else -s for s, c in chosen)


def room_bound(problem: PlacementProblem, types, hubs: np.ndarray, memo: dict) -> np.ndarray:
    """The room relaxation's leaf-spine cost per row of ``hubs`` (module doc; 0 when the
    group types differ in links per block); ``memo`` keeps each building's values across
    chunks."""
    links = {grp.links_per_block for grp, _ in types}
    total = np.zeros(len(hubs), dtype=np.int64)
    if len(links) != 1:
        return total
    links = links.pop()
    hubbed = (hubs * np.array([grp.blocks for grp, _ in types])[None, :, None]).sum(1)
    room, kept = block_room(problem, types, hubs)
    for halls, cap in kept.items():
        rows = np.concatenate([hubbed[:, halls], room[:, halls], cap[:, None]], 1)
        flat = np.ravel_multi_index(tuple(rows.T), tuple(rows.max(0) + 1))
        _, first, where = np.unique(flat, return_index=True, return_inverse=True)
        values = []
        for key in map(tuple, rows[first].tolist()):
            if (halls, key) not in memo:
                k = len(halls)
                memo[halls, key] = building_leaf_spine(problem, halls, key[:k], key[k:2 * k],
                                                       key[-1])
            values.append(memo[halls, key])
        values = np.array(values, dtype=np.int64)
        part = np.where(values >= NO_ROOM, NO_ROOM, values * links)[where.ravel()]
        total = np.minimum(total + part, NO_ROOM)
    return total


def exhaustive_bound(problem: PlacementProblem, types) -> HubBound | None:
    """``min_H LB(H)`` over every hub distribution (module doc), and a distribution
    reaching it."""
    tables = [hall_leaf_spine_table(problem, types, j) for j in range(len(problem.zones))]
    zones = range(len(problem.zones))
    best, best_hubs, memo = None, None, {}
    size = 0
    for hubs in hub_distributions(problem, types):
        cores, feasible = spine_core_bound(problem, types, hubs)
        size += len(hubs)
        roomy = room_bound(problem, types, hubs, memo)
        feasible &= roomy < NO_ROOM
        if feasible.any():
            lb = np.maximum(leaf_spine_bound(tables, hubs, zones), roomy) + cores
            row = int(np.flatnonzero(feasible)[np.argmin(lb[feasible])])
            if best is None or lb[row] < best:
                best, best_hubs = int(lb[row]), tuple(map(tuple, hubs[row].tolist()))
    if best is None:
        return None
    return HubBound(best + higher_tiers_bound(problem), "exhaustive", size, best_hubs)


def distribution_count(problem: PlacementProblem, types) -> int:
    """Hub distributions before the fit filter: product over types of compositions."""
    size = 1
    for grp, members in types:
        size *= count_compositions(len(members), hub_caps(problem, grp, len(members),
                                                          range(len(problem.zones))))
    return size


def hub_caps(problem: PlacementProblem, grp, count: int, zones) -> list[int]:
    """Most groups of a type one zone can hub: its network positions over spine racks
    (any number when the group needs no rack of its own)."""
    return [min(count, problem.zones[j].network_positions // grp.spine_racks)
            if grp.spine_racks else count for j in zones]


def buildings(problem: PlacementProblem) -> list[list[int]]:
    """Zone indices of each building, in order of first appearance."""
    out: dict[str, list[int]] = {}
    for j, z in enumerate(problem.zones):
        out.setdefault(z.building, []).append(j)
    return list(out.values())


def interchangeable(problem: PlacementProblem, a: int, b: int) -> bool:
    """Whether swapping zones ``a`` and ``b`` maps every figure the bound reads onto itself
    (zone data, leaf-spine remote costs, upper-tier costs; conservative: every tier's
    costs are compared, the bound reads the first)."""
    za, zb = problem.zones[a], problem.zones[b]
    if (za.building, za.ring_slots, za.ring_cost, za.network_positions, za.power_cap_w) != (
            zb.building, zb.ring_slots, zb.ring_cost, zb.network_positions, zb.power_cap_w):
        return False
    swap = list(range(len(problem.zones)))
    swap[a], swap[b] = b, a
    return all(m[i][j] == m[swap[i]][swap[j]]
               for m in [problem.remote_cost] + [t.cost for t in problem.upper]
               for i in range(len(swap)) for j in range(len(swap)))


def symmetry_classes(problem: PlacementProblem, halls: list[int]) -> list[list[int]]:
    """The halls split into classes of pairwise interchangeable zones (swaps compose, so
    comparing with each class's first member suffices)."""
    classes: list[list[int]] = []
    for j in halls:
        home = next((c for c in classes if interchangeable(problem, c[0], j)), None)
        if home is None:
            classes.append([j])
        else:
            home.append(j)
    return classes


def building_vectors(problem: PlacementProblem, types, halls: list[int]) -> np.ndarray:
    """Every hub vector ``[rows, types, halls]`` of one building (any number of each
    type's groups, at most its count) that fits the halls' network positions and power,
    one per orbit of interchangeable halls (columns of a class in non-increasing order:
    the bound is the same on the whole orbit)."""
    per_type = []
    for grp, members in types:
        caps = hub_caps(problem, grp, len(members), halls)
        per_type.append(np.concatenate([compositions(n, caps)
                                        for n in range(len(members) + 1)]))
    index = np.meshgrid(*[np.arange(len(a)) for a in per_type], indexing="ij")
    hubs = np.stack([a[i.ravel()] for a, i in zip(per_type, index, strict=True)], axis=1)
    _, racks, watts = hub_loads(types, hubs)
    keep = fits(problem, halls, racks, watts)
    column = np.ravel_multi_index(tuple(hubs.transpose(1, 0, 2)),
                                  tuple(len(members) + 1 for _, members in types))
    where = {j: k for k, j in enumerate(halls)}
    for cls in symmetry_classes(problem, halls):
        for a, b in itertools.pairwise(cls):
            keep &= column[:, where[a]] >= column[:, where[b]]
    return hubs[keep]


@dataclass
class BuildingTerms:
    """Per hub vector of one building: ``A_b``, ``g_j``, ``cap_j`` (module doc) and the
    vector's group counts as a flat index, rows sorted by that index."""

    fixed: np.ndarray
    saving: np.ndarray
    room: np.ndarray
    racks_left: np.ndarray
    """Network positions the spine racks leave per zone."""
    halls: list[int]
    starts: np.ndarray
    """First row of each distinct count index."""
    keys: np.ndarray
    """The distinct count indices."""


def building_terms(problem: PlacementProblem, types, tables: list[np.ndarray],
                   halls: list[int], far: np.ndarray, coef: np.ndarray,
                   shape: tuple[int, ...]) -> BuildingTerms:
    tier = problem.upper[0]
    hubs = building_vectors(problem, types, halls)
    spines, racks, watts = hub_loads(types, hubs)
    fixed = (leaf_spine_bound(tables, hubs, halls)
             + tier.switches * (spines * far[halls]).sum(1)).astype(float)
    saving = (spines @ (coef[np.ix_(halls, halls)] - far[halls][:, None])).astype(float)
    room = core_room(problem, halls, racks, watts).astype(float)
    left = (zone_limits(problem, halls)[0] - racks).astype(float)
    key = np.ravel_multi_index(tuple(hubs.sum(2).T), shape)
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key[order], return_index=True)
    return BuildingTerms(fixed[order], saving[order], room[order], left[order], halls,
                         starts, keys)


def core_cost(b: BuildingTerms, price: float, t4: FourthTier | None,
              super_price: float = 0.0) -> np.ndarray:
    """Least cost of the tier-3 switches in the building's zones at core price ``price``
    (module doc), per hub vector; with :func:`fourth_tier` their tier-4 links too, the
    tier-4 switches at ``super_price``."""
    if t4 is None:
        return (b.room * np.minimum(0.0, b.saving + price)).sum(1)
    return fourth_tier_cost(t4, b.halls, b.saving + price, b.room, b.racks_left,
                            super_price).sum(1)


def dual_value(terms: list[BuildingTerms], price: float, shape: tuple[int, ...],
               cores: int, t4: FourthTier | None = None, super_price: float = 0.0) -> float:
    """The Lagrangian dual at core price ``price`` and tier-4 price ``super_price`` (module
    doc): a min-plus dynamic program over buildings on the group counts (the last building
    only at the full counts: the other buildings' table against its own, reversed)."""
    offset = super_price * t4.switches if t4 is not None else 0.0
    table = None
    for k, b in enumerate(terms):
        cost = b.fixed + core_cost(b, price, t4, super_price)
        best = np.full(int(np.prod(shape)), np.inf)
        best[b.keys] = np.minimum.reduceat(cost, b.starts)
        best = best.reshape(shape)
        if table is None:
            table = best
            continue
        if k == len(terms) - 1:
            reverse = tuple(slice(None, None, -1) for _ in shape)
            return float((table + best[reverse]).min()) - price * cores - offset
        merged = np.full(shape, np.inf)
        for used in zip(*np.nonzero(np.isfinite(table)), strict=True):
            src = tuple(slice(0, n - u) for n, u in zip(shape, used, strict=True))
            dst = tuple(slice(u, n) for n, u in zip(shape, used, strict=True))
            merged[dst] = np.minimum(merged[dst], table[used] + best[src])
        table = merged
    return float(table[tuple(n - 1 for n in shape)]) - price * cores - offset


def golden_max(f, low: float, high: float, steps: int = GOLDEN_STEPS) -> tuple[float, float]:
    """An argument in ``[low, high]`` and the largest value of ``f`` found there by
    ``steps`` of golden-section search (the ends included): the maximum for a
    concave ``f``, a value of ``f`` always."""
    ratio = (5 ** 0.5 - 1) / 2
    seen = [(f(low), low), (f(high), high)]
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = f(a), f(b)
    for _ in range(steps):
        seen += [(fa, a), (fb, b)]
        if fa > fb:
            high, b, fb = b, a, fa
            a = high - ratio * (high - low)
            fa = f(a)
        else:
            low, a, fa = a, b, fb
            b = low + ratio * (high - low)
            fb = f(b)
    value, arg = max(seen + [(fa, a), (fb, b)], key=lambda s: (s[0], -s[1]))
    return arg, value


def building_bound(problem: PlacementProblem, types, max_vectors: int) -> HubBound | None:
    """The Lagrangian building decomposition of the module doc, or ``None`` when a
    building has more than ``max_vectors`` hub vectors."""
    coef = np.array(upper_coefficients(problem)[0], dtype=np.int64)
    groups = buildings(problem)
    far = np.array([min((coef[i][j] for j in range(len(problem.zones))
                         if problem.zones[j].building != problem.zones[i].building),
                        default=0) for i in range(len(problem.zones))])
    size = 0
    for halls in groups:
        count = 1
        for grp, members in types:
            caps = hub_caps(problem, grp, len(members), halls)
            count *= sum(count_compositions(n, caps) for n in range(len(members) + 1))
        size += count
        if count > max_vectors:
            return None
    shape = tuple(len(members) + 1 for _, members in types)
    tables = [hall_leaf_spine_table(problem, types, j) for j in range(len(problem.zones))]
    terms = [building_terms(problem, types, tables, halls, far, coef, shape)
             for halls in groups]
    t4 = fourth_tier(problem)
    reach = [t.room * (np.abs(t.saving) + (0 if t4 is None else t4.far[t.halls])) for t in terms]
    if any(np.abs(t.fixed).max(initial=0) + r.sum(1).max(initial=0) >= FLOAT_EXACT
           for t, r in zip(terms, reach, strict=True)):
        return None
    cores = problem.upper[0].switches

    # The dual's slope in the core price changes only at prices -g_j (with the fourth
    # tier, minus the marginal cost of a core: between far - δ·S_4 - μ·p_4/p_3 and
    # far + δ·(p_4/p_3)·room at tier-4 price μ): its maximum lies between the extremes.
    marginal = [(t.saving, t.saving) if t4 is None else
                (t.saving + t4.far[t.halls] - t4.delta[t.halls] * t4.switches,
                 t.saving + t4.far[t.halls] + t4.delta[t.halls] * t4.ratio * t.room)
                for t in terms]
    low = -max(float(hi.max(initial=0)) for _, hi in marginal)
    high = -min(float(lo.min(initial=0)) for lo, _ in marginal)

    def core_search(super_price: float, steps: int = GOLDEN_STEPS) -> tuple[float, float]:
        return golden_max(lambda price: dual_value(terms, price, shape, cores, t4,
                                                   super_price),
                          low, high + super_price * (t4.ratio if t4 else 0.0), steps)

    price, best = core_search(0.0)
    if t4 is not None:
        # Σ_i z_i = S_4 priced too (module doc): coordinate ascent on the concave dual,
        # μ between 0 and what a tier-4 switch saves at most (δ times the most cores).
        top = float(max((t4.delta[t.halls] * t.room).max(initial=0) for t in terms))

        def super_search(core_price: float) -> tuple[float, float]:
            return golden_max(lambda mu: dual_value(terms, core_price, shape, cores, t4, mu),
                              0.0, top, SUPER_PRICE_STEPS)

        for _ in range(SUPER_PRICE_ROUNDS):
            super_price, priced = super_search(price)
            price, value = core_search(super_price, SUPER_PRICE_STEPS)
            best = max(best, priced, value)
    if not np.isfinite(best):
        return None
    return HubBound(math.floor(best) + higher_tiers_bound(problem, 1 if t4 is None else 2),
                    "by building", size)


def merged_halls(problem: PlacementProblem) -> PlacementProblem:
    """The zone model with each building's halls merged into one zone (module doc): a slot
    costs the least of its ring and a hub in a sibling hall, every other cost is the least
    over the pairs of halls it stands for, room and power add up (capped by the
    building's). Every placement maps onto it at no more cost, so its bound is one of the
    model's."""
    groups = buildings(problem)
    zones = []
    for halls in groups:
        slots: dict[int, int] = {}
        for i in halls:
            sibling = [problem.remote_cost[i][j] for j in halls if j != i]
            for cost, count in zip(problem.zones[i].ring_cost, problem.zones[i].ring_slots,
                                   strict=True):
                cheapest = min([cost, *sibling])
                slots[cheapest] = slots.get(cheapest, 0) + count
        name = problem.zones[halls[0]].building
        power = sum(problem.zones[i].power_cap_w for i in halls)
        zones.append(Zone(name, name, tuple(slots[c] for c in sorted(slots)), tuple(sorted(slots)),
                          sum(problem.zones[i].network_positions for i in halls),
                          min(power, problem.building_cap_w.get(name, power))))

    def least(matrix, a: list[int], b: list[int], same: bool) -> int:
        return min(matrix[i][j] for i in a for j in b if same or i != j)

    remote = tuple(tuple(0 if a is b else least(problem.remote_cost, a, b, False)
                         for b in groups) for a in groups)
    upper = tuple(dataclasses.replace(tier, cost=tuple(tuple(least(tier.cost, a, b, True)
                                                             for b in groups) for a in groups))
                  for tier in problem.upper)
    return PlacementProblem(tuple(zones), problem.groups, problem.block_power_w, remote, upper,
                            dict(problem.building_cap_w))


def hub_bound(problem: PlacementProblem, max_distributions: int = MAX_DISTRIBUTIONS,
              merged: bool = True) -> HubBound | None:
    """:func:`exhaustive_bound` when the distributions number at most
    ``max_distributions`` (with one upper tier it is never below the building bound: it
    solves the per-hall relaxation exactly; with more, the larger of the two), else
    :func:`building_bound`, else (``merged``) the bound of :func:`merged_halls` (method
    "... of merged halls", no hubs); ``None`` when no enumeration fits, or the model has
    no spine-core tier."""
    if not problem.upper or not problem.groups:
        return None
    types = group_types(problem.groups)
    if distribution_count(problem, types) <= max_distributions:
        found = exhaustive_bound(problem, types)
        if found is None or fourth_tier(problem) is None:
            return found
        other = building_bound(problem, types, max_distributions)
        return found if other is None or other.bound <= found.bound else other
    found = building_bound(problem, types, max_distributions)
    if found is None and merged and len(buildings(problem)) < len(problem.zones):
        found = hub_bound(merged_halls(problem), max_distributions)
        if found is not None:
            found = dataclasses.replace(found, method=f"{found.method} of merged halls",
                                        hubs=None)
    return found
