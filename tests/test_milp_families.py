"""The design MILP against a brute-force enumeration (tests/brute_force.py): one case per
constraint family, several binding limits, and metamorphic properties on random instances."""

from __future__ import annotations

import copy
import dataclasses
import functools
from pathlib import Path

import pyomo.environ as pyo
import pytest
from brute_force import brute_force, design_data, loosened, per_node_support
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.design import milp, prune
from models.design.candidates import build_design_data, with_limits
from models.design.data import DesignData
from models.design.evaluate import default_evaluators
from solver import solve
from solver.backends import SolveOptions
from solver.backends.highs import solve_milp
from solver.loading import instance_from_dict, read_document
from solver.prepare import prepare

TINY = Path(__file__).resolve().parents[1] / "instances" / "tiny"
# on the support shortcut the brute force re-derives (brute_force.PER_NODE_SUPPORT); the
# shipped instance sizes its support networks (tests/test_support.py checks them)
BASE = per_node_support(read_document(TINY / "power-bound.toml"))
ALL_CHOICES = {"fabrics": [{"switch": "quantum2-qm9700"}, {"switch": "tomahawk5"},
                           {"switch": "spectrum4-sn5600"}],
               "rail_optimized": [True, False], "nic_attachment": ["single", "twin"]}

ALIGNED = {"fabrics": [{"switch": "quantum2-qm9700", "pods_per": "building",
                        "oversubscription": 4.0}], "rail_optimized": [True]}
IN_HALLS = {"fabrics": [{"switch": "quantum2-qm9700", "pods_per": "hall",
                         "oversubscription": 4.0}], "rail_optimized": [True]}


def variant(limits=None, objective=None, buildings=None, choices=None, reliability=None,
            workload=None):
    """The tiny power-bound instance with sections updated."""
    d = copy.deepcopy(BASE)
    d["limits"].update(limits or {})
    d["objective"].update(objective or {})
    d["choices"].update(choices or {})
    d["workload"].update(workload or {})
    if buildings is not None:
        d["site"]["buildings"] = buildings
    if reliability is not None:
        d["reliability"] = reliability
    return instance_from_dict(d)


