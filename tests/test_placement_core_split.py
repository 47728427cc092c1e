"""The core-split lower bound of the placement zone model (models.placement.core_split):
its enumeration against brute force, the same-hall saving by hand, and validity against
CP-SAT's proven optimum on small sites."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys

import numpy as np
import pytest
from test_placement_bound import gb200_like_problem, proven_optimum, random_problem

from models.placement import core_split
from models.placement.model import build_model, descend, mixed_upper, solve
from models.placement.problem import Group, PlacementProblem, UpperTier, Zone
from solver.backends import SolveOptions
from solver.backends.cpsat import placement_first_pass, placement_hub_pass, placement_solver
from solver.backends.highs import bound_lp


@pytest.mark.parametrize("seed", range(20))
def test_core_vectors_reach_the_least_of_any_cost_linear_for_fixed_racks(seed):
    """For every rack vector ``n`` a cost ``g(n) + w(n)·y`` over all ``y`` with
    ``Σ y = S``, ``⌈y_b/p⌉ = n_b ≤ caps_b`` (brute force) is least at an enumerated
    vector."""
    rng = random.Random(seed)
    nz, per_rack = rng.randint(2, 3), rng.randint(1, 4)
    caps = [rng.randint(0, 4) for _ in range(nz)]
    switches = rng.randint(1, per_rack * sum(caps)) if sum(caps) else 0
    vectors = core_split.core_vectors(switches, per_rack, caps, [])
    racks_of = {}
    for y in itertools.product(*[range(per_rack * c + 1) for c in caps]):
        if sum(y) == switches:
            racks_of[y] = tuple(-(-v // per_rack) for v in y)
    assert set(vectors) <= set(racks_of)
    for _ in range(20):
        g = {n: rng.uniform(0, 50) for n in set(racks_of.values())}
        w = {n: [rng.uniform(-5, 5) for _ in range(nz)] for n in g}

        def cost(y, g=g, w=w):
            n = racks_of[y]
            return g[n] + float(np.dot(w[n], y))

        assert min(map(cost, vectors)) == pytest.approx(min(map(cost, racks_of)))


def test_core_vectors_keep_one_order_of_interchangeable_zones():
    """Zones 0 and 1 interchangeable: only y_0 ≥ y_1; every vector's mirror image is
    covered."""
    all_ = core_split.core_vectors(7, 2, [3, 3, 2], [])
    kept = core_split.core_vectors(7, 2, [3, 3, 2], [[0, 1]])
    assert all(y[0] >= y[1] for y in kept)
    assert {(max(y[:2]), min(y[:2]), y[2]) for y in all_} == set(kept)


def test_same_hall_saving_by_hand():
    """One building of two halls with 4 network positions each; tier-3 costs 10 in a hall,
    13 between the halls (δ = 3); spines 2 per rack, 3 cores per rack; one upper tier.
    A hall with n core racks saves at most 3 · (3·n) · 2·(4 − n) = 18·n·(4 − n):
    0, 54, 72, 54, 0; the building's best split of n racks over both halls:
    n = 2: 54 + 54 = 108 (not 72 + 0); n = 4: 72 + 72 = 144."""
    zones = (Zone("b/h1", "b", (1,), (1,), 4, 10**9), Zone("b/h2", "b", (1,), (1,), 4, 10**9))
    groups = (Group(1, 1, 2, 1, 1),)
    links = 2 * 3  # round(links·cost/(S_2·S_3)) = cost with S_2 = 2, S_3 = 3
    upper = (UpperTier("spine-core", 3, 3, 1, links, ((10, 13), (13, 10))),)
    p = PlacementProblem(zones, groups, 1, ((0, 5), (5, 0)), upper, {"b": 10**9})
    assert core_split.same_hall_saving(p, [0, 1]) == [0, 54, 108, 126, 144, 126, 108, 54, 0]


@pytest.mark.parametrize("seed", range(16))
def test_core_split_bound_is_below_the_proven_optimum(seed):
    """Two upper tiers (gb200-like) and one (random sites): never above CP-SAT's proven
    optimum; infeasible sites have no bound."""
    for p in (gb200_like_problem(seed), random_problem(seed)):
        best = proven_optimum(p)
        found = core_split.core_split_bound(p, bound_lp())
        if best is None:
            assert found is None
        else:
            assert found is not None and found.bound <= best, (found, best)


def test_core_split_bound_needs_the_same_hall_saving(monkeypatch):
    """Without the same-hall saving (every pair in a building at its distinct halls'
    least cost), the bound rises above the optimum on some gb200-like sites: the term is
    what keeps it valid."""
    monkeypatch.setattr(core_split, "same_hall_saving", lambda p, halls: [0] * (
        1 + sum(p.zones[h].network_positions for h in halls)))
    over = 0
    for seed in range(8):
        p = gb200_like_problem(seed)
        best, found = proven_optimum(p), core_split.core_split_bound(p, bound_lp())
        over += best is not None and found.bound > best
    assert over > 0


@pytest.mark.parametrize("seed", [0, 5, 7, 9])
def test_solve_with_the_core_split_bound_stops_within_the_gap_of_the_optimum(seed):
    """The whole placement solve given the bound's LP solver: its bound stays below the
    proven optimum and its placement within the 2% gap of that bound."""
    p = gb200_like_problem(seed)
    best = proven_optimum(p)
    options = SolveOptions(placement_time_limit_s=10)
    sol = solve(p, placement_solver(options), placement_first_pass(options),
                placement_hub_pass(options), bound_lp())
    assert sol.bound <= best <= sol.objective
    assert sol.within(options.placement_gap)


def test_the_bound_lp_prints_nothing():
    """HiGHS prints a banner at a process's first instance; bound_lp captures it (a
    placement's --json output stays clean)."""
    script = ("from solver.backends.highs import bound_lp; h = bound_lp(); h.run(); "
              "print('done')")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout == "done\n"


def test_mixed_upper_by_hand():
    """Zones of 5 network positions; tiers of 12 switches (2 a rack: 6 racks) and 3 (1 a
    rack). Zone 0 takes 5 of the 9 racks in proportion, 5·6//9 = 3 and 5·3//9 = 1, the
    one left to the first tier: 4 + 1 racks, 8 + 1 switches; zone 1 the rest: 2 + 2 racks,
    4 + 2 switches."""
    zones = (Zone("b/h1", "b", (1,), (1,), 5, 10**9), Zone("b/h2", "b", (1,), (1,), 5, 10**9))
    cost = ((1, 2), (2, 1))
    upper = (UpperTier("spine-core", 12, 2, 1, 24, cost),
             UpperTier("core-super", 3, 1, 1, 36, cost))
    p = PlacementProblem(zones, (Group(1, 1, 2, 1, 1),), 1, ((0, 5), (5, 0)), upper,
                         {"b": 10**9})
    assert mixed_upper(p) == ((8, 4), (1, 2))


@pytest.mark.parametrize("seed", [0, 5, 7])
def test_descent_from_mixed_upper_places_no_better_than_the_optimum(seed):
    p = gb200_like_problem(seed)
    best = proven_optimum(p)
    model, v = build_model(p)
    found = descend(p, model, v, placement_hub_pass(SolveOptions()), None, mixed_upper(p))
    assert found is None or found.objective >= best
