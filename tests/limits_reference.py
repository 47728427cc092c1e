"""The limits' closed forms one candidate at a time, as models.design.prune had them
before they were vectorised over candidates (main 7c9f932): the oracle that
tests/test_prune_vectorised.py compares prune.fitting, prune.building_mask and
prune.requirements_met with.
"""

from __future__ import annotations

import math

from models.design.data import Candidate, DesignData
from models.design.prune import (
    GOODPUT_TOL,
    REL_TIE,
    capex_usd,
    it_power_w,
    spine_hub_w,
    tco_usd,
    within,
)


def fits_buildings(data: DesignData, k: Candidate, power: bool = True,
                   space: bool = True) -> bool:
    """The building conditions above; `power` / `space` False leaves that resource out
    (to tell which one stops a design)."""
    cfg, f = data.configs[k.config], 1 + data.non_server_it_fraction
    su_w = cfg.su_nodes * cfg.node_power_w
    per_building = []
    for b in data.buildings:
        by_power = (math.floor(b.it_power_w / (f * su_w) * (1 + REL_TIE)) if power
                    else k.su_count)
        by_space = (math.floor(b.max_racks / cfg.su_racks)
                    if space and b.max_racks is not None else by_power)
        per_building.append(min(by_power, by_space))
    # one pod per building counts the nodes each pod has (milp.add_building_power)
    server_w = ((k.nodes + k.spare_nodes) * cfg.node_power_w if cfg.pods_in_buildings
                else k.su_count * su_w)
    power_ok = not power or f * (server_w + k.network_power_w) <= sum(
        b.it_power_w for b in data.buildings) * (1 + REL_TIE)
    racks = [b.max_racks for b in data.buildings]
    space_ok = (not space or None in racks
                or k.su_count * cfg.su_racks + k.network_racks <= sum(racks))
    slots = k.extra["block_slots"]
    bw = k.extra["block_power_w"]
    by_power = {b.name: math.floor(b.block_power_cap_w / bw * (1 + REL_TIE))
                if power else k.extra["blocks"] for b in data.buildings}
    blocks_w = k.extra["blocks"] * bw
    if cfg.pods_in_buildings:  # each pod's blocks with the nodes they have: pods_fit
        blocks_w = sum(k.extra["pod_blocks_power_w"])
        slots_ok = not space or k.extra["blocks"] <= sum(slots.values())
        units_ok = pods_fit(data, k, power, space)
    else:
        slots_ok = hub_fits(data, k, {b: min(slots.get(b, 0) if space else by_power[b],
                                              by_power[b]) for b in by_power}, power)
        units_ok = k.su_count <= sum(per_building)
    racks_powered = not power or blocks_w + k.extra["network_rack_power_w"] <= sum(
        b.block_power_cap_w for b in data.buildings) * (1 + REL_TIE)
    return units_ok and power_ok and space_ok and slots_ok and racks_powered


def hub_fits(data: DesignData, k: Candidate, room: dict[str, int], power: bool) -> bool:
    """k's blocks fit the buildings' ``room`` (blocks each takes) with its largest
    tier-2 group's spines, G (:func:`spine_hub_w`), whole in some building h (the MILP's
    spine_hub family), which then takes ``⌊(cap_h - G) / u_B⌋`` blocks by power:
    ``B_k <= max_h sum_b room'_b``. Exact with the block_power total: the other network
    racks may fill any building's leftover."""
    hub_w = spine_hub_w(data, k)
    blocks, bw = k.extra["blocks"], k.extra["block_power_w"]
    if not power or hub_w <= 0 or len(data.buildings) < 2:
        return blocks <= sum(room.values())
    return any(blocks <= sum(room.values()) - room[h.name] + min(room[h.name], math.floor(
        (h.block_power_cap_w - hub_w) / bw * (1 + REL_TIE)))
        for h in data.buildings if within(hub_w, h.block_power_cap_w))


def within_limits(data: DesignData, k: Candidate) -> bool:
    """IT power, budget and buildings hold for candidate k (buildable without the
    requirements, which do not depend on them)."""
    spend = tco_usd(data, k) if data.budget_basis == "tco" else capex_usd(data, k)
    return (within(it_power_w(data, k), data.it_power_cap_w)
            and within(spend, data.budget_usd) and fits_buildings(data, k))


def meets_requirements(data: DesignData, k: Candidate, optimistic: bool = False) -> bool:
    """GPU range, throughput and goodput requirements; `optimistic` uses the candidate's
    upper bounds (throughput bound, goodput + GOODPUT_TOL when interpolated)."""
    tput, good = k.effective_tokens_per_s, k.goodput
    if optimistic and not k.exact:
        good = k.goodput * (1 + GOODPUT_TOL)
        tput = k.tokens_per_s_upper * good
    return (k.gpus >= data.min_gpus and (data.max_gpus is None or k.gpus <= data.max_gpus)
            and tput >= data.required_effective_tokens_per_s and good >= data.min_goodput
            and k.site_availability >= data.min_site_availability)


def pods_fit(data: DesignData, k: Candidate, power: bool, space: bool) -> bool:
    """Pods aligned with the site (models.design.milp.add_pods_in_buildings,
    add_building_power, add_pod_power, add_pod_hall_slots): pod i stands whole in its site
    (building i, or hall i with one pod per hall): its ``B_k/P`` blocks within the site's
    slots and the pod's placement power within the site's power; each building b takes
    its ``p_b`` pods: their blocks within its slots, their blocks' placement power
    (``pod_blocks_power_w``: the nodes each pod has) within its block-power cap, their
    ``n_i`` nodes within
    its power, ``(1+f) Σ n_i node_W <= P_b``, and their ``p_b ⌈⌈n/P⌉/su⌉`` units' racks
    within its ``max_racks``. With the totals of :func:`fits_buildings` this is exact: the
    network power and racks may take any building's leftover."""
    cfg, pods = data.configs[k.config], k.extra["pods"]
    blocks = k.extra["blocks"] // pods
    racks = k.pod_units(cfg.su_nodes) * cfg.su_racks
    f = 1 + data.non_server_it_fraction
    nodes = k.pod_nodes()
    sites = data.pod_sites(cfg)
    for i, site in enumerate(sites):
        if cfg.pods_in_halls and space and blocks > k.extra["hall_block_slots"][i]:
            return False
        if power and not within(k.extra["pod_power_w"], site.rack_power_w):
            return False
    for b in data.buildings:
        mine = [i for i, site in enumerate(sites) if site.building == b.name]
        if space and blocks * len(mine) > k.extra["block_slots"].get(b.name, 0):
            return False
        if power and not within(sum(k.extra["pod_blocks_power_w"][i] for i in mine),
                                b.block_power_cap_w):
            return False
        if power and not within(f * sum(nodes[i] for i in mine) * cfg.node_power_w,
                                b.it_power_w):
            return False
        if space and b.max_racks is not None and racks * len(mine) > b.max_racks:
            return False
    return True
