"""Pods aligned with buildings (issue 15, topology options): one pod per building joined
by an oversubscribed top tier. The fabric counts by hand, the campus links it prices, the
performance model's view of it, placement of each pod in its building (checked
independently), and the MILP's choice between it and one campus-wide tree."""

from __future__ import annotations

import copy
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from models.design.candidates import link_lengths
from models.design.evaluate import network_spec
from models.fabric import FabricSpec, design_fabric
from models.placement.assemble import DesignToPlace
from solver import solve
from solver.backends import SolveOptions
from solver.fabric_inputs import resolve_fabric_parts
from solver.loading import DEFAULT_INSTANCE, instance_from_dict, read_document
from solver.placement import place
from solver.prepare import prepare
from solver.schema import CableLengths

TINY = Path(__file__).resolve().parents[1] / "instances" / "tiny" / "power-bound.toml"


@pytest.mark.parametrize(("ratio", "pod_tops", "uplinks", "supers"),
                         [(1.0, 8, 32, 8), (2.0, 8, 16, 4), (4.0, 8, 8, 2)])
def test_pods_cut_the_links_between_buildings_to_the_oversubscription(ratio, pod_tops,
                                                                      uplinks, supers):
    """64 HGX nodes (8 rails) on 64-port switches in two building pods of 2 tiers.
    By hand: a pod of 32 nodes has 8 rail leaves with 32 uplinks = 256 leaf links. Its
    top switches come in S | 32 with d = 8·32/S downlinks and u >= d/R uplinks, d + u <=
    64: S = 4 gives d = 64 (no room), S = 8 gives d = 32 and u = 32/R, so 8 pod tops a
    pod. The links between the buildings are 2·8·u = 512/R = endpoints/R, on
    ⌈2·8·u/64⌉ super switches. One campus tree of the same 512 endpoints sends all
    512 leaf links to spines that stand in one building, so half of them cross."""
    pods = design_fabric(FabricSpec(nodes=64, ports_per_node=8, radix=64, tiers=2, pods=2,
                                    oversubscription=ratio))
    assert pods.switches_per_tier == (16, 2 * pod_tops, supers)
    assert pods.links_per_tier == (512, 512, 2 * pod_tops * uplinks)
    assert pods.links_per_tier[-1] == 512 / ratio
    assert pods.tiers == 3  # the oversubscribed top tier is the third, as a campus tree's
    campus = design_fabric(FabricSpec(nodes=64, ports_per_node=8, radix=64))
    assert campus.links_per_tier == (512, 512) and campus.tiers == 2


def test_only_the_class_joining_building_pods_is_priced_at_campus_reach():
    lengths = CableLengths(leaf_spine_m=50.0, spine_core_m=300.0, between_buildings_m=1000.0)
    pods2 = design_fabric(FabricSpec(nodes=64, ports_per_node=8, radix=64, tiers=2, pods=2,
                                     oversubscription=4.0))
    assert link_lengths(lengths, pods2) == {"node-leaf": 30.0, "leaf-spine": 50.0,
                                            "spine-core": 1000.0}
    pods3 = design_fabric(FabricSpec(nodes=4_000, ports_per_node=8, radix=64, tiers=3, pods=2,
                                     oversubscription=4.0))
    assert link_lengths(lengths, pods3)["spine-core"] == 300.0
    assert link_lengths(lengths, pods3)["core-super"] == 1000.0
    # one tree of 3 tiers across the campus: its top class crosses the buildings
    tree = design_fabric(FabricSpec(nodes=4_000, ports_per_node=8, radix=64))
    assert tree.tiers == 3 and link_lengths(lengths, tree)["spine-core"] == 1000.0
    assert link_lengths(lengths, tree, single_building=True)["spine-core"] == 300.0


def test_the_performance_model_sees_the_pods_and_their_oversubscription():
    """The job runs on pods of ⌈gpus/pods⌉ GPUs joined at the wired ratio (models.perf
    charges the traffic that crosses them at the oversubscribed bandwidth); DP crosses
    them, so a higher R never speeds the job up. By hand: pods of 1,366 nodes = 21 full
    units of 64 + 22 nodes -> 176 leaves, 3 spine groups of 64 (64, 64, 48 leaves), 192
    spines x 64 uplinks = 12,288 pod-top downlinks for 10,928 endpoints; 64 planes of 3
    spines, 2 pod tops each with d = 96 and u = ⌈96·10,928/(7·12,288)⌉ = 13 uplinks ->
    1,664 links leave a pod (≥ 10,928/7), wired 10,928/1,664 = 6.57:1."""
    from models.design.evaluate import exact_throughput

    inputs = prepare(instance_from_dict(tomllib.loads(DEFAULT_INSTANCE.read_text())))
    parts = next(p for p in inputs.configs if p.switch.id == "tomahawk5" and p.rail_optimized)
    spec = FabricSpec(nodes=4_096, ports_per_node=8, radix=parts.radix, pods=3,
                      oversubscription=7.0)
    fabric = design_fabric(spec)
    net = network_spec(parts, fabric, 32_768)
    assert fabric.links_per_tier[-1] == 3 * 1_664
    assert (net.pod_gpus, net.oversubscription) == (10_923, 10_928 / 1_664)
    speeds = [exact_throughput(inputs, parts, design_fabric(
        FabricSpec(nodes=4_096, ports_per_node=8, radix=parts.radix, pods=3,
                   oversubscription=r)), 32_768).tokens_per_s for r in (1.0, 7.0)]
    assert speeds[1] <= speeds[0]


