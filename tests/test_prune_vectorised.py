"""The limits vectorised over candidates (models.design.prune.fitting, building_mask)
against the closed forms one candidate at a time (tests/limits_reference.py), on the
candidate sets of small instances (two buildings with halls and the spine hub, pods in
buildings and in halls, partial pods, the facility from parts) under many random limits,
and at limits set exactly to a candidate's own figures (the REL_TIE edges)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import random
from pathlib import Path

import limits_reference as reference
import numpy as np
import pytest
from brute_force import design_data, loosened
from test_milp_families import ALIGNED, CASES, IN_HALLS, spine_hub_instance, variant

from models.design import prune
from models.design.data import DesignData
from solver.loading import instance_from_dict, read_document

TINY = Path(__file__).resolve().parents[1] / "instances" / "tiny"


def from_parts() -> object:
    """tiny/min-capex with the facility built from parts (candidates carry a facility),
    on two buildings, budgeted on TCO."""
    d = read_document(TINY / "min-capex.toml")
    d["catalog"]["facility"].pop("facility_cost_mode")
    d["limits"]["budget_basis"] = "tco"
    d["site"]["buildings"] = [{"name": "a", "it_power_mw": 1.0, "max_racks": 40},
                              {"name": "b", "it_power_mw": 1.5}]
    return instance_from_dict(d)


SETS = {
    "two-buildings-hub": spine_hub_instance,
    "from-parts": from_parts,
    "block-power": lambda: variant(**CASES["block_power"][0]),
    "pods-in-buildings": lambda: variant(**CASES["pods_in_buildings"][0]),
    "pod-power": lambda: variant(**CASES["pod_power"][0]),
    "pods-in-halls": lambda: variant(**CASES["pod_hall_slots"][0]),
    "pods-three-buildings": lambda: variant(
        limits={"it_power_mw": 9.0}, choices=ALIGNED | {"rail_optimized": [True, False]},
        buildings=[{"name": n, "it_power_mw": 3.0, "max_racks": r}
                   for n, r in (("a", 60), ("b", None), ("c", 90))]),
    "pods-in-halls-two-buildings": lambda: variant(
        limits={"it_power_mw": 9.0}, choices=IN_HALLS, buildings=[
            {"name": b, "it_power_mw": 4.0, "halls": [
                {"name": f"{b}{i}", "rows": 5, "positions_per_row": 24,
                 "rack_power_kw": 40.0, "power_kw": 1800.0, "origin_m": [0.0, 40.0 * i]}
                for i in (1, 2)]} for b in ("a", "b")]),
}


@functools.cache
def candidate_set(name: str) -> DesignData:
    return design_data(loosened(SETS[name]()))


def scalar_mask(data: DesignData, power: bool = True, space: bool = True,
                limits: bool = True) -> np.ndarray:
    check = (reference.within_limits if limits and power and space
             else lambda d, k: reference.fits_buildings(d, k, power, space))
    return np.array([check(data, k) for k in data.candidates], bool)


def random_limits(data: DesignData, rng: random.Random) -> DesignData:
    """``data`` under limits drawn around its candidates' figures: campus power and
    budget between its smallest and largest candidate's, each building's power, rack
    power, halls and racks scaled (rack power and racks sometimes unlimited), the capex or
    TCO basis."""
    it_w = [prune.it_power_w(data, k) for k in data.candidates]
    spend = [prune.capex_usd(data, k) for k in data.candidates]
    buildings = tuple(dataclasses.replace(
        b, it_power_w=b.it_power_w * (scale := rng.uniform(0.2, 1.2)),
        rack_power_w=(math.inf if rng.random() < 0.3  # the building's power caps blocks
                      else b.rack_power_w * scale * rng.uniform(0.8, 1.05)),
        hall_power_w=tuple(h * rng.uniform(0.3, 1.1) for h in b.hall_power_w),
        max_racks=None if rng.random() < 0.3 else rng.randint(5, 150))
        for b in data.buildings)
    return dataclasses.replace(
        data, it_power_cap_w=rng.uniform(min(it_w), max(it_w)),
        budget_usd=rng.uniform(min(spend), 1.3 * max(spend)),
        budget_basis=rng.choice(["capex", "tco"]), buildings=buildings)


@pytest.mark.parametrize("name", sorted(SETS))
def test_vectorised_limits_equal_the_closed_forms_under_random_limits(name):
    data = candidate_set(name)
    assert len(data.candidates) > 10
    rng = random.Random(f"limits-{name}")
    seen = set()
    for _ in range(25):
        limited = random_limits(data, rng)
        mask = prune.fitting(limited)
        assert mask.tolist() == scalar_mask(limited).tolist()
        seen |= set(mask.tolist())
        power, space = rng.choice([(True, False), (False, True), (False, False)])
        col = prune.columns(limited)
        assert (prune.building_mask(limited, col, power, space).tolist()
                == scalar_mask(limited, power, space, limits=False).tolist())
    assert seen == {True, False}  # the limits drawn cut the set, both ways


@pytest.mark.parametrize("name", ["two-buildings-hub", "from-parts", "pod-power",
                                  "pods-in-halls"])
def test_limits_set_exactly_at_a_candidates_figures(name):
    """Each limit set to one candidate's own figure (campus power, spend on both bases,
    its network-plus-server power over the buildings, its blocks' power as the rack
    power): within REL_TIE it fits, and the vectorised mask says what the closed forms
    say for every candidate."""
    data = candidate_set(name)
    f = 1 + data.non_server_it_fraction
    for k in data.candidates[:: max(1, len(data.candidates) // 12)]:
        share = 1 / len(data.buildings)
        cases = [
            dataclasses.replace(data, it_power_cap_w=prune.it_power_w(data, k)),
            dataclasses.replace(data, budget_usd=prune.capex_usd(data, k),
                                budget_basis="capex"),
            dataclasses.replace(data, budget_usd=prune.tco_usd(data, k), budget_basis="tco"),
            dataclasses.replace(data, buildings=tuple(dataclasses.replace(
                b, it_power_w=f * (prune.columns(data).server_w[data.candidates.index(k)]
                                   + k.network_power_w) * share)
                for b in data.buildings)),
            dataclasses.replace(data, buildings=tuple(dataclasses.replace(
                b, rack_power_w=(k.extra["blocks"] * k.extra["block_power_w"]
                                 + k.extra["network_rack_power_w"]) * share)
                for b in data.buildings))]
        for limited in cases[:3]:  # a limit at k's own figure does not rule k out
            assert prune.within_limits(limited, k) == prune.within_limits(data, k)
        for limited in cases:
            assert prune.fitting(limited).tolist() == scalar_mask(limited).tolist()


@pytest.mark.parametrize("name", ["pods-in-halls", "pods-in-halls-two-buildings",
                                  "pods-three-buildings"])
def test_pods_at_their_buildings_node_power(name):
    """One building's power set to its pods' node power, ``(1+f) Σ n_i node_W``, exactly
    and just below, the others' ample, rack and hall power unlimited: with one pod per
    hall the pods' node-power condition alone decides, and the vectorised mask says what
    the closed forms say."""
    data = candidate_set(name)
    f = 1 + data.non_server_it_fraction
    pods = [k for k in data.candidates if data.configs[k.config].pods_in_buildings]
    for k in pods[:: max(1, len(pods) // 10)]:
        cfg = data.configs[k.config]
        sites = data.pod_sites(cfg)
        for factor in (1.0, 1 - 1e-6):
            limited = dataclasses.replace(data, buildings=tuple(dataclasses.replace(
                b, it_power_w=(factor * f * sum(k.pod_nodes()[i] for i, site in
                                                enumerate(sites) if site.building == b.name)
                               * cfg.node_power_w if j == 0 else 1e12),
                rack_power_w=math.inf, hall_power_w=tuple(math.inf for _ in b.hall_power_w))
                for j, b in enumerate(data.buildings)))
            assert prune.fitting(limited).tolist() == scalar_mask(limited).tolist()
            assert (prune.building_mask(limited, prune.columns(limited), True, False).tolist()
                    == scalar_mask(limited, True, False, limits=False).tolist())


def test_columns_follow_the_candidates_they_keep():
    """Restricting (prune, a refused candidate) takes the kept candidates' columns; the
    mask of the restricted data is the full mask's restriction."""
    data = dataclasses.replace(candidate_set("pod-power"),
                               it_power_cap_w=2.5e6, budget_usd=math.inf)
    full = prune.fitting(data)
    assert set(full.tolist()) == {True, False}
    keep = list(range(len(data.candidates)))[1::3][::-1]
    part = prune.restricted(data, keep)
    assert prune.columns(part) is part.columns and part.columns.candidates is part.candidates
    assert part.candidates == tuple(data.candidates[i] for i in keep)
    assert prune.fitting(part).tolist() == full[keep].tolist()
    # a data whose columns are not its candidates' gets its own (never stale ones)
    swapped = dataclasses.replace(part, candidates=part.candidates[::-1])
    assert prune.columns(swapped).candidates is swapped.candidates
    assert prune.fitting(swapped).tolist() == full[keep[::-1]].tolist()


