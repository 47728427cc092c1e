"""models.space, the space model shared by the design stage and placement: hand-checked
blocks, racks and slots; and every fabric option of the default instance's family, on a
scaled-down campus (tests/data/h100-campus-small.toml), solves and places to the fabric
and the racks it was designed with."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from types import SimpleNamespace

import pytest

from models.fabric import FabricSpec, design_fabric, leaf_groups
from models.space import block_shape, nodes_per_rack, space_layout
from solver import solve
from solver.loading import instance_from_dict, read_document

SMALL = Path(__file__).resolve().parent / "data" / "h100-campus-small.toml"

# an H100-class node: 8 x 700 W + 4,400 W + 8 x 25 W NICs = 10,200 W, 8U
GPU = SimpleNamespace(gpus_per_node=8, gpu_power_w=700.0, node_other_power_w=4400.0,
                      nics_per_node=8, node_rack_units=8, max_nodes_per_rack=4,
                      liquid_cooled=False)
NODE_W = 10_200.0
SWITCH = SimpleNamespace(power_w=747.0, rack_units=1)
MEDIA = [SimpleNamespace(power_w_per_end=8.0, links_per_module=1)]
LEAF_W = 747.0 + 64 * 8.0  # every port at the hungriest medium: 1,259 W
HALL = SimpleNamespace(name="h", rows=5, positions_per_row=24, rack_power_kw=40.0,
                       row_cap_kw=960.0, hall_cap_kw=4800.0, cooling="air")


def test_nodes_per_rack_is_the_tightest_of_catalog_height_and_power():
    assert nodes_per_rack(GPU, NODE_W, HALL) == 3  # floor(40 / 10.2); catalog says 4
    wide = SimpleNamespace(**{**vars(HALL), "rack_power_kw": 50.0})
    assert nodes_per_rack(GPU, NODE_W, wide) == 4  # the catalog's 4 a rack
    liquid = SimpleNamespace(**{**vars(GPU), "liquid_cooled": True})
    assert nodes_per_rack(liquid, NODE_W, HALL) == 0


def test_rail_optimized_blocks_racks_and_slots_by_hand():
    fabric = design_fabric(FabricSpec(nodes=100, ports_per_node=8, radix=64))
    space = space_layout(fabric, GPU, SWITCH, NODE_W, MEDIA, [("b", HALL)])
    # blocks of k/2 = 32 nodes and their 8 rail leaves; the last one holds 4 nodes
    assert (space.su_nodes, space.leaves_per_block) == (32, 8)
    assert space.blocks()[0] == [32, 32, 32, 4]
    assert space.block_sizes() == {32: 3, 4: 1} and space.block_count == 4
    shape = space.halls[0].shape
    # 11 compute racks of 3; the middle rack would take 3 x 8U + 8 x 1U = 32U but
    # 30.6 kW + 8 x 1.259 kW = 40.67 kW > 40 kW: one leaf rack -> 12 positions
    assert (shape.nodes_per_rack, shape.compute_racks, shape.leaf_racks) == (3, 11, 1)
    assert shape.power_w == pytest.approx(32 * NODE_W + 8 * LEAF_W)  # 336,472 W
    assert shape.racks(32) == 12 and shape.racks(4) == 2 + 1
    spines = sum(g.spines for g in leaf_groups(fabric))
    per_rack = min(42, int(40_000 // LEAF_W))  # 31
    assert space.switches_per_rack == per_rack
    assert space.network_racks == -(-spines // per_rack)
    # one network row (1.5 x its racks fit in 24 positions); 4 rows x min(24 // 12,
    # floor(960 / 336.472)) = 4 x 2 block slots
    assert space.halls[0].network_rows == 1
    assert space.halls[0].block_slots == 8
    assert space.racks == 3 * 12 + 3 + space.network_racks


def test_middle_of_rack_leaf_rides_in_its_block():
    shape = block_shape(GPU, SWITCH, NODE_W, 4, 1, LEAF_W, HALL)
    # 4 nodes: 2 racks; the middle (first) rack holds 3 nodes and the leaf: 25U, 31.86 kW
    assert (shape.compute_racks, shape.leaf_racks, shape.width) == (2, 0, 2)
    assert shape.racks(4) == 2 and shape.racks(1) == 1


def test_pods_fill_whole_blocks_pod_by_pod():
    fabric = design_fabric(FabricSpec(nodes=100, ports_per_node=8, radix=64, tiers=2, pods=2,
                                      oversubscription=2.0))
    space = space_layout(fabric, GPU, SWITCH, NODE_W, MEDIA, [("b", HALL)])
    # each pod is built for 50 nodes: blocks of 32 + 18 in both pods
    assert space.blocks()[0] == [32, 18, 32, 18]
    assert space.block_sizes() == {32: 2, 18: 2}


# ---- every fabric option of the default instance's family, placed -------------------

OPTIONS = [(i, rail) for i in range(5) for rail in (True, False)]


@functools.cache
def solved_option(index: int, rail: bool):
    doc = read_document(SMALL)
    d = copy.deepcopy(doc)
    d["choices"]["fabrics"] = [doc["choices"]["fabrics"][index]]
    d["choices"]["rail_optimized"] = [rail]
    return solve(instance_from_dict(d))


@pytest.mark.parametrize(("index", "rail"), OPTIONS,
                         ids=[f"{i}-{'rail' if r else 'mor'}" for i, r in OPTIONS])
def test_every_fabric_option_places_the_fabric_and_racks_it_was_designed_with(index, rail):
    result = solved_option(index, rail)
    s = result.summary
    assert s["status"] == "optimal" and s["verified"] is True
    placed = s["placement"]
    assert placed["status"] in ("optimal", "feasible"), placed.get("diagnosis")
    assert placed["verified"] is True
    design = s["design"]
    assert placed["design"]["switches_per_tier"] == design["switches_per_tier"]
    assert placed["design"]["links_per_tier"] == design["links_per_tier"]
    assert placed["design"]["rail_optimized"] == rail
    # the BOM carries the racks placement stood up; the design estimate's racks
    # (models.space) differ only by the upper-tier switch racks, which the design packs
    # site-wide and placement hall by hall: sum_h ceil(S_h / p) - ceil(S / p) per tier
    (bom_racks,) = [b["quantity"] for b in s["bom"] if b["category"] == "rack"]
    (support,) = [b["quantity"] for b in s["bom"] if b["category"] == "rack-support"]
    assert support == placed["racks"]["support"] == design["support"]["support_racks"]
    assert bom_racks + support == placed["racks_total"] == len(result.placement.racks)
    (designed,) = [b["quantity"] for b in s["design_estimate"]["bom"]
                   if b["category"] == "rack"]
    per_rack = result.placement.inputs.switches_per_rack
    upper_roles = {r.role for r in result.placement.racks} - {"compute", "leaf", "spine",
                                                              "support"}
    by_hall: dict[tuple[str, str], int] = {}
    for r in result.placement.racks:
        if r.role in upper_roles:
            key = (r.role, f"{r.position.building}/{r.position.hall}")
            by_hall[key] = by_hall.get(key, 0) + r.switches
    packing = sum(-(-n // per_rack) for n in by_hall.values()) - sum(
        -(-sum(n for (role, _), n in by_hall.items() if role == tier) // per_rack)
        for tier in upper_roles)
    assert bom_racks - designed == packing
    for (role, hall), n in by_hall.items():
        assert sum(1 for r in result.placement.racks if r.role == role and
                   f"{r.position.building}/{r.position.hall}" == hall) == -(-n // per_rack)
    # the checker reports every link class whose placed media differ from the designed
    designed = {m["link_class"]: m["medium"] for m in s["design_estimate"]["media"]}
    placed_media: dict[str, set[str]] = {}
    for m in s["design"]["media"]:
        placed_media.setdefault(m["link_class"], set()).add(m["medium"])
    assert {c["link_class"] for c in placed["media_changes"]} == {
        lc for lc, medium in designed.items() if placed_media[lc] != {medium}}
    for c in placed["media_changes"]:
        assert c["designed"] == designed[c["link_class"]]
        assert set(c["placed"]) == placed_media[c["link_class"]]
    # the MILP's blocks per building are within each building's slots
    blocks = result.design.blocks_per_building
    assert sum(blocks.values()) == result.design.candidate.extra["blocks"]
    slots = result.design.candidate.extra["block_slots"]
    assert all(blocks[b] <= slots[b] for b in blocks)


def test_goodput_is_re_evaluated_on_the_placed_media():
    """After placement, goodput counts each link class's links by the media placement
    gave them: the same placement re-stated all in DAC copper (the most reliable) gives at
    least its goodput, all in single-mode optics at most."""
    from solver.report import placed_throughput

    result = solved_option(0, True)
    s, doc = result.summary, result.document
    assert result.inputs.objective.reliability_model == "model"
    bom_media = s["placement"]["bom_media"]

    def goodput(kind: str | None) -> float:
        media = [m if kind is None else dict(m, kind=kind) for m in bom_media]
        return placed_throughput(result.inputs, doc, result.design,
                                 dict(s["placement"], bom_media=media)).goodput

    assert s["throughput"]["goodput"] == pytest.approx(goodput(None), rel=1e-12)
    assert goodput("dac") > goodput("singlemode")
    assert goodput("dac") >= s["throughput"]["goodput"] >= goodput("singlemode")
    assert s["throughput"]["effective_tokens_per_s"] == pytest.approx(
        s["throughput"]["tokens_per_s"] * s["throughput"]["goodput"], rel=1e-12)


@pytest.mark.parametrize("nodes", [1, 31, 32, 100, 2_000, 9_999, 40_000])
@pytest.mark.parametrize("rail", [True, False])
@pytest.mark.parametrize("pods", [1, 3])
def test_network_racks_and_power_from_run_length_groups_equal_every_group(nodes, rail, pods):
    """models.fabric.leaf_group_sizes (run-length coded, the hot path's network racks and
    power) against every group of models.fabric.leaf_groups, counted one by one."""
    spec = FabricSpec(nodes=nodes, ports_per_node=8 if rail else 1, radix=64,
                      rail_optimized=rail, pods=pods, oversubscription=2.0 if pods > 1 else 1.0)
    fabric = design_fabric(spec)
    space = space_layout(fabric, GPU, SWITCH, NODE_W, MEDIA, [("b", HALL)])
    groups = leaf_groups(fabric)
    per_rack = space.switches_per_rack
    upper = fabric.switches_per_tier[2:]
    assert space.network_racks == (sum(-(-g.spines // per_rack) for g in groups)
                                   + sum(-(-s // per_rack) for s in upper))
    assert space.network_power_w == (sum(g.spines for g in groups) + sum(upper)) * LEAF_W
    if fabric.pod_tiers > 1:  # the groups are the fabric's leaves and tier-2 switches
        assert sum(g.leaves for g in groups) == fabric.switches_per_tier[0]
        assert sum(g.spines for g in groups) == fabric.switches_per_tier[1]