def tiny_campus(budget: float = 1e9, fr4_usd: float | None = None, **objective) -> dict:
    """The tiny dense instance on two 3 MW buildings with the perf model and the
    GPT-3 workload; fabric options: one Quantum-2 tree (3 tiers past 256 nodes) or one
    pod of 2 tiers per building at 7:1 (3 tiers with the super tier)."""
    d = copy.deepcopy(read_document(TINY))
    d["workload"] = "gpt3-175b"
    d["limits"].update({"it_power_mw": 6.0, "budget_usd": budget, "max_gpus": 3584})
    d["site"]["buildings"] = [{"name": "a", "it_power_mw": 3.0},
                              {"name": "b", "it_power_mw": 3.0}]
    d["choices"]["fabrics"] = [{"switch": "quantum2-qm9700"},
                               {"switch": "quantum2-qm9700", "tiers": 2, "pods_per": "building",
                                "oversubscription": 7.0}]
    d["choices"]["rail_optimized"] = [True]
    d["objective"].update({"performance": "model", **objective})
    if fr4_usd is not None:  # the 1 km single-mode optics of the links between buildings
        d.setdefault("catalog", {}).setdefault("medium", {})["fr4-400g"] = {
            "price_usd_per_end": fr4_usd, "switch_end_price_usd": fr4_usd}
    return d


def test_building_pods_are_chosen_when_campus_optics_make_them_worth_it():
    """3,584 GPUs. The campus tree (3 tiers) cables all 3,584 spine-core links at campus
    reach; the building pods only their 512 links between pods (8 per pod top at 7:1), but
    lose 1.5% of throughput to the 7:1 crossing of the data-parallel traffic. With a
    $245M budget and the catalog's FR4 ($850 a switch end) the tree fits and wins on
    throughput; with FR4 at $3,000 an end (+$15.4M for the tree, +$2.2M for the pods) it
    no longer fits at that size, and the pods at full size beat the tree 256 nodes
    smaller."""
    cheap = solve(instance_from_dict(tiny_campus(245e6)), place=False).summary
    dear = solve(instance_from_dict(tiny_campus(245e6, fr4_usd=3000.0)), place=False).summary
    assert cheap["status"] == dear["status"] == "optimal"
    assert (cheap["design"]["pods"], cheap["design"]["gpus"]) == (1, 3584)
    assert (dear["design"]["pods"], dear["design"]["gpus"]) == (2, 3584)
    assert dear["design"]["tiers"] == cheap["design"]["tiers"] == 3
    pods_row = next(r for r in cheap["runner_ups"] if r["pods"] == 2)
    assert pods_row["capex_usd"] < cheap["cost"]["capex_usd"]  # cheaper, yet slower:
    assert pods_row["effective_tokens_per_s"] < cheap["throughput"]["effective_tokens_per_s"]
    top = dear["design"]["media"][-1]
    assert (top["link_class"], top["length_m"], top["links"]) == ("spine-core", 1000.0, 512)


