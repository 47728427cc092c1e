"""Candidate pruning before the MILP: exact for the limits, a bound for the objective.

Every limit of the design MILP involves only the one chosen candidate, so whether a
candidate k can be built is decided by closed forms:
  IT power       (1+f) P_k <= P_cap
  budget         E_k + c_MW (1+f) P_k / 1e6 (+ years * opex)  <= B
  GPU range      min_gpus <= g_k <= max_gpus;   requirements  T_k >= T_req, G_k >= G_min
  buildings      U_k <= sum_b min(floor(P_b / ((1+f) u_P)), floor(R_b / u_R))
                 (1+f) (U_k u_P + N_k) <= sum_b P_b;   U_k u_R + NR_k <= sum_b R_b
                 B_k <= sum_b min(S_{k,b}, floor(P_b / u_B))   (placement blocks of
                 u_B watts in the halls' block slots and the buildings' power; the
                 building holding the largest spine group G whole, floor((P_h - G)/u_B),
                 :func:`hub_fits`)
                 pods in buildings: building i takes pod i (:func:`pods_fit`), its nodes
                 counted as they are (a pod smaller than one unit is not a whole unit)
with U_k scalable units of u_P watts and u_R racks, N_k / NR_k the network power and
racks, which the MILP may split across buildings continuously (but for G). The building conditions
are exact: the leftover of every building sums to the same total whatever the integer
SU placement, and network equipment can fill any leftover.

Let LB be the best objective value among buildable candidates. A candidate that cannot
be built, or whose value is below LB, is never optimal and is dropped; ties are kept
for the MILP's second (cheapest-design) stage. Throughput may be a lower bound with an
upper bound beside it (and goodput interpolated); `to_refine` names the candidates that
must be evaluated exactly before this argument holds: those that could be buildable and
reach LB with their upper bounds. For goodput the "upper bound" is the interpolated value
plus GOODPUT_TOL, a tolerance measured in tests (interpolation stays within 1%), not a
proven bound. `elastic_candidates` keeps, for the
diagnosis, each configuration's smallest candidate that meets the requirements: cost,
power, SUs and network equipment are non-decreasing in size, so larger ones need more of
every limit.

The closed forms are evaluated for every candidate at once, over the candidates' columns
(models.design.data.LimitColumns, laid out once with the candidates and kept through
refine): :func:`fitting` is the mask of the IT power, budget and building limits, kept
with the columns per set of limits, so refine, prune and the runner-ups of one solve
share one evaluation (a sweep's scenarios each apply theirs to the same columns). The
one-candidate functions (:func:`within_limits`, :func:`fits_buildings`,
:func:`meets_requirements`) are the same code on a one-row column set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from models import power_cost, tco
from models.design.data import Candidate, DesignData, LimitColumns
from models.tco import AnnualCost

REL_TIE = 1e-9
GOODPUT_TOL = 0.02
"""Allowance on interpolated goodput when deciding what to evaluate exactly (interpolation
along the ladder stays within 1% of exact in tests/test_design_data.py)."""


def within(value, limit: float):
    """``value`` (a float or an array) meets the upper limit ``limit`` (to REL_TIE,
    rounding of equal sums)."""
    return value <= limit * (1 + REL_TIE)


def it_power_w(data: DesignData, k: Candidate) -> float:
    """Critical IT power of a candidate (models.power_cost; DesignData carries the
    facility figures) [W]."""
    return power_cost.it_power_w(k.equipment_power_w, data)


def facility_usd(data: DesignData, k: Candidate) -> float:
    """The facility built for k (models.facility), else the data's $/MW [USD]."""
    if k.facility is not None:
        return k.facility.capex_usd
    return power_cost.facility_capex_usd(it_power_w(data, k), data)


def annual_opex_usd(data: DesignData, k: Candidate) -> float:
    """Electricity of one year through the PUE of k's facility [USD/yr]."""
    pue = k.facility.pue if k.facility is not None else data.pue
    return power_cost.energy_cost_usd(it_power_w(data, k), pue, data.electricity_usd_per_kwh)


def capex_usd(data: DesignData, k: Candidate) -> float:
    return k.equipment_capex_usd + facility_usd(data, k)


def tco_usd(data: DesignData, k: Candidate) -> float:
    return capex_usd(data, k) + data.years * annual_opex_usd(data, k)