# Each case: the instance, and the limit family that stops a better design (the brute
# force must find a strictly better design that violates only that family).
CASES = {
    "it_power": (dict(limits={"it_power_mw": 1.2}, choices=ALL_CHOICES), "it_power"),
    "budget": (dict(limits={"budget_usd": 60e6, "it_power_mw": 5.0}, choices=ALL_CHOICES),
               "budget"),
    "budget_tco": (dict(limits={"budget_usd": 55e6, "it_power_mw": 5.0,
                                "budget_basis": "tco"}, choices=ALL_CHOICES), "budget"),
    # 1.05 MW holds 2 scalable units at 1.07 x 332.8 kW with the non-server share but
    # 3 units' placement blocks (the blocks' own power has no such share)
    "building_power": (dict(limits={"it_power_mw": 5.0}, choices=ALL_CHOICES,
                            buildings=[{"name": "a", "it_power_mw": 1.05},
                                       {"name": "b", "it_power_mw": 0.5}]), "buildings"),
    "max_gpus": (dict(limits={"it_power_mw": 5.0, "max_gpus": 700}, choices=ALL_CHOICES),
                 "gpu_range"),
    "space": (dict(limits={"it_power_mw": 5.0}, choices=ALL_CHOICES,
                   buildings=[{"name": "a", "it_power_mw": 5.0, "max_racks": 30}]),
              "buildings"),
    # one hall of 3 rows x 10 positions (the middle row for network racks): the block
    # slots of its two other rows decide the size (models.space)
    "block_slots": (dict(limits={"it_power_mw": 5.0}, choices=ALL_CHOICES,
                         buildings=[{"name": "a", "it_power_mw": 5.0, "halls": [
                             {"name": "h", "rows": 3, "positions_per_row": 10,
                              "rack_power_kw": 45.0}]}]), "buildings"),
    # two rail-optimized pods: each pod's nodes fill whole 32-node blocks, which placement
    # powers in full, so 96 nodes take 4 blocks (1.39 MW) in a 1.3 MW building whose two
    # 0.7 MW halls take 2 blocks each
    "block_power": (dict(limits={"it_power_mw": 5.0},
                         choices={"fabrics": [{"switch": "quantum2-qm9700", "tiers": 3,
                                               "pods": 2, "oversubscription": 2.0}],
                                  "rail_optimized": [True]},
                         buildings=[{"name": "a", "it_power_mw": 1.3, "halls": [
                             {"name": f"h{i}", "rows": 4, "positions_per_row": 24,
                              "rack_power_kw": 40.0, "power_kw": 1000.0,
                              "origin_m": [0.0, 20.0 * i]} for i in (1, 2)]}]), "buildings"),
    # one pod per building: two equal pods, so building b's one hall of 3 rows x 24
    # positions (the middle row for network racks; 2 blocks of 32 nodes a row) caps both
    # pods at 4 blocks, while building a has room for more
    "pods_in_buildings": (dict(limits={"it_power_mw": 5.0}, choices=ALIGNED,
                               buildings=[{"name": "a", "it_power_mw": 3.0},
                                          {"name": "b", "it_power_mw": 3.0, "halls": [
                                              {"name": "h", "rows": 3, "positions_per_row": 24,
                                               "rack_power_kw": 40.0}]}]), "buildings"),
    # 224 nodes = two pods of 4 blocks: the blocks fit building b's slots and power alone
    # (4 x 346.5 kW of 1,402 kW of halls) but not with its pod's 32 spines (+54.6 kW),
    # while building a has power to spare: the campus-wide block_power family would let
    # b's spines draw a's power, the pod's own family does not
    "pod_power": (dict(limits={"it_power_mw": 5.0}, choices=ALIGNED,
                       buildings=[{"name": "a", "it_power_mw": 3.0},
                                  {"name": "b", "it_power_mw": 1.5}]), "buildings"),
    # one pod per hall: hall h2 (3 rows x 24, the middle one for network racks: 4 block
    # slots) caps both pods at 4 blocks of 32 nodes, while building a's slots (h1 has 8
    # more) and the halls' power (1.87 MW for h2's pod: 5 blocks of 346.5 kW fit) would
    # take 5 a pod
    "pod_hall_slots": (dict(limits={"it_power_mw": 5.0}, choices=IN_HALLS, buildings=[
        {"name": "a", "it_power_mw": 5.0, "halls": [
            {"name": "h1", "rows": 7, "positions_per_row": 24, "rack_power_kw": 40.0,
             "power_kw": 3000.0, "origin_m": [0.0, 0.0]},
            {"name": "h2", "rows": 3, "positions_per_row": 24, "rack_power_kw": 40.0,
             "power_kw": 2000.0, "origin_m": [0.0, 40.0]}]}]), "buildings"),
    "min_capex": (dict(limits={"it_power_mw": 5.0}, choices=ALL_CHOICES,
                       objective={"kind": "min_capex", "required_tokens_per_s": 1.2e9}),
                  "required_throughput"),
    "min_tco": (dict(limits={"it_power_mw": 5.0}, choices=ALL_CHOICES,
                     objective={"kind": "min_tco", "required_tokens_per_s": 2e9}),
                "required_throughput"),
    "deadline": (dict(limits={"it_power_mw": 5.0, "deadline_days": 2.0},
                      workload={"train_tokens": 3e14}, choices=ALL_CHOICES,
                      objective={"kind": "min_capex"}), "required_throughput"),
    "spares": (dict(limits={"it_power_mw": 1.5}, choices=ALL_CHOICES,
                    reliability={"spare_fraction": 0.1}), "it_power"),
}


@functools.cache
def case(name: str):
    kwargs, family = CASES[name]
    inst = variant(**kwargs)
    return inst, brute_force(inst), family