@pytest.mark.parametrize("name", ["from-parts", "pods-in-buildings", "two-buildings-hub"])
def test_vectorised_requirements_equal_the_closed_forms(name):
    """GPU range, throughput (exact, or optimistic on the bounds), goodput and site
    availability, under random requirements and at a candidate's own figures, on the
    candidates as built (interpolated) and after some are evaluated exactly (refine's
    columns, LimitColumns.refined, equal a fresh build)."""
    data = candidate_set(name)
    rng = random.Random(f"requirements-{name}")
    changed = sorted(rng.sample(range(len(data.candidates)), len(data.candidates) // 3))
    cands = list(data.candidates)
    for i in changed:  # as an exact evaluation would: new throughput and goodput
        k = cands[i]
        cands[i] = dataclasses.replace(k, tokens_per_s=k.tokens_per_s_upper * 0.97,
                                       tokens_per_s_upper=k.tokens_per_s_upper * 0.97,
                                       goodput=k.goodput * 0.99, exact=True)
    refined = dataclasses.replace(data, candidates=tuple(cands), columns=prune.columns(
        data).refined(tuple(cands), changed))
    fresh = prune.LimitColumns.of(refined.configs, refined.candidates)
    for field in dataclasses.fields(fresh):
        if isinstance(getattr(fresh, field.name), np.ndarray):
            assert np.array_equal(getattr(fresh, field.name),
                                  getattr(refined.columns, field.name), equal_nan=True)
    for base in (data, refined):
        ks = base.candidates
        for _ in range(20):
            k = rng.choice(ks)
            limited = dataclasses.replace(
                base, min_gpus=rng.choice([0, k.gpus, rng.choice(ks).gpus]),
                max_gpus=rng.choice([None, k.gpus, rng.choice(ks).gpus]),
                required_effective_tokens_per_s=rng.choice(
                    [0.0, k.effective_tokens_per_s, k.effective_tokens_per_s_upper
                     * (1 + prune.GOODPUT_TOL), rng.choice(ks).effective_tokens_per_s]),
                min_goodput=rng.choice([0.0, k.goodput, k.goodput * (1 + prune.GOODPUT_TOL),
                                        rng.uniform(0.5, 1.0)]),
                min_site_availability=rng.choice([0.0, k.site_availability, 0.9999]))
            for optimistic in (False, True):
                assert prune.requirements_met(limited, prune.columns(limited),
                                              optimistic).tolist() == [
                    reference.meets_requirements(limited, c, optimistic) for c in ks]


def test_masks_are_kept_per_set_of_limits():
    data = candidate_set("two-buildings-hub")
    data = dataclasses.replace(data, columns=prune.columns(data))
    low = dataclasses.replace(data, it_power_cap_w=1e6)
    first = prune.fitting(low)
    assert prune.fitting(copy.copy(low)) is first  # same limits: computed once
    assert prune.fitting(dataclasses.replace(low, it_power_cap_w=2e6)) is not first