def check_pods_placed(inputs, result, designed_switches, designed_links) -> None:
    """Placed fabric == designed, each building holds its pod's nodes, and only the
    class joining the pods crosses buildings."""
    assert result.status in ("optimal", "feasible") and result.summary["verified"]
    fabric = result.inputs.fabric
    assert fabric.switches_per_tier == tuple(designed_switches)
    assert fabric.links_per_tier == tuple(designed_links)
    where = {r.id: r.position.building for r in result.racks}
    crossing = Counter(run.link_class for run in result.runs
                       if where[run.a] != where[run.b] for _ in range(run.count))
    assert set(crossing) <= {fabric.link_classes[-1].name}
    nodes = Counter()
    for r in result.racks:
        nodes[r.position.building] += r.nodes
    size = -(-result.inputs.design.nodes // fabric.pods)
    assert [nodes[b.name] for b in inputs.site.buildings] == [
        min(size, result.inputs.design.nodes - i * size) for i in range(fabric.pods)]


def test_tiny_building_pods_are_placed_pod_by_building():
    inst = instance_from_dict(tiny_campus(245e6, fr4_usd=3000.0))
    s = solve(inst, place=True).summary
    assert s["status"] == "optimal" and s["placement"]["verified"] is True
    assert s["design"]["pods"] == 2
    by_class = Counter()
    for m in s["design"]["media"]:
        by_class[m["link_class"]] += m["links"]
    assert by_class["spine-core"] == 512


def test_building_pods_place_on_the_default_campus():
    """Tomahawk 5, one pod per building of the default campus at 7:1: each pod (768 nodes,
    2 tiers inside: 8 x 12 leaves, at most 112 under a 7:1 pod top of 128 ports) stands in
    its building, the placed fabric is the designed one, and the checker re-derives
    both."""
    inputs = prepare(instance_from_dict(tomllib.loads(DEFAULT_INSTANCE.read_text())))
    parts = resolve_fabric_parts(inputs, "h100-sxm", "tomahawk5")
    nodes = 3 * 768
    designed = design_fabric(FabricSpec(nodes=nodes, ports_per_node=8, radix=parts.radix,
                                        tiers=2, pods=3, oversubscription=7.0))
    assert designed.tiers == 3
    design = DesignToPlace("h100-sxm", "tomahawk5", nodes, designed.tiers, 3, 7.0, True,
                           "single", switches_per_tier=designed.switches_per_tier,
                           links_per_tier=designed.links_per_tier, pods_in_buildings=True)
    result = place(inputs, design, SolveOptions(placement_time_limit_s=10))
    check_pods_placed(inputs, result, designed.switches_per_tier, designed.links_per_tier)


def test_checker_fails_pods_placed_across_buildings():
    """The same fabric placed freely (pods not bound to buildings) and then checked as
    a building-aligned design: the checker re-derives each building's pod and finds
    nodes or inner links in the wrong building."""
    import dataclasses

    from solver.placement_check import check_placement

    inputs = prepare(instance_from_dict(tomllib.loads(DEFAULT_INSTANCE.read_text())))
    parts = resolve_fabric_parts(inputs, "h100-sxm", "tomahawk5")
    nodes = 3 * 768
    designed = design_fabric(FabricSpec(nodes=nodes, ports_per_node=8, radix=parts.radix,
                                        tiers=2, pods=3, oversubscription=7.0))
    free = DesignToPlace("h100-sxm", "tomahawk5", nodes, designed.tiers, 3, 7.0, True,
                         "single", switches_per_tier=designed.switches_per_tier,
                         links_per_tier=designed.links_per_tier)
    result = place(inputs, free, SolveOptions(placement_time_limit_s=5))
    assert result.summary["verified"] is True
    aligned = dataclasses.replace(result.inputs.design, pods_in_buildings=True)
    moved = dataclasses.replace(result, inputs=dataclasses.replace(result.inputs,
                                                                    design=aligned))
    problems = check_placement(inputs, moved)
    assert any("cross buildings" in p or "its pod has" in p for p in problems)


def test_checker_re_derives_each_buildings_pod():
    """The independent design checker: building i holds exactly pod i's blocks; moving
    one block to the other building fails it (while the block counts still sum). 224
    nodes: 2 pods of 112 = 3.5 units, 4 blocks each, the last half full (test_a_pod_of_
    a_partial_unit_counts_the_nodes_it_has)."""
    import dataclasses

    from models.design.candidates import build_design_data, exact_candidate
    from models.design.evaluate import default_evaluators
    from solver import checker

    d = copy.deepcopy(read_document(TINY))
    d["limits"]["it_power_mw"] = 3.0
    d["site"]["buildings"] = [{"name": "a", "it_power_mw": 1.5},
                              {"name": "b", "it_power_mw": 1.5}]
    d["choices"].update({"rail_optimized": [True], "fabrics": [
        {"switch": "quantum2-qm9700", "pods_per": "building", "oversubscription": 4.0}]})
    result = solve(instance_from_dict(d), place=False)
    design, inputs = result.design, result.inputs
    # a pod of 4 blocks of 32 nodes (4 x 346,456 W, 8 rail leaves a block at the
    # conservative 1,707 W) and its 32 spines draw 1,440,448 W <= 1.5 MW / 1.01 (the
    # unitemised IT share kept) = 1,485,148.5 W; 5 blocks would draw 1,732,280 W
    assert design.blocks_per_building == {"a": 4, "b": 4}  # 256 nodes: 2 pods of 4 blocks
    data, _ = build_design_data(inputs, default_evaluators(inputs))
    exact = exact_candidate(inputs, default_evaluators(inputs), data, design.candidate)
    assert checker.check_design(inputs, design, data, exact).ok
    moved = dataclasses.replace(design, blocks_per_building={"a": 5, "b": 3})
    failures = checker.check_design(inputs, moved, data, exact).failures
    assert any("pod_blocks[a]" in f for f in failures)


def test_pods_and_pods_per_together_are_refused_naming_the_field():
    from solver.errors import InvalidInstance

    d = copy.deepcopy(read_document(TINY))
    d["choices"]["fabrics"] = [{"switch": "quantum2-qm9700", "pods": 2,
                                "pods_per": "building"}]
    with pytest.raises(InvalidInstance, match=r"choices\.fabrics\.0: set pods or pods_per"):
        instance_from_dict(d)


@pytest.mark.parametrize("per", ["building", "hall"])
def test_pods_per_site_of_one_is_skipped_with_a_note(per):
    """The tiny instance has one building of one hall: no pods per building or hall."""
    d = copy.deepcopy(read_document(TINY))
    d["choices"]["fabrics"] = [{"switch": "quantum2-qm9700"},
                               {"switch": "quantum2-qm9700", "pods_per": per}]
    inputs = prepare(instance_from_dict(d))
    assert not any(p.pods_in_buildings for p in inputs.configs)
    assert any(f"two or more {per}s" in n for n in inputs.config_notes)


def test_a_pod_too_big_for_its_building_is_diagnosed():
    """256 nodes need two pods of 4 full blocks (4 x 346,456 W) and 32 spines each
    (+54,624 W at the conservative 1,707 W a switch): 1,440,448 W in halls that feed
    1,400,990 W (1.415 MW less the 1% non-server share), short by 39,458 W ~ 0.04 MW in
    each building. (224 nodes, pods of 3.5 units, fit: their half-full blocks count the
    nodes they have.)"""
    d = copy.deepcopy(read_document(TINY))
    d["limits"].update({"it_power_mw": 3.0, "min_gpus": 2048})
    d["site"]["buildings"] = [{"name": "a", "it_power_mw": 1.415},
                              {"name": "b", "it_power_mw": 1.415}]
    d["choices"].update({"rail_optimized": [True], "fabrics": [
        {"switch": "quantum2-qm9700", "pods_per": "building", "oversubscription": 4.0}]})
    s = solve(instance_from_dict(d), place=False).summary
    assert s["status"] == "infeasible"
    assert sum("cannot feed one pod" in m and "short by 0.04 MW" in m
               for m in s["diagnosis"]) == 2


def small_pods(building_mw: float) -> dict:
    """The tiny instance, rail-optimized on Quantum-2 (a scalable unit of 32 nodes and 8
    rail leaves), one pod per building at 4:1 on two buildings of ``building_mw``."""
    d = copy.deepcopy(read_document(TINY))
    d["limits"]["it_power_mw"] = 2 * building_mw
    d["site"]["buildings"] = [{"name": "a", "it_power_mw": building_mw},
                              {"name": "b", "it_power_mw": building_mw}]
    d["choices"].update({"rail_optimized": [True], "fabrics": [
        {"switch": "quantum2-qm9700", "pods_per": "building", "oversubscription": 4.0}]})
    return d


def test_a_pod_smaller_than_a_scalable_unit_is_built_when_it_fits():
    """Two buildings of 0.25 MW. By hand: a scalable unit of 32 nodes draws 32 x 10,400 W
    = 332.8 kW, 356.1 kW with the 7% non-server share, more than a building, so counted in
    whole units no pod fits (this was infeasible). The smallest design, 32 nodes, is two
    pods of 16: 16 x 10.4 kW = 166.4 kW of servers in each building, one block of 16 nodes
    and its 8 leaves; building a also takes the network's 37.2 kW (switches, media,
    storage): 1.07 x (166.4 + 37.2) = 217.8 kW <= 250 kW. The next size (64 nodes, pods of
    32) needs 356.1 kW a building. Placed, each building holds its pod's 16 nodes."""
    inputs = instance_from_dict(small_pods(0.25))
    result = solve(inputs, place=False)
    assert result.status == "optimal" and result.summary["verified"] is True
    design = result.design
    assert (design.candidate.nodes + design.candidate.spare_nodes, design.config.pods) == (32, 2)
    assert design.blocks_per_building == {"a": 1, "b": 1}
    assert design.candidate.extra["block_power_w"] < 32 * 10_400  # a block of 16 nodes
    for b in ("a", "b"):
        load = 1.07 * (16 * 10_400 + design.network_w_per_building[b])
        assert load <= 250e3
    placed = solve(inputs, place=True)
    assert placed.summary["placement"]["verified"] is True
    nodes = Counter()
    for r in placed.placement.racks:
        nodes[r.position.building] += r.nodes
    assert nodes == {"a": 16, "b": 16}


@pytest.mark.parametrize(("ratio", "uplinks"), [(1.0, 32), (2.0, 16), (4.0, 8)])
def test_a_mesh_joins_pods_without_an_extra_tier(ratio, uplinks):
    """The 64 nodes of the first test in two pods, joined by a mesh of their 8 pod tops a
    pod (d = 32 downlinks each) instead of super switches. By hand: each pod top sends
    u = 32/R uplinks straight to its peer in the other pod (P - 1 = 1 peer), so a pod has
    8·u = 256/R = its 256 endpoints / R links leaving it, and each link joins both pods:
    the mesh has 8·u = 512/(2R) links, half the super tier's 512/R, and no super switch.
    The mesh counts as a top tier of 0 switches."""
    mesh = design_fabric(FabricSpec(nodes=64, ports_per_node=8, radix=64, tiers=2, pods=2,
                                    oversubscription=ratio, pod_join="mesh"))
    assert mesh.mesh and mesh.switches_per_tier == (16, 16, 0)
    assert mesh.links_per_tier == (512, 512, 8 * uplinks)
    assert mesh.links_per_tier[-1] == 256 / ratio == 512 / (2 * ratio)
    assert mesh.max_ports_used_per_tier[1] == 32 + uplinks
    assert [c.name for c in mesh.link_classes] == ["node-leaf", "leaf-spine", "spine-spine"]
    tree = design_fabric(FabricSpec(nodes=64, ports_per_node=8, radix=64, tiers=2, pods=2,
                                    oversubscription=ratio))
    assert tree.links_per_tier[-1] == 2 * mesh.links_per_tier[-1]
    assert tree.switches_per_tier[:2] == mesh.switches_per_tier[:2]


def test_a_mesh_of_three_pods_sends_the_same_links_to_each_peer():
    """The default campus's 3 building pods of 768 Tomahawk 5 nodes at 7:1. By hand: a pod
    has 96 rail leaves of 64 uplinks = 6,144 leaf links on 64 pod tops of d = 96, and
    u >= 96/7 = 13.7 rounded up to a multiple of P - 1 = 2: u = 14 (96 + 14 <= 128 ports),
    7 links to each of the two peers. A pod has 64·14 = 896 >= 6,144/7 = 877.7 uplinks;
    the mesh has 3·896/2 = 1,344 links, 448 between each pair of buildings; the super
    tier would have 2,688 links and 22 super switches."""
    mesh = design_fabric(FabricSpec(nodes=3 * 768, ports_per_node=8, radix=128, tiers=2,
                                    pods=3, oversubscription=7.0, pod_join="mesh"))
    assert mesh.switches_per_tier == (288, 192, 0)
    assert mesh.links_per_tier == (18_432, 18_432, 1_344)
    assert mesh.max_ports_used_per_tier[1] == 96 + 14
    tree = design_fabric(FabricSpec(nodes=3 * 768, ports_per_node=8, radix=128, tiers=2,
                                    pods=3, oversubscription=7.0))
    assert (tree.switches_per_tier[-1], tree.links_per_tier[-1]) == (22, 2_688)


def test_the_performance_model_sees_a_meshs_oversubscription():
    """Through super switches the traffic between pods meets R; through a mesh of 2 or 3
    pods also R (the pods' ring uses every peer bundle), of P > 3 pods R·(P-1)/2 (the ring
    uses 2 of a pod's P-1 peer bundles)."""
    from models.design.evaluate import pod_oversubscription

    def ratio(pods, join):
        return pod_oversubscription(design_fabric(FabricSpec(
            nodes=64 * pods, ports_per_node=8, radix=64, tiers=2, pods=pods,
            oversubscription=4.0, pod_join=join)))
    assert [ratio(p, "super") for p in (2, 3, 5)] == [4.0, 4.0, 4.0]
    assert [ratio(p, "mesh") for p in (2, 3, 5)] == [4.0, 4.0, 8.0]


def meshed_campus() -> dict:
    d = tiny_campus(245e6, fr4_usd=3000.0)
    d["choices"]["fabrics"] = [
        {"switch": "quantum2-qm9700", "tiers": 2, "pods_per": "building",
         "oversubscription": 7.0},
        {"switch": "quantum2-qm9700", "tiers": 2, "pods_per": "building",
         "oversubscription": 7.0, "pod_join": "mesh"}]
    return d


def test_the_milp_chooses_the_mesh_when_it_costs_less_for_the_same_throughput():
    """3,584 GPUs on the two 3 MW buildings, pods at 7:1 joined by super switches or by a
    mesh. Two pods see the same oversubscription either way, so the throughput is equal;
    the mesh saves the 8 super switches ($36,000 each) and half the 512 campus links
    (256 fewer FR4 links: 512 modules at $3,000 and 256 fibres at $300), $2.06M less
    equipment before the facility, so the MILP (cheapest design at the best throughput)
    takes it. Placed: the placed switches and links per tier are the designed ones, and
    the 256 mesh links all join the two buildings."""
    inputs = instance_from_dict(meshed_campus())
    result = solve(inputs, place=True)
    s = result.summary
    assert s["status"] == "optimal" and s["verified"] is True
    assert s["placement"]["verified"] is True
    assert (s["design"]["pod_join"], s["design"]["gpus"]) == ("mesh", 3584)
    assert s["design"]["switches_per_tier"] == [112, 64, 0]
    assert s["design"]["links_per_tier"] == [3584, 3584, 256]
    tree = next(r for r in s["runner_ups"] if r["pods"] == 2 and r["gpus"] == 3584)
    assert tree["effective_tokens_per_s"] == pytest.approx(
        s["throughput"]["effective_tokens_per_s"])
    assert tree["capex_usd"] > s["cost"]["capex_usd"]
    placement = result.placement
    check_pods_placed(result.inputs, placement, [112, 64, 0], [3584, 3584, 256])
    where = {r.id: r.position.building for r in placement.racks}
    mesh = [run for run in placement.runs if run.link_class == "spine-spine"]
    assert sum(run.count for run in mesh) == 256
    assert all(where[run.a] != where[run.b] for run in mesh)


def test_a_mesh_of_building_pods_places_on_the_default_campus():
    """Tomahawk 5, the 3 building pods of 768 nodes at 7:1 joined by a mesh: the placed
    fabric is the designed one (no super switch), and each pair of buildings has 448 of
    the 1,344 mesh links."""
    inputs = prepare(instance_from_dict(tomllib.loads(DEFAULT_INSTANCE.read_text())))
    parts = resolve_fabric_parts(inputs, "h100-sxm", "tomahawk5")
    nodes = 3 * 768
    designed = design_fabric(FabricSpec(nodes=nodes, ports_per_node=8, radix=parts.radix,
                                        tiers=2, pods=3, oversubscription=7.0,
                                        pod_join="mesh"))
    design = DesignToPlace("h100-sxm", "tomahawk5", nodes, designed.tiers, 3, 7.0, True,
                           "single", switches_per_tier=designed.switches_per_tier,
                           links_per_tier=designed.links_per_tier, pods_in_buildings=True,
                           pod_join="mesh")
    result = place(inputs, design, SolveOptions(placement_time_limit_s=10))
    check_pods_placed(inputs, result, designed.switches_per_tier, designed.links_per_tier)
    where = {r.id: r.position.building for r in result.racks}
    pairs = Counter()
    for run in result.runs:
        if run.link_class == "spine-spine":
            pairs[tuple(sorted((where[run.a], where[run.b])))] += run.count
    assert sorted(pairs.values()) == [448, 448, 448] and len(pairs) == 3


def test_the_checker_fails_a_mesh_wired_inside_one_building():
    import dataclasses

    from solver.placement_check import check_placement

    inputs = instance_from_dict(meshed_campus())
    result = solve(inputs, place=True)
    placement = result.placement
    where = {r.id: r.position.building for r in placement.racks}
    run = next(r for r in placement.runs if r.link_class == "spine-spine")
    peer = next(r.id for r in placement.racks
                if r.role == "spine" and where[r.id] == where[run.a] and r.id != run.a)
    moved = dataclasses.replace(placement, runs=tuple(
        dataclasses.replace(r, b=peer) if r is run else r for r in placement.runs))
    problems = check_placement(result.inputs, moved)
    assert any("mesh link must join" in p for p in problems)
    assert any("the mesh gives each pair of pods 256" in p for p in problems)


def test_a_mesh_without_building_pods_is_refused_naming_the_field():
    from solver.errors import InvalidInstance

    d = copy.deepcopy(read_document(TINY))
    d["choices"]["fabrics"] = [{"switch": "quantum2-qm9700", "pods": 2, "pod_join": "mesh"}]
    with pytest.raises(InvalidInstance, match=r"choices\.fabrics\.0: .*pods_per = 'building'"):
        instance_from_dict(d)


# --- pods per hall ------------------------------------------------------------------------

def hall_campus(join: str = "super", pods_per: str = "hall") -> dict:
    """The tiny instance on one 5 MW building of two 2 MW halls (h1: 4 rows, h2: 3 rows of
    24 positions), one pod per hall at 4:1 on Quantum-2, rail-optimized."""
    d = copy.deepcopy(read_document(TINY))
    d["limits"]["it_power_mw"] = 5.0
    d["site"]["buildings"] = [{"name": "a", "it_power_mw": 5.0, "halls": [
        {"name": "h1", "rows": 4, "positions_per_row": 24, "rack_power_kw": 40.0,
         "power_kw": 2000.0, "origin_m": [0.0, 0.0]},
        {"name": "h2", "rows": 3, "positions_per_row": 24, "rack_power_kw": 40.0,
         "power_kw": 2000.0, "origin_m": [0.0, 30.0]}]}]
    d["choices"].update({"rail_optimized": [True], "fabrics": [
        {"switch": "quantum2-qm9700", "pods_per": pods_per, "oversubscription": 4.0,
         "pod_join": join}]})
    return d


@pytest.mark.parametrize(("join", "switches", "top_links"),
                         [("super", [64, 64, 8], 512), ("mesh", [64, 64, 0], 256)])
def test_hall_pods_are_placed_pod_by_hall(join, switches, top_links):
    """By hand: a hall takes min(block slots, ⌊1,869 kW / 346.5 kW⌋) blocks of 32 nodes:
    h1 5, h2 4 (3 rows, the middle one for network racks, 2 blocks a row), so each pod
    has at most 4 blocks: 2 pods of 128 nodes = 2,048 GPUs (the next size, 288 nodes,
    needs 5 blocks a pod). A pod: 32 rail leaves of 32 uplinks = 1,024 leaf links on 32
    pod tops (d = 32); at 4:1 u = 8: the pods' 2 x 32 x 8 = 512 uplinks go to 8 super
    switches, or, meshed, are 256 links between the two pod tops' halls. Placed: each
    hall holds its pod's 128 nodes, the fabric is the designed one, and only the class
    joining the pods crosses halls."""
    result = solve(instance_from_dict(hall_campus(join)), place=True)
    s = result.summary
    assert s["status"] == "optimal" and s["verified"] is True
    assert s["placement"]["verified"] is True
    d = s["design"]
    assert (d["gpus"], d["pods"], d["pods_in_halls"], d["pod_join"]) == (2048, 2, True, join)
    assert d["switches_per_tier"] == switches
    assert d["links_per_tier"] == [2048, 2048, top_links]
    placement = result.placement
    fabric = placement.inputs.fabric
    assert list(fabric.switches_per_tier) == switches
    assert list(fabric.links_per_tier) == [2048, 2048, top_links]
    hall = {r.id: r.position.hall for r in placement.racks}
    nodes = Counter()
    for r in placement.racks:
        nodes[r.position.hall] += r.nodes
    assert nodes == {"h1": 128, "h2": 128}
    crossing = {run.link_class for run in placement.runs if hall[run.a] != hall[run.b]}
    assert crossing <= {fabric.link_classes[-1].name}


def test_checker_fails_pods_placed_across_halls():
    """A hall-pod fabric placed freely and then checked as aligned with halls: the
    placement checker re-derives each hall's pod."""
    import dataclasses

    from solver.placement_check import check_placement

    result = solve(instance_from_dict(hall_campus()), place=True)
    inputs, placement = result.inputs, result.placement
    free = dataclasses.replace(placement.inputs.design, pods_in_buildings=False,
                               pods_in_halls=False)
    loose = place(inputs, free, SolveOptions(placement_time_limit_s=5))
    assert loose.summary["verified"] is True
    hall = {r.id: r.position.hall for r in loose.racks}
    if all(hall[r.a] == hall[r.b] for r in loose.runs if r.link_class == "leaf-spine"):
        pytest.skip("the free placement happens to keep every pod in one hall")
    moved = dataclasses.replace(loose, inputs=dataclasses.replace(
        loose.inputs, design=placement.inputs.design))
    problems = check_placement(inputs, moved)
    assert any("cross halls" in p or "its pod has" in p for p in problems)


@pytest.mark.parametrize("join", ["super", "mesh"])
def test_a_design_json_of_hall_pods_re_derives_its_pods_and_join(join):
    """design.json carries pods_in_halls and pod_join; placing from it re-derives the same
    design placement gets inside solve; a file that drops pods_in_halls names no
    configuration of the instance and is refused."""
    import json

    from solver.design_file import placeable_design
    from solver.errors import InvalidInstance
    from solver.placement import design_to_place
    from solver.schema.design_file import DesignFile

    result = solve(instance_from_dict(hall_campus(join)), place=False)
    doc = json.loads(json.dumps(result.to_dict()))
    assert placeable_design(result.inputs, DesignFile.model_validate(doc)) == design_to_place(
        result.design, result.inputs)
    doc["design"]["pods_in_halls"] = False
    with pytest.raises(InvalidInstance, match="no configuration"):
        placeable_design(result.inputs, DesignFile.model_validate(doc))


def test_a_hall_too_small_for_its_pod_is_diagnosed():
    """At least 2,304 GPUs = 288 nodes = two pods of 5 blocks; hall h2
    has 4 block slots: short by 1 (and the building by 1 of its 9)."""
    d = hall_campus()
    d["limits"]["min_gpus"] = 2304
    s = solve(instance_from_dict(d), place=False).summary
    assert s["status"] == "infeasible"
    assert any(m.startswith("site.buildings[a].halls[h2]") and "short by 1 block slots" in m
               for m in s["diagnosis"])


def test_the_fabric_command_builds_a_mesh(cli):
    """`clusterplan fabric --pod-join mesh`: the hand counts of the 3-pod mesh above (3 x
    768 Tomahawk 5 nodes at 7:1: no super switch, 1,344 links at campus reach); a bad
    value, or a mesh of one pod, is refused naming the option (exit 3)."""
    import json

    args = ["fabric", "--gpus", "18432", "--gpu", "h100-sxm", "--switch", "tomahawk5",
            "--pods", "3", "--tiers", "2", "--oversubscription", "7"]
    doc = json.loads(cli(*args, "--pod-join", "mesh", "--json").stdout)
    assert doc["pod_join"] == "mesh"
    assert doc["switches_per_tier"] == [288, 192, 0]
    assert doc["links_per_tier"] == [18_432, 18_432, 1_344]
    assert doc["link_classes"][-1]["name"] == "spine-spine"
    bad = cli(*args, "--pod-join", "ring")
    assert bad.exit_code == 3 and "--pod-join" in bad.output
    one_pod = [a if a != "3" else "1" for a in args]
    bad = cli(*one_pod, "--pod-join", "mesh")
    assert bad.exit_code == 3 and "--pod-join" in bad.output and "two or more pods" in bad.output


def test_a_pod_of_a_partial_unit_counts_the_nodes_it_has():
    """Two buildings of 0.6 MW, one pod per building. By hand: a node draws 10,400 W, a
    rail leaf 1,707 W as placement counts it (747 W + 64 ports x 15 W), a block is a
    scalable unit of 32 nodes and its 8 rail leaves. 96 nodes are two pods of 48 = 1.5
    units: 2 blocks each, the second half full. Their blocks draw 48 x 10,400 + 2 x 8 x
    1,707 = 526,512 W, not 2 full blocks' 2 x (332,800 + 13,656) = 692,912 W; with the
    pod's 16 tier-2 switches 526,512 + 16 x 1,707 = 553,824 W, within the 600 kW / 1.07 =
    560,748 W a building's racks may draw (counted full: 720,224 W, and only 64 nodes
    were built). 128 nodes (pods of 2 full units, 720,224 W) do not fit. Placed, each
    building holds its 48 nodes and the placement checker (rack by rack, from the nodes
    each rack holds) passes."""
    result = solve(instance_from_dict(small_pods(0.6)), place=True)
    assert result.status == "optimal" and result.summary["verified"] is True
    k = result.design.candidate
    assert (k.nodes + k.spare_nodes, k.extra["pods"], k.extra["blocks"]) == (96, 2, 4)
    assert k.extra["pod_blocks_power_w"] == pytest.approx((526_512, 526_512))
    assert k.extra["pod_power_w"] == pytest.approx(553_824)
    assert k.switches_per_tier[1] == 32  # 16 tier-2 switches a pod
    assert result.summary["placement"]["verified"] is True
    nodes = Counter()
    for r in result.placement.racks:
        nodes[r.position.building] += r.nodes
    assert nodes == {"a": 48, "b": 48}


def test_the_wired_ratio_between_pods_is_reported_with_the_one_asked_for(cli, tmp_path):
    """256 H100 (32 nodes x 8 rails) on QM9700 in 4 pods at 7:1. By hand: a pod of 8 nodes
    has 64 endpoints under 2 pod tops of d = 32 downlinks; each gets ⌈32·64/(7·64)⌉ =
    ⌈4.57⌉ = 5 uplinks, 10 links leave a pod: wired 64/10 = 6.4:1, not the 7:1 asked for.
    design.json, summary.md, report.html and ``fabric --json`` report 6.4 as
    ``oversubscription`` and keep 7 as ``oversubscription_requested`` (the decision a
    design file gives back to ``place``)."""
    import json

    d = copy.deepcopy(read_document(TINY))
    d["choices"].update({"rail_optimized": [True], "recovery": ["storage"], "fabrics": [
        {"switch": "quantum2-qm9700", "pods": 4, "oversubscription": 7.0}]})
    d["limits"]["max_gpus"] = 256
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(d))
    run = cli("solve", path, "--out", tmp_path / "out", "--json")
    assert run.exit_code == 0, run.output
    design = json.loads(run.stdout)["design"]
    assert (design["gpus"], design["pods"], design["switches_per_tier"]) == (256, 4, [32, 8, 1])
    assert (design["oversubscription"], design["oversubscription_requested"]) == (6.4, 7.0)
    written = json.loads((tmp_path / "out" / "design.json").read_text())["design"]
    assert (written["oversubscription"], written["oversubscription_requested"]) == (6.4, 7.0)
    for name in ("summary.md", "report.html"):
        assert "6.4:1 between pods (7:1 asked)" in (tmp_path / "out" / name).read_text()
    # the design file is placed again with the fabric it asked for
    again = cli("place", tmp_path / "out" / "design.json", "--instance", path,
                "--out", tmp_path / "placed", "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["design"]["switches_per_tier"] == [32, 8, 1]
    doc = json.loads(cli("fabric", "--gpus", "256", "--gpu", "h100-sxm", "--switch",
                         "quantum2-qm9700", "--pods", "4", "--oversubscription", "7",
                         "--json").stdout)
    assert (doc["oversubscription"], doc["oversubscription_requested"]) == (6.4, 7.0)


def test_design_stage_building_rows_count_each_pods_nodes():
    """tests/data/review/pod-building-rows.json (review 6, defect 4): 512 B200 in two
    pods aligned with the buildings, 33 nodes each (64 + 2 spares), one pod per
    building. The building rows counted a whole scalable unit of nodes at full power in
    each, so b1 read 0.950 MW of its 0.649 MW (slack -0.301, not binding) on a verified
    design, and the rows summed to 1.97 MW against the campus's 1.049 MW. They now count
    each pod's nodes as prune and the design MILP do: within each building's power and
    summing to the campus's critical IT (all of it stands in the two buildings)."""
    path = Path(__file__).resolve().parent / "data" / "review" / "pod-building-rows.json"
    s = solve(instance_from_dict(read_document(path)), place=False).summary
    assert (s["design"]["gpus"], s["design"]["pods"], s["verified"]) == (512, 2, True)
    assert s["design"]["scalable_units_per_building"] == {"b0": 1, "b1": 1}
    rows = [b for b in s["binding"] if b["name"].endswith("].it_power_mw")]
    assert [b["name"] for b in rows] == ["site.buildings[b0].it_power_mw",
                                         "site.buildings[b1].it_power_mw"]
    for b in rows:
        assert 0 < b["value"] <= b["limit"] and b["slack"] >= 0, b
    assert sum(b["value"] for b in rows) == pytest.approx(s["power"]["it_mw"], rel=1e-12)