def better(inst, a, b) -> bool:
    """Design a has a strictly better objective than b."""
    if inst.objective.kind == "max_effective_throughput":
        return a.effective_tokens_per_s > b.effective_tokens_per_s * (1 + 1e-9)
    key = "tco_usd" if inst.objective.kind == "min_tco" else "capex_usd"
    return getattr(a, key) < getattr(b, key) * (1 - 1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_solve_equals_brute_force(name):
    inst, bf, family = case(name)
    assert bf is not None
    # the case's limit is what binds: a better design fails that limit alone
    assert any(better(inst, d, bf.design) and d.violated == (family,) for d in bf.designs)
    s = solve(inst, place=False).summary
    assert s["status"] == "optimal" and s["verified"] is True
    assert s["objective"]["value"] == pytest.approx(bf.value, rel=1e-7)
    # stage two: the cheapest (or most productive) among the optimal designs
    assert s["cost"]["capex_usd"] == pytest.approx(bf.design.capex_usd, rel=1e-7)
    assert s["throughput"]["effective_tokens_per_s"] == pytest.approx(
        bf.design.effective_tokens_per_s, rel=1e-7)
    assert s["design"]["gpus"] == bf.design.gpus
    assert s["design"]["spare_nodes"] == bf.design.spare_nodes


# ---- every constraint family, alone ----------------------------------------------------
# Each family is tested on the UNPRUNED candidates (pruning would otherwise remove the
# designs the family excludes): with every family the MILP optimum equals the brute force;
# without the family under test, the MILP finds a strictly better (infeasible) answer.

def milp_optimum(data, skip: str | None = None) -> tuple[float, float, int]:
    """(effective tokens/s, capex M$, GPUs) of the MILP on `data`, optionally without one
    constraint family."""
    m = pyo.ConcreteModel()
    milp.add_core(m, data, elastic=False)
    for name, add, _relaxable in milp.FAMILIES:
        if name != skip:
            add(m, data)
    milp.add_objective(m, data)
    outcome = solve_milp(m, SolveOptions(time_limit_s=30))
    assert outcome.status == "optimal", outcome
    return (pyo.value(m.effective_tokens_per_s), pyo.value(m.capex_musd) * 1e6,
            round(pyo.value(m.gpus)))


def objective_of(inst, tokens: float, capex: float) -> float:
    """Objective as a quantity to maximise."""
    return tokens if inst.objective.kind == "max_effective_throughput" else -capex


def ladder_past_the_limits(inst):
    """Unpruned design data whose size ladders run past every limit of `inst` (built on
    the loosened instance, then given the limits of `inst`)."""
    return with_limits(design_data(loosened(inst)), prepare(inst))


def check_limit_family(family: str, case_name: str) -> None:
    """With every family the MILP on unpruned candidates equals the brute force; without
    `family` it finds a strictly better (so infeasible) design."""
    inst, bf, _ = case(case_name)
    data = ladder_past_the_limits(inst)
    tokens, capex, gpus = milp_optimum(data)
    full = objective_of(inst, tokens, capex)
    assert full == pytest.approx(
        objective_of(inst, bf.design.effective_tokens_per_s, bf.design.capex_usd), rel=1e-7)
    assert gpus == bf.design.gpus
    free_tokens, free_capex, _ = milp_optimum(data, skip=family)
    assert objective_of(inst, free_tokens, free_capex) - full > 1e-6 * abs(full)


def check_one_design() -> None:
    """Minimum capex with no requirement: exactly the smallest candidate is built; without
    the family the model builds nothing at all (capex 0)."""
    inst, _, _ = case("min_capex")
    data = design_data(inst)
    data = dataclasses.replace(data, required_effective_tokens_per_s=0.0)
    tokens, capex, gpus = milp_optimum(data)
    cheapest = min(data.candidates, key=lambda k: (1.07 * k.equipment_power_w * 11.7
                                                     + k.equipment_capex_usd))
    assert gpus == cheapest.gpus and tokens > 0
    assert milp_optimum(data, skip="one_design") == (0, 0, 0)


def check_min_goodput() -> None:
    """Goodput from the reliability model falls with size; reliability.min_goodput = 0.998
    stops the ladder where goodput drops below it; without the family the model grows past."""
    inst = variant(limits={"it_power_mw": 3.0}, objective={"reliability_model": "model"},
                   buildings=[{"name": "hall", "it_power_mw": 3.0}],
                   reliability={"min_goodput": 0.998})
    data = design_data(inst)
    f = 1 + inst.catalog.facility.non_server_it_fraction
    ok = [k for k in data.candidates
          if k.goodput >= 0.998 and f * k.equipment_power_w <= 3e6]
    best = max(ok, key=lambda k: k.effective_tokens_per_s)
    assert len(ok) < len(data.candidates)  # the requirement excludes some sizes
    tokens, _capex, gpus = milp_optimum(data)
    assert (tokens, gpus) == (pytest.approx(best.effective_tokens_per_s, rel=1e-9), best.gpus)
    free_tokens, _, free_gpus = milp_optimum(data, skip="min_goodput")
    assert free_tokens > tokens * (1 + 1e-6) and free_gpus > gpus


def every_level_data(doc: dict, levels: tuple[str, ...]) -> tuple[DesignData, DesignData]:
    """Design data of ``doc`` as the pipeline builds it (levels below the site availability
    target pruned, solver.prepare.facility_options), and unpruned: the configurations of
    every one of ``levels`` on its own, with the same target for the MILP."""
    inputs = prepare(instance_from_dict(doc))
    configs = []
    for level in levels:
        alone = copy.deepcopy(doc)
        alone["choices"]["redundancy"] = [level]
        alone["reliability"]["site_availability_target"] = None
        configs += prepare(instance_from_dict(alone)).configs
    unpruned = dataclasses.replace(inputs, configs=tuple(sorted(configs, key=lambda p: p.key)))
    pruned = build_design_data(inputs, default_evaluators(inputs))[0]
    return pruned, build_design_data(unpruned, default_evaluators(unpruned))[0]


def check_site_availability() -> None:
    """Facility from parts: N (99.671%) is cheaper than N+1 (99.982%) for the same
    cluster; reliability.site_availability_target = 0.9998 makes the MILP build N+1, and
    without the family it builds N for less. The pipeline never builds N under that
    target (pruned before the candidates): the pruned data gives the same optimum."""
    doc = copy.deepcopy(BASE)
    doc["catalog"]["facility"]["facility_cost_mode"] = "parts"
    doc["reliability"] = {"site_availability_target": 0.9998}
    doc["objective"] = doc["objective"] | {"kind": "min_capex", "required_tokens_per_s": 1e8}
    pruned, data = every_level_data(doc, ("N", "N+1", "2N"))
    assert data.min_site_availability == 0.9998
    assert {c.redundancy for c in data.configs.values()} == {"N", "N+1", "2N"}
    assert {c.redundancy for c in pruned.configs.values()} == {"N+1"}  # N below, 2N dominated
    tokens, capex, gpus = milp_optimum(data)
    free_tokens, free_capex, _ = milp_optimum(data, skip="site_availability")
    m = milp.build_model(data)
    solve_milp(m, SolveOptions())
    assert data.configs[milp.chosen_candidate(m).config].redundancy == "N+1"
    assert free_tokens == pytest.approx(tokens) and free_capex < capex * (1 - 1e-6)
    assert milp_optimum(pruned) == pytest.approx((tokens, capex, gpus), rel=1e-12)


@pytest.mark.parametrize("target", [None, 0.99, 0.9998, 0.99993, 0.99999])
@pytest.mark.parametrize("kind", ["max_effective_throughput", "min_capex", "min_tco"])
def test_site_availability_pruning_keeps_the_optimum(target, kind) -> None:
    """Pruning redundancy levels (below the target, or dominated by one that meets it)
    before building candidates never changes the MILP's optimum: same objective as over
    every level's candidates under the site_availability family, or infeasible in both
    (0.99999: no level meets it; every level stays for the diagnosis)."""
    doc = copy.deepcopy(BASE)
    doc["catalog"]["facility"]["facility_cost_mode"] = "parts"
    doc["reliability"] = {"site_availability_target": target}
    doc["limits"]["it_power_mw"] = 3.0
    doc["objective"] = doc["objective"] | {"kind": kind}
    if kind != "max_effective_throughput":
        doc["objective"]["required_tokens_per_s"] = 1e8
    pruned, data = every_level_data(doc, ("N", "N+1", "2N"))
    if target == 0.99999:
        assert len(pruned.configs) == len(data.configs)
    else:
        assert len(pruned.configs) < len(data.configs)
    if not any(prune.buildable(data, k) for k in data.candidates):
        assert not any(prune.buildable(pruned, k) for k in pruned.candidates)
        return
    assert optimum(pruned) == pytest.approx(optimum(data), rel=1e-9)


def optimum(data: DesignData) -> float:
    """The design MILP's optimal objective on `data`."""
    m = milp.build_model(data)
    assert solve_milp(m, SolveOptions(time_limit_s=30)).status == "optimal"
    return pyo.value(m.objective)


def spine_hub_instance():
    """tiny/two-buildings at 0.726 MW a building, hall h0 declared 4 rows x 12 x 45 kW
    (more than its building): the spine hub binds (:func:`check_spine_hub`)."""
    d = read_document(TINY / "two-buildings.toml")
    d["limits"]["it_power_mw"] = 5.0
    for building in d["site"]["buildings"]:
        building["it_power_mw"] = 0.726
    d["site"]["buildings"][0]["halls"] = [
        {"name": "h0", "rows": 4, "positions_per_row": 12, "rack_power_kw": 45.0}]
    return instance_from_dict(d)


def check_spine_hub() -> None:
    """tiny/two-buildings at 0.726 MW a building, hall-a declared 4 rows x 12 x 45 kW
    (more than its building). By hand, 1,024 GPUs (middle of rack) are 32 blocks of
    43,307 W and one tier-2 group of 16 spines x 1,707 W = 27,312 W beside 20,865.2 W of
    support racks (placement stands them in network rows too); a building's racks may
    draw 726 kW / 1.01 = 718,812 W: 16 blocks (692,912 W), not 16 blocks and the spines
    (720,224 W), so the hub's building takes 15 and the two 31 < 32 blocks. With the
    spines split over the buildings (the family left out) the racks' 1,434,001 W fit the
    two buildings' 1,437,624 W and the MILP builds them; placement stands the group's
    spines in one hall, so it cannot place them. With the family: 768 GPUs, 24 blocks
    (15 beside the spines, up to 16 in the other)."""
    data = ladder_past_the_limits(spine_hub_instance())
    k = next(k for k in data.candidates if k.gpus == 1024 and "/mor/" in k.config)
    assert (k.extra["blocks"], k.extra["block_power_w"]) == (32, 43307.0)
    assert k.extra["group_spine_power_w"] == pytest.approx(16 * 1707.0)
    assert k.extra["network_rack_power_w"] == pytest.approx(16 * 1707.0 + 20865.2)
    assert milp_optimum(data)[2] == 768
    assert milp_optimum(data, skip="spine_hub")[2] == 1024


FAMILY_TESTS = {
    "spine_hub": check_spine_hub,
    "site_availability": check_site_availability,
    "min_goodput": check_min_goodput,
    "one_design": check_one_design,
    "gpu_range": functools.partial(check_limit_family, "gpu_range", "max_gpus"),
    "it_power": functools.partial(check_limit_family, "it_power", "it_power"),
    "building_power": functools.partial(check_limit_family, "building_power",
                                        "building_power"),
    "space": functools.partial(check_limit_family, "space", "space"),
    "block_slots": functools.partial(check_limit_family, "block_slots", "block_slots"),
    "block_power": functools.partial(check_limit_family, "block_power", "block_power"),
    "budget": functools.partial(check_limit_family, "budget", "budget"),
    "pods_in_buildings": functools.partial(check_limit_family, "pods_in_buildings",
                                           "pods_in_buildings"),
    "pod_power": functools.partial(check_limit_family, "pod_power", "pod_power"),
    "pod_hall_slots": functools.partial(check_limit_family, "pod_hall_slots",
                                        "pod_hall_slots"),
    "required_throughput": functools.partial(check_limit_family, "required_throughput",
                                             "min_capex"),
}


def test_every_family_has_a_test():
    assert sorted(FAMILY_TESTS) == sorted(name for name, _add, _r in milp.FAMILIES)


@pytest.mark.parametrize("family", [name for name, _add, _relaxable in milp.FAMILIES])
def test_family_is_enforced_and_binds(family):
    FAMILY_TESTS[family]()


def test_one_design_builds_one_configuration_in_ladder_order():
    inst, _, _ = case("it_power")
    data = design_data(inst)
    m = milp.build_model(data)
    assert solve_milp(m, SolveOptions()).status == "optimal"
    built = [c for c in m.CONFIGS if pyo.value(m.build[c, 0]) > 0.5]
    assert len(built) == 1
    steps = [round(pyo.value(m.build[built[0], j])) for j in range(len(m.ladders[built[0]]))]
    assert steps == sorted(steps, reverse=True)
    # binaries are integral to HiGHS's feasibility tolerance
    assert pyo.value(m.gpus) == pytest.approx(milp.chosen_candidate(m).gpus, abs=1e-6)


def test_elastic_mode_relaxes_only_resource_families():
    assert milp.RELAXABLE == {"it_power", "building_power", "space", "block_slots",
                              "block_power", "pod_hall_slots", "pod_power", "budget"}
    inst, _, _ = case("it_power")
    data = design_data(inst)
    m = milp.build_model(data, elastic=True)
    slacks = sorted(c.name for c in m.component_objects(pyo.Var) if c.name.startswith("slack"))
    assert slacks == ["slack_block_power", "slack_block_slots", "slack_budget",
                      "slack_building_power", "slack_it_power"]


# ---- metamorphic properties on random small instances ----------------------------------

FABRICS = ["quantum2-qm9700", "tomahawk5", "spectrum4-sn5600"]


@st.composite
def instances(draw):
    power = draw(st.floats(0.8, 4.0))
    fabrics = draw(st.lists(st.sampled_from(FABRICS), min_size=1, max_size=3, unique=True))
    rails = draw(st.lists(st.booleans(), min_size=1, max_size=2, unique=True))
    two = draw(st.booleans())
    share = draw(st.floats(0.35, 0.65))
    racks = draw(st.one_of(st.none(), st.integers(20, 120)))
    if two:
        buildings = [{"name": "a", "it_power_mw": power * share},
                     {"name": "b", "it_power_mw": power * (1 - share)}]
    else:
        buildings = [{"name": "a", "it_power_mw": power}]
    if racks is not None:
        buildings[0]["max_racks"] = racks
    objective = draw(st.sampled_from(["max_effective_throughput", "min_capex"]))
    obj = {"kind": objective}
    if objective == "min_capex":
        obj["required_tokens_per_s"] = draw(st.floats(2e8, 2.5e9))
    return {"limits": {"it_power_mw": power, "budget_usd": draw(st.floats(20e6, 200e6))},
            "buildings": buildings, "objective": obj,
            "choices": {"fabrics": [{"switch": f} for f in fabrics], "rail_optimized": rails}}


def build(spec) -> object:
    return variant(limits=spec["limits"], objective=spec["objective"],
                   buildings=spec["buildings"], choices=spec["choices"])


def value(inst) -> float | None:
    """The optimum as a quantity to maximise; None when infeasible (checked verified)."""
    result = solve(inst, place=False)
    if result.status == "infeasible":
        return None
    s = result.summary
    assert s["status"] == "optimal" and s["verified"] is True
    v = s["objective"]["value"]
    return v if inst.objective.kind == "max_effective_throughput" else -v


def not_worse(a: float | None, b: float | None) -> bool:
    """b is at least as good as a (None = infeasible, worse than anything)."""
    return a is None or (b is not None and b >= a - 1e-7 * abs(a))


SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(instances())
def test_random_instance_equals_brute_force(spec):
    inst = build(spec)
    bf = brute_force(inst)
    v = value(inst)
    if bf is None:
        assert v is None
        return
    maximise = inst.objective.kind == "max_effective_throughput"
    assert v == pytest.approx(bf.value if maximise else -bf.value, rel=1e-7)


@SETTINGS
@given(instances(), st.floats(1.0, 3.0))
def test_more_budget_never_lowers_the_optimum(spec, factor):
    more = copy.deepcopy(spec)
    more["limits"]["budget_usd"] *= factor
    assert not_worse(value(build(spec)), value(build(more)))


@SETTINGS
@given(instances(), st.floats(1.0, 3.0))
def test_more_power_never_lowers_the_optimum(spec, factor):
    more = copy.deepcopy(spec)
    more["limits"]["it_power_mw"] *= factor
    for b in more["buildings"]:
        b["it_power_mw"] *= factor
    assert not_worse(value(build(spec)), value(build(more)))


@SETTINGS
@given(instances(), st.data())
def test_restricting_choices_never_raises_the_optimum(spec, data):
    fewer = copy.deepcopy(spec)
    ch = fewer["choices"]
    options = [k for k in ("fabrics", "rail_optimized") if len(ch[k]) > 1]
    if not options:
        fewer["limits"]["max_gpus"] = 256  # restrict the size instead
    else:
        key = data.draw(st.sampled_from(options))
        ch[key].pop(data.draw(st.integers(0, len(ch[key]) - 1)))
    assert not_worse(value(build(fewer)), value(build(spec)))


def test_deadline_sets_the_required_throughput_and_is_met():
    """train_tokens 3e14 in 2 days needs 3e14 / 172,800 s = 1,736,111,111 effective tokens/s
    (585 GPUs at 2,968,200 each): the cheapest design is the first size with >= 585 GPUs."""
    inst, bf, _ = case("deadline")
    s = solve(inst, place=False).summary
    days = s["throughput"]["time_to_train_days"]
    assert days == pytest.approx(3e14 / s["throughput"]["effective_tokens_per_s"] / 86400)
    assert days <= 2.0 and s["design"]["gpus"] >= 585 and s["design"]["gpus"] == bf.design.gpus
