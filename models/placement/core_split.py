"""A lower bound on the zone model's optimum by enumerating the tier-3 (core) switches
per building: the "core split" bound for sites bounded on merged halls (gb200-campus).

The zone model (:mod:`models.placement.model`) is bilinear only through the tier-3
switches ``y``: the spine-core cost ``Σ_ij c3_ij·D_i·y_j`` and the core-super cost
``Σ_ij c4_ij·y_i·z_j`` are linear in the spines ``D`` and the tier-4 switches ``z`` once
``y`` is fixed. So, per building ``b`` with ``y_b`` cores:

* **Buildings as zones.** Every placement maps onto the buildings (halls merged,
  :func:`models.placement.bound.merged_halls`), each leaf-spine cost the least over the
  halls it stands for. Within a building the tier costs are taken at ``m_b``, the least
  over pairs of *distinct* halls, and what a same-hall pair saves below it is bounded
  apart: ``Σ_{i,j∈b} c_ij·D_i·y_j ≥ m_b·D_b·y_b − Σ_{h∈b} δ_h·D_h·y_h`` with
  ``δ_h = max(0, m_b − c_hh)`` (every other pair in ``b`` costs at least ``m_b``).
* **Same-hall saving** ``U_b(n)`` with ``n`` tier-3 racks in ``b``: a hall holding
  ``n_h`` of them has ``y_h ≤ p_3·n_h`` cores beside at most ``net_h − n_h`` racks of spines
  (``≤ ps`` switches each, ``ps`` the most spines a group puts in one rack) or tier-4
  switches (``≤ p_4`` each), so ``δ3_h·D_h·y_h + δ4_h·y_h·z_h ≤ p_3·n_h·(net_h − n_h)·
  max(δ3_h·ps, δ4_h·p_4)``; ``U_b(n)`` is its largest sum over ``Σ_h n_h = n`` (dynamic
  program over the halls).
* **Fixed cores.** For a fixed ``y`` (``n_b = ⌈y_b/p_3⌉`` racks) the rest is a linear
  program over the merged buildings: hubs, blocks by ring and remote, tier-4 switches and
  racks, network positions (less the ``n_b`` core racks), power (less the least the cores
  of ``n_b`` racks draw), with every integer relaxed. Its value less ``Σ_b U_b(n_b)`` is
  ``≤`` the cost of every placement with those cores per building.
* **Every ``y`` covered.** For fixed racks ``n`` the costs are linear in
  ``y_b = p_3·n_b − e_b`` (``0 ≤ e_b ≤ p_3 − 1``, ``Σ e_b = p_3·Σn − S_3``), so the least
  over ``y`` is at a vertex of that box: at most one ``e_b`` strictly inside, the others
  at ``0`` or ``p_3 − 1``. Rack counts with ``Σ n_b`` from ``⌈S_3/p_3⌉`` up to where the
  box is empty are enumerated; buildings that are interchangeable (same halls and costs)
  are taken in one order only.

The bound is ``min_y [LP(y) − Σ_b U_b(n_b)]`` (floored): valid at every ``y``, exact
in the buildings' split of the cores, where the price-based building dual
(:func:`models.placement.bound.building_bound`) mixes its buildings' choices.
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import highspy
import numpy as np

from models.placement.bound import (
    HubBound,
    buildings,
    count_compositions,
    hub_bound,
    interchangeable,
    merged_halls,
)
from models.placement.problem import PlacementProblem, group_types, upper_coefficients

MAX_SPLITS = 100_000
"""Most splits of the tier-3 racks over the buildings enumerated (gb200-campus: 15,139;
9,751 core vectors after the building symmetry, 1.5 s CPU)."""


def same_hall_saving(problem: PlacementProblem, halls: list[int]) -> list[int] | None:
    """``U_b(n)`` for ``n = 0 … Σ net_h`` tier-3 racks in the building of ``halls`` (module
    doc) [cost units]; ``None`` when a group's spines take no rack (nothing bounds them
    per hall)."""
    if any(not g.spine_racks for g in problem.groups):
        return None
    coef = upper_coefficients(problem)
    # switches one rack beside the cores holds: spines (tier 2), tier-4 switches
    partners = [max(g.spine_switches / g.spine_racks for g in problem.groups),
                *(tier.per_rack for tier in problem.upper[1:2])]
    table = [0.0]
    for h in halls:
        rate = 0.0
        for c, per_rack in zip(coef, partners, strict=False):
            m = min((c[i][j] for i in halls for j in halls if i != j), default=c[h][h])
            rate = max(rate, max(0, m - c[h][h]) * per_rack)
        net = problem.zones[h].network_positions
        hall = [problem.upper[0].per_rack * n * (net - n) * rate for n in range(net + 1)]
        table = [max(table[n - k] + hall[k] for k in range(len(hall)) if 0 <= n - k < len(table))
                 for n in range(len(table) + net)]
    return [math.ceil(v) for v in table]


def split_own(problem: PlacementProblem, merged: PlacementProblem) -> PlacementProblem:
    """``merged`` with each building's own tier cost at the least over its distinct halls
    (its own hall's when it has one)."""
    groups = buildings(problem)
    upper = []
    for tier, mtier in zip(problem.upper, merged.upper, strict=True):
        cost = [list(row) for row in mtier.cost]
        for b, halls in enumerate(groups):
            pairs = [tier.cost[i][j] for i in halls for j in halls if i != j]
            cost[b][b] = min(pairs) if pairs else tier.cost[halls[0]][halls[0]]
        upper.append(dataclasses.replace(mtier, cost=tuple(map(tuple, cost))))
    return dataclasses.replace(merged, upper=tuple(upper))


def rack_totals(switches: int, per_rack: int, caps: list[int]) -> range:
    """The tier-3 rack totals ``Σ n_b`` the vertices of the module doc can have: from
    ``⌈S_3/p_3⌉`` while ``p_3·Σn − S_3 ≤ nz·(p_3 − 1)`` and the zones hold them."""
    low = -(-switches // per_rack)
    high = min(sum(caps), (switches + len(caps) * (per_rack - 1)) // per_rack)
    return range(low, high + 1)


def core_vectors(switches: int, per_rack: int, caps: list[int],
                 same: list[list[int]]) -> list[tuple[int, ...]]:
    """Every vertex ``y`` of the module doc: tier-3 switches per zone, ``⌈y_b/p_3⌉ ≤
    caps[b]``; zones in one class of ``same`` in non-increasing order only. A vertex of
    ``Σ e_b = E`` takes ``e_b = p_3 − 1`` in ``⌊E/(p_3 − 1)⌋`` zones with racks, the rest of
    ``E`` in one more, 0 elsewhere."""
    out = set()
    for total in rack_totals(switches, per_rack, caps):
        spare = per_rack * total - switches
        full, rest = divmod(spare, per_rack - 1) if per_rack > 1 else (0, spare)
        for racks in _compositions(total, caps):
            held = [b for b in range(len(caps)) if racks[b]]
            for chosen in itertools.combinations(held, full):
                partial = [b for b in held if b not in chosen] if rest else [None]
                for k in partial:
                    e = [per_rack - 1 if b in chosen else rest if b == k else 0
                         for b in range(len(caps))]
                    y = tuple(per_rack * n - x for n, x in zip(racks, e, strict=True))
                    if all(y[a] >= y[b] for cls in same for a, b in itertools.pairwise(cls)):
                        out.add(y)
    return sorted(out)


def _compositions(total: int, caps: list[int]):
    if len(caps) == 1:
        if total <= caps[0]:
            yield (total,)
        return
    for x in range(max(0, total - sum(caps[1:])), min(caps[0], total) + 1):
        for rest in _compositions(total - x, caps[1:]):
            yield (x, *rest)


class FixedCoreLP:
    """The linear program of a fixed ``y`` on the merged buildings (module doc), passed
    once to ``highs`` (a ``highspy.Highs`` configured by the caller:
    ``solver.backends.highs.bound_lp``); :meth:`value` changes the costs and right-hand
    sides and re-solves."""

    def __init__(self, merged: PlacementProblem, highs):
        self.p = merged
        self.types = group_types(merged.groups)
        zones, nz = merged.zones, len(merged.zones)
        self.cols: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.rows: list[tuple[dict[int, float], float, float]] = []
        inf = highspy.kHighsInf
        self.hub = {}
        loc, rem = {}, {}
        for ty, (grp, members) in enumerate(self.types):
            for h in range(nz):
                self.hub[ty, h] = self._col(0.0, len(members))
                for k, c in enumerate(zones[h].ring_cost):
                    loc[ty, h, k] = self._col(grp.links_per_block * c, inf)
                for j in range(nz):
                    if j != h:
                        rem[ty, h, j] = self._col(grp.links_per_block * merged.remote_cost[h][j],
                                                  inf)
        two = len(merged.upper) > 1
        self.sw4 = [self._col(0.0, merged.upper[1].switches) for _ in range(nz)] if two else []
        racks4 = [self._col(0.0, inf) for _ in range(nz)] if two else []
        for ty, (grp, members) in enumerate(self.types):
            self._row({self.hub[ty, h]: 1 for h in range(nz)}, len(members), len(members))
            for h, z in enumerate(zones):
                terms = {loc[ty, h, k]: 1 for k in range(len(z.ring_slots))}
                terms |= {rem[ty, i, h]: 1 for i in range(nz) if i != h}
                terms[self.hub[ty, h]] = -grp.blocks
                self._row(terms, 0, 0)
        for h, z in enumerate(zones):
            for k, slots in enumerate(z.ring_slots):
                self._row({loc[ty, h, k]: 1 for ty in range(len(self.types))}, -inf, slots)
        blocks_in = [{**{loc[ty, h, k]: 1 for ty in range(len(self.types))
                         for k in range(len(z.ring_slots))},
                      **{rem[ty, h, j]: 1 for ty in range(len(self.types))
                         for j in range(nz) if j != h}} for h, z in enumerate(zones)]
        for h, z in enumerate(zones):
            self._row(blocks_in[h], -inf, sum(z.ring_slots))
        if two:
            tier4 = merged.upper[1]
            self._row({c: 1 for c in self.sw4}, tier4.switches, tier4.switches)
            for h in range(nz):
                self._row({racks4[h]: tier4.per_rack, self.sw4[h]: -1}, 0, inf)
        self.net_rows, self.power_rows = [], []
        for h in range(nz):
            terms = {self.hub[ty, h]: grp.spine_racks for ty, (grp, _) in enumerate(self.types)}
            if two:
                terms[racks4[h]] = 1
            self.net_rows.append(self._row(terms, -inf, 0))
        for h in range(nz):
            terms = {c: merged.block_power_w for c in blocks_in[h]}
            terms |= {self.hub[ty, h]: grp.spine_power_w
                      for ty, (grp, _) in enumerate(self.types)}
            if two:
                terms[self.sw4[h]] = merged.upper[1].switch_power_w
            self.power_rows.append(self._row(terms, -inf, 0))
        self.h = highs
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(self.cols), len(self.rows)
        lp.col_cost_ = np.array(self.cols)
        lp.col_lower_, lp.col_upper_ = np.array(self.lower), np.array(self.upper)
        lp.row_lower_ = np.array([r[1] for r in self.rows], dtype=float)
        lp.row_upper_ = np.array([r[2] for r in self.rows], dtype=float)
        starts, index, value = [], [], []
        by_col: list[list[tuple[int, float]]] = [[] for _ in self.cols]
        for r, (terms, _, _) in enumerate(self.rows):
            for c, a in terms.items():
                by_col[c].append((r, a))
        for entries in by_col:
            starts.append(len(index))
            index += [r for r, _ in entries]
            value += [a for _, a in entries]
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.array(starts + [len(index)], dtype=np.int32)
        lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(value, dtype=float)
        self.h.passModel(lp)
        self.coef = [np.array(c, dtype=float) for c in upper_coefficients(merged)]

    def _col(self, cost: float, upper: float) -> int:
        self.cols.append(float(cost))
        self.lower.append(0.0)
        self.upper.append(float(upper))
        return len(self.cols) - 1

    def _row(self, terms: dict[int, float], lower: float, upper: float) -> int:
        self.rows.append((terms, lower, upper))
        return len(self.rows) - 1

    def value(self, y: tuple[int, ...]) -> float:
        """The LP's least cost with ``y`` tier-3 switches per building (inf: infeasible).
        Their power is counted as the least ``y_b`` with the same racks draws
        (``p_3·(n_b − 1) + 1``), so the constraints depend on the racks ``n`` alone and the
        cost is linear in ``y`` for fixed ``n`` (the vertex argument of the module doc)."""
        p, nz = self.p, len(self.p.zones)
        yv = np.array(y, dtype=float)
        tier3 = p.upper[0]
        per_spine = self.coef[0] @ yv
        cols = [self.hub[ty, h] for ty in range(len(self.types)) for h in range(nz)]
        costs = [grp.spine_switches * per_spine[h] for grp, _ in self.types for h in range(nz)]
        if self.sw4:
            cols += self.sw4
            costs += list(yv @ self.coef[1])
        self.h.changeColsCost(len(cols), np.array(cols, dtype=np.int32),
                              np.array(costs, dtype=float))
        racks3 = -(-yv // tier3.per_rack)
        least = np.maximum(0, tier3.per_rack * (racks3 - 1) + 1)
        rows = self.net_rows + self.power_rows
        upper = ([z.network_positions - racks3[h] for h, z in enumerate(p.zones)]
                 + [z.power_cap_w - tier3.switch_power_w * least[h]
                    for h, z in enumerate(p.zones)])
        n = len(rows)
        self.h.changeRowsBounds(n, np.array(rows, dtype=np.int32),
                                np.full(n, -highspy.kHighsInf), np.array(upper, dtype=float))
        self.h.run()
        if self.h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return math.inf
        return self.h.getInfo().objective_function_value


def core_split_bound(problem: PlacementProblem, highs,
                     max_splits: int = MAX_SPLITS) -> HubBound | None:
    """The bound of the module doc, its linear programs solved by ``highs``
    (:class:`FixedCoreLP`); ``None`` with more than two upper tiers, more than
    ``max_splits`` rack splits, or no feasible one."""
    if not problem.groups or len(problem.upper) not in (1, 2):
        return None
    groups = buildings(problem)
    saving = [same_hall_saving(problem, halls) for halls in groups]
    if any(s is None for s in saving):
        return None
    merged = split_own(problem, merged_halls(problem))
    tier3 = merged.upper[0]
    anonymous = dataclasses.replace(merged, zones=tuple(
        dataclasses.replace(z, name="", building="") for z in merged.zones))
    same: list[list[int]] = []
    for b in range(len(groups)):
        home = next((c for c in same if saving[c[0]] == saving[b]
                     and interchangeable(anonymous, c[0], b)), None)
        if home is None:
            same.append([b])
        else:
            home.append(b)
    caps = [min(z.network_positions, -(-tier3.switches // tier3.per_rack))
            for z in merged.zones]
    racks = sum(count_compositions(n, caps)
                for n in rack_totals(tier3.switches, tier3.per_rack, caps))
    if racks > max_splits:
        return None
    vectors = core_vectors(tier3.switches, tier3.per_rack, caps, same)
    if not vectors:
        return None
    lp = FixedCoreLP(merged, highs)
    best = math.inf
    for y in vectors:
        racks = [-(-v // tier3.per_rack) for v in y]
        value = lp.value(y) - sum(s[n] for s, n in zip(saving, racks, strict=True))
        best = min(best, value)
    if not math.isfinite(best):
        return None
    return HubBound(math.floor(best), "by core split", len(vectors))


def site_bound(problem: PlacementProblem, highs=None) -> HubBound | None:
    """:func:`models.placement.bound.hub_bound` when it enumerates every hub distribution
    or ``highs`` is not given; else the larger of its building bound and
    :func:`core_split_bound`, and its bound on merged halls only when neither exists
    (gb200-campus: the core split $657.2M in 1.5 s CPU against the merged halls' $636.6M
    in 10 s)."""
    if highs is None:
        return hub_bound(problem)
    found = hub_bound(problem, merged=False)
    if found is not None and found.method == "exhaustive":
        return found
    split = core_split_bound(problem, highs)
    if split is None:
        return found or hub_bound(problem)
    return split if found is None or split.bound > found.bound else found