def annual_cost(data: DesignData, k: Candidate, effective_tokens_per_s: float | None = None
                ) -> AnnualCost:
    """Full cost of a year of k (models.tco); throughput k's unless given."""
    gpus = (k.nodes + k.spare_nodes) * (k.gpus // k.nodes)
    return tco.annual_cost(data.tco_rates, data.years, k.equipment_capex_usd,
                           facility_usd(data, k), annual_opex_usd(data, k), gpus,
                           it_power_w(data, k),
                           k.effective_tokens_per_s if effective_tokens_per_s is None
                           else effective_tokens_per_s)


def meets_requirements(data: DesignData, k: Candidate, optimistic: bool = False) -> bool:
    """GPU range, throughput and goodput requirements for candidate k
    (:func:`requirements_met`)."""
    return bool(requirements_met(data, LimitColumns.of(data.configs, (k,)), optimistic)[0])


def requirements_met(data: DesignData, col: LimitColumns, optimistic: bool = False
                     ) -> np.ndarray:
    """GPU range, throughput and goodput requirements, for every candidate of ``col``;
    `optimistic` uses a candidate's upper bounds when it is not exact (throughput bound,
    goodput + GOODPUT_TOL)."""
    good, tput = col.goodput, col.tokens_per_s * col.goodput
    if optimistic:
        good = np.where(col.exact, good, good * (1 + GOODPUT_TOL))
        tput = np.where(col.exact, tput, col.tokens_per_s_upper * good)
    return ((col.gpus >= data.min_gpus) & (data.max_gpus is None or col.gpus <= data.max_gpus)
            & (tput >= data.required_effective_tokens_per_s) & (good >= data.min_goodput)
            & (col.site_availability >= data.min_site_availability))


def fits_buildings(data: DesignData, k: Candidate, power: bool = True,
                   space: bool = True) -> bool:
    """The building conditions above for candidate k (:func:`building_mask`)."""
    return bool(building_mask(data, LimitColumns.of(data.configs, (k,)), power, space)[0])


def building_mask(data: DesignData, col: LimitColumns, power: bool = True,
                  space: bool = True) -> np.ndarray:
    """The building conditions above for every candidate of ``col`` (a bool per
    candidate); `power` / `space` False leaves that resource out (to tell which one
    stops a design); pods aligned with the site by :func:`pods_fit`."""
    f, tie = 1 + data.non_server_it_fraction, 1 + REL_TIE
    units = np.zeros(len(col))  # sum over buildings of the units each takes
    for b in data.buildings:
        by_power = (np.floor(b.it_power_w / (f * col.su_w) * tie) if power
                    else col.su_count)
        by_space = (np.floor(b.max_racks / col.su_racks)
                    if space and b.max_racks is not None else by_power)
        units = units + np.minimum(by_power, by_space)
    # one pod per building counts the nodes each pod has (milp.add_building_power)
    power_ok = not power or f * (col.server_w + col.network_power_w) <= sum(
        b.it_power_w for b in data.buildings) * tie
    racks = [b.max_racks for b in data.buildings]
    space_ok = (not space or None in racks
                or col.su_count * col.su_racks + col.network_racks <= sum(racks))
    by_power = {b.name: np.floor(b.block_power_cap_w / col.block_power_w * tie)
                if power else col.blocks for b in data.buildings}
    none = np.zeros(len(col), np.int64)
    room = {b: np.minimum(col.block_slots.get(b, none) if space else by_power[b],
                          by_power[b]) for b in by_power}
    pods = col.pods_in_buildings
    slots_ok = np.where(pods, not space or col.blocks <= col.block_slots_total,
                        hub_fits(data, col, room, power))
    units_ok = np.where(pods, pods_fit(data, col, power, space), col.su_count <= units)
    racks_powered = not power or col.blocks_w + col.network_rack_power_w <= sum(
        b.block_power_cap_w for b in data.buildings) * tie
    return units_ok & power_ok & space_ok & slots_ok & racks_powered


def hub_fits(data: DesignData, col: LimitColumns, room: dict[str, np.ndarray],
             power: bool) -> np.ndarray:
    """The candidates' blocks fit the buildings' ``room`` (blocks each takes) with their
    largest tier-2 group's spines, G (:func:`spine_hub_w`), whole in some building h (the
    MILP's spine_hub family), which then takes ``⌊(cap_h - G) / u_B⌋`` blocks by power:
    ``B_k <= max_h sum_b room'_b``. Exact with the block_power total: the other network
    racks may fill any building's leftover."""
    total = sum(room.values())
    if not power or len(data.buildings) < 2:
        return col.blocks <= total
    hub_w = np.fromiter((spine_hub_w(data, k) for k in col.candidates), float, len(col))
    some_hub = np.full(len(col), False)
    for h in data.buildings:
        hub_room = np.floor((h.block_power_cap_w - hub_w) / col.block_power_w
                            * (1 + REL_TIE))
        some_hub |= (within(hub_w, h.block_power_cap_w)
                     & (col.blocks <= total - room[h.name] + np.minimum(room[h.name],
                                                                         hub_room)))
    return np.where(hub_w <= 0, col.blocks <= total, some_hub)


def spine_hub_w(data: DesignData, k: Candidate) -> float:
    """Network-rack power of candidate k that stands whole in one building [W]: its
    largest tier-2 group's spines (placement's hub, models.space.SpaceLayout.
    group_spine_power_w); 0 with pods aligned with the site (milp.add_pod_power holds
    each pod's spines in its own site)."""
    return 0.0 if data.configs[k.config].pods_in_buildings else k.extra["group_spine_power_w"]


def pods_fit(data: DesignData, col: LimitColumns, power: bool, space: bool) -> np.ndarray:
    """Pods aligned with the site (models.design.milp.add_pods_in_buildings,
    add_building_power, add_pod_power, add_pod_hall_slots), for every candidate of
    ``col`` (meaningful where its pods are aligned): pod i stands whole in its site
    (building i, or hall i with one pod per hall): its ``B_k/P`` blocks within the site's
    slots and the pod's placement power within the site's power; each building b takes
    its ``p_b`` pods: their blocks within its slots, their blocks' placement power
    (``pod_blocks_power_w``: the nodes each pod has) within its block-power cap, their
    ``n_i`` nodes within its power, ``(1+f) Σ n_i node_W <= P_b``, and their
    ``p_b ⌈⌈n/P⌉/su⌉`` units' racks within its ``max_racks``. With the totals of
    :func:`fits_buildings` this is exact: the network power and racks may take any
    building's leftover."""
    f = 1 + data.non_server_it_fraction
    ok = np.full(len(col), True)
    for in_halls in (False, True):
        group = col.pods_in_buildings & (col.pods_in_halls == in_halls)
        if not group.any():
            continue
        sites = data.sites(in_halls)
        fit = np.full(len(col), True)
        for i, site in enumerate(sites):
            if in_halls and space:
                fit &= col.pod_blocks <= col.hall_block_slots[:, i]
            if power:
                fit &= within(col.pod_power_w, site.rack_power_w)
        for b in data.buildings:
            mine = [i for i, site in enumerate(sites) if site.building == b.name]
            if space:
                fit &= col.pod_blocks * len(mine) <= col.block_slots.get(
                    b.name, np.zeros(len(col), np.int64))
                if b.max_racks is not None:
                    fit &= col.pod_racks * len(mine) <= b.max_racks
            if power:
                blocks_w, nodes = 0, 0
                for i in mine:
                    blocks_w, nodes = (blocks_w + col.pod_blocks_power_w[:, i],
                                       nodes + col.pod_nodes[:, i])
                fit &= within(blocks_w, b.block_power_cap_w)
                fit &= within(f * nodes * col.node_power_w, b.it_power_w)
        ok = np.where(group, fit, ok)
    return ok


def buildable(data: DesignData, k: Candidate, optimistic: bool = False) -> bool:
    """All limits of the instance hold for candidate k (closed forms above)."""
    return within_limits(data, k) and meets_requirements(data, k, optimistic)


def within_limits(data: DesignData, k: Candidate) -> bool:
    """IT power, budget and buildings hold for candidate k (:func:`limits_mask`)."""
    return bool(limits_mask(data, LimitColumns.of(data.configs, (k,)))[0])


def limits_mask(data: DesignData, col: LimitColumns) -> np.ndarray:
    """IT power, budget and buildings hold, for every candidate of ``col`` (buildable
    without the requirements, which do not depend on them)."""
    it_w = power_cost.it_power_w(col.equipment_power_w, data)
    capex = col.equipment_capex_usd + np.where(
        col.has_facility, col.facility_capex_usd, power_cost.facility_capex_usd(it_w, data))
    if data.budget_basis == "tco":
        pue = np.where(col.has_facility, col.facility_pue, data.pue)
        spend = capex + data.years * power_cost.energy_cost_usd(
            it_w, pue, data.electricity_usd_per_kwh)
    else:
        spend = capex
    return (within(it_w, data.it_power_cap_w) & within(spend, data.budget_usd)
            & building_mask(data, col))


def columns(data: DesignData) -> LimitColumns:
    """The limit columns of data's candidates: the ones built with them, else built now."""
    col = data.columns
    if col is None or col.candidates is not data.candidates:
        col = LimitColumns.of(data.configs, data.candidates)
    return col


MASKS_KEPT = 4
"""Limit masks kept with one candidate set's columns (a sweep's scenarios each bring
theirs; one solve needs one, or two when a re-solve holds the IT power lower)."""


def fitting(data: DesignData) -> np.ndarray:
    """:func:`limits_mask` of data's candidates, computed once per set of limits and kept
    with their columns: refine, prune and the runner-ups of one solve share it."""
    col = columns(data)
    key = (data.it_power_cap_w, data.budget_usd, data.budget_basis, data.buildings,
           data.non_server_it_fraction, data.pue, data.build_usd_per_mw,
           data.electricity_usd_per_kwh, data.years)
    mask = col.masks.get(key)
    if mask is None:  # (Dask's worker threads may share the columns: no read-back)
        mask = limits_mask(data, col)
        mask.flags.writeable = False
        if len(col.masks) >= MASKS_KEPT:  # a sweep's scenarios: keep the latest few
            col.masks.clear()
        col.masks[key] = mask
    return mask


def objective_value(data: DesignData, k: Candidate) -> float:
    """The objective as a quantity to maximise."""
    if data.objective == "max_effective_throughput":
        return k.effective_tokens_per_s
    if data.objective == "min_usd_per_million_tokens":
        return -annual_cost(data, k).usd_per_million_tokens
    return -(tco_usd(data, k) if data.objective == "min_tco" else capex_usd(data, k))


def objective_values(data: DesignData, index: np.ndarray) -> np.ndarray:
    """:func:`objective_value` of data's candidates at ``index``."""
    if data.objective == "max_effective_throughput":
        col = columns(data)
        return (col.tokens_per_s * col.goodput)[index]
    return np.fromiter((objective_value(data, data.candidates[i]) for i in index), float,
                       len(index))


def buildable_index(data: DesignData) -> np.ndarray:
    """Indices of data's buildable candidates: within the limits (:func:`fitting`),
    meeting the requirements (:func:`requirements_met`)."""
    return np.flatnonzero(fitting(data) & requirements_met(data, columns(data)))


def to_refine(data: DesignData) -> list[Candidate]:
    """Candidates not evaluated exactly whose bounds could make them optimal: buildable
    with their upper bounds, and (upper) objective value >= the best lower value LB."""
    col = columns(data)
    sure = buildable_index(data)
    best = objective_values(data, sure).max() if len(sure) else -math.inf
    hopeful = np.flatnonzero(fitting(data) & ~col.exact
                             & requirements_met(data, col, optimistic=True))
    if data.objective == "max_effective_throughput":
        values = (col.tokens_per_s_upper * col.goodput * (1 + GOODPUT_TOL))[hopeful]
    elif data.objective == "min_usd_per_million_tokens":
        values = np.fromiter((-annual_cost(data, k, k.effective_tokens_per_s_upper
                                           * (1 + GOODPUT_TOL)).usd_per_million_tokens
                              for k in (data.candidates[i] for i in hopeful)),
                             float, len(hopeful))
    else:
        values = objective_values(data, hopeful)
    return [data.candidates[i] for i in hopeful[values >= best - REL_TIE * abs(best)]]


def prune(data: DesignData, bound: bool = True) -> DesignData:
    """Drop candidates that cannot be built or (when `bound`) are beaten by a buildable
    one. Without the bound every buildable candidate stays: for user constraints added to
    the MILP, which the closed forms here do not know."""
    ok = buildable_index(data)
    if not len(ok) or not bound:
        return _restrict(data, ok)
    values = objective_values(data, ok)
    best = values.max()
    return _restrict(data, ok[values >= best - REL_TIE * abs(best)])


def elastic_candidates(data: DesignData) -> DesignData:
    """Per configuration, the smallest candidate that meets the requirements."""
    smallest: dict[str, int] = {}
    for i in np.flatnonzero(requirements_met(data, columns(data))):
        k = data.candidates[i]
        if k.config not in smallest or k.nodes < data.candidates[smallest[k.config]].nodes:
            smallest[k.config] = i
    return _restrict(data, [smallest[c] for c in sorted(smallest)])


def _restrict(data: DesignData, keep: Sequence[int]) -> DesignData:
    configs = {data.candidates[i].config for i in keep}
    return restricted(replace(data, configs={c: cfg for c, cfg in data.configs.items()
                                             if c in configs}), keep)


def restricted(data: DesignData, keep: Sequence[int]) -> DesignData:
    """``data`` with only its candidates at the indices ``keep`` (any order), their
    columns taken from data's."""
    index = np.fromiter(keep, np.int64, len(keep))
    kept = tuple(data.candidates[i] for i in index)
    return replace(data, candidates=kept, columns=columns(data).take(index, kept))
