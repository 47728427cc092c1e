"""Map parallel groups onto the cluster hierarchy (CP-SAT), and an exhaustive check.

Hierarchy: levels l = 0..L-1 of growing size (e.g. NVLink domain 8, leaf/rail group
256, pod 24,576, building); the last level is unbounded. Each parallel dimension d
(tp, cp, ep, pp, dp) of degree n_d is factored over the levels, n_d = prod_l f[d,l],
where f[d,l] is how many of its group members sit in distinct level-(l-1) units within
one level-l unit (level 0: GPUs in one NVLink domain). Capacity: prod_d f[d,l] <=
size_l / size_{l-1}. A dimension whose group extends beyond a level-l unit
(prod_{l'>l} f[d,l'] > 1) sends its traffic across that level's uplinks.

Objective: minimise sum_d volume_d * sum_l weight_l * crosses[d,l] (bytes per step
per GPU times the cost of crossing level l: e.g. NVLink->NIC, leaf->spine, and the
oversubscription between pods). TP must stay inside the NVLink domain.

Volumes by exposure (:func:`exposed_volumes`): what a crossing costs is the traffic on
the step's critical path, so a dimension's volume is first its exposed traffic
``T_d · min(1, e_d / (T_d / B))`` (``e_d`` its non-overlapped time in the performance
model's breakdown, ``B`` the NIC bandwidth per GPU), then its whole traffic as a
tie-break: DP, overlapped with the backward pass, crosses the oversubscribed links
before PP or CP, which stall the pipeline.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model


@dataclass(frozen=True)
class Level:
    name: str
    size_gpus: int | None
    """GPUs in one unit of this level (None: unbounded top level)."""
    crossing_weight: int
    """Cost per unit volume of traffic leaving one unit of this level (integer)."""


@dataclass(frozen=True)
class GroupMapping:
    factors: dict[str, tuple[int, ...]]
    """Per dimension, its factor at each level (product = degree)."""
    cost: int
    crosses: dict[str, tuple[str, ...]]
    """Per dimension, the levels whose boundary its traffic crosses."""


def exposed_volumes(traffic_mb: Mapping[str, float], exposed_s: Mapping[str, float],
                    nic_mb_per_s: float, weight_total: int) -> dict[str, int]:
    """Integer volumes ordering the crossings lexicographically: exposed traffic first,
    whole traffic second.

    ``E_d = T_d · min(1, e_d · B / T_d)`` [MB] with ``T_d`` = ``traffic_mb[d]``, ``e_d`` =
    ``exposed_s[d]`` (0 when absent) and ``B`` = ``nic_mb_per_s``; the volume is
    ``round(E_d) · K + round(T_d)`` with ``K = weight_total · Σ_d round(T_d) + 1``
    (``weight_total``: the sum of the levels' crossing weights), so no saving of whole
    traffic outweighs one MB of exposed traffic."""
    whole = {d: max(1, round(t)) for d, t in traffic_mb.items()}
    k = weight_total * sum(whole.values()) + 1
    out = {}
    for d, t in traffic_mb.items():
        exposed = min(t, exposed_s.get(d, 0.0) * nic_mb_per_s) if t > 0 else 0.0
        out[d] = round(exposed) * k + whole[d]
    return out


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _ratios(levels: Sequence[Level]) -> list[int | None]:
    out, below = [], 1
    for lv in levels:
        if lv.size_gpus is None:
            out.append(None)
        else:
            out.append(lv.size_gpus // below)
            below = lv.size_gpus
    return out


def _check(levels: Sequence[Level], degrees: Mapping[str, int]) -> None:
    if levels[-1].size_gpus is not None:
        raise ValueError("the last level must be unbounded (size_gpus None)")
    if any(n < 1 for n in degrees.values()):
        raise ValueError("degrees must be >= 1")


def _cost(levels, degrees, volumes, factors) -> tuple[int, dict[str, tuple[str, ...]]]:
    cost, crosses = 0, {}
    for d in sorted(degrees):
        f = factors[d]
        crossed = []
        for li in range(len(levels) - 1):
            outer = 1
            for x in f[li + 1:]:
                outer *= x
            if outer > 1:
                cost += volumes[d] * levels[li].crossing_weight
                crossed.append(levels[li].name)
        crosses[d] = tuple(crossed)
    return cost, crosses


def map_groups(levels: Sequence[Level], degrees: Mapping[str, int],
               volumes: Mapping[str, int],
               solver: cp_model.CpSolver | None = None) -> GroupMapping | None:
    """Least-cost placement of the parallel groups (CP-SAT). None if infeasible (e.g. TP
    larger than the NVLink domain or the cluster smaller than the job). ``solver``: a
    configured CP-SAT solver (solver.backends.cpsat.mapping_solver); None: CP-SAT's
    defaults with one worker, which is deterministic."""
    _check(levels, degrees)
    ratios = _ratios(levels)
    dims = sorted(degrees)
    m = cp_model.CpModel()
    f, crosses = {}, {}
    for d in dims:
        n = degrees[d]
        for li in range(len(levels)):
            f[d, li] = m.NewIntVarFromDomain(cp_model.Domain.FromValues(divisors(n)),
                                             f"f[{d},{levels[li].name}]")
        m.AddMultiplicationEquality(n, [f[d, li] for li in range(len(levels))])
        if d == "tp":
            for li in range(1, len(levels)):
                m.Add(f[d, li] == 1)
        for li in range(len(levels) - 1):
            outer = m.NewIntVar(1, n, f"outer[{d},{levels[li].name}]")
            m.AddMultiplicationEquality(outer, [f[d, k] for k in range(li + 1, len(levels))])
            crosses[d, li] = m.NewBoolVar(f"crosses[{d},{levels[li].name}]")
            m.Add(outer >= 2).OnlyEnforceIf(crosses[d, li])
            m.Add(outer == 1).OnlyEnforceIf(crosses[d, li].Not())
    for li, ratio in enumerate(ratios):
        if ratio is None:
            continue
        prod = m.NewIntVar(1, ratio, f"used[{levels[li].name}]")
        m.AddMultiplicationEquality(prod, [f[d, li] for d in dims])
    m.Minimize(sum(volumes[d] * levels[li].crossing_weight * crosses[d, li]
                   for d in dims for li in range(len(levels) - 1)))
    if solver is None:
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    factors = {d: tuple(int(solver.Value(f[d, li])) for li in range(len(levels)))
               for d in dims}
    cost, crossed = _cost(levels, degrees, volumes, factors)
    return GroupMapping(factors=factors, cost=cost, crosses=crossed)


def _factorisations(n: int, parts: int) -> list[tuple[int, ...]]:
    if parts == 1:
        return [(n,)]
    return [(d, *rest) for d in divisors(n) for rest in _factorisations(n // d, parts - 1)]


def map_groups_exhaustive(levels: Sequence[Level], degrees: Mapping[str, int],
                          volumes: Mapping[str, int]) -> GroupMapping | None:
    """The same optimum by enumerating every factorisation (small cases only)."""
    _check(levels, degrees)
    ratios = _ratios(levels)
    dims = sorted(degrees)
    options = []
    for d in dims:
        opts = _factorisations(degrees[d], len(levels))
        if d == "tp":
            opts = [o for o in opts if all(x == 1 for x in o[1:])]
        options.append(opts)
    best = None
    for combo in itertools.product(*options):
        ok = True
        for li, ratio in enumerate(ratios):
            if ratio is None:
                continue
            used = 1
            for o in combo:
                used *= o[li]
            if used > ratio:
                ok = False
                break
        if not ok:
            continue
        factors = dict(zip(dims, combo, strict=True))
        cost, crossed = _cost(levels, degrees, volumes, factors)
        if best is None or cost < best.cost:
            best = GroupMapping(factors=factors, cost=cost, crosses=crossed)
    return best
