"""Fabric model: closed forms, public reference architectures, properties, media, CLI."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.fabric import (
    FabricSpec,
    LinkClass,
    choose_media,
    design_fabric,
    fewest_tiers,
    leaf_groups,
    max_endpoints,
    media_line,
    pod_nodes,
    scalable_unit_nodes,
)

# --- closed forms -----------------------------------------------------------------------


@pytest.mark.parametrize(("radix", "tiers", "expected"), [
    (64, 2, 2048), (64, 3, 65_536), (128, 2, 8192), (128, 3, 524_288), (144, 2, 10_368)])
def test_max_endpoints_closed_form(radix, tiers, expected):
    assert max_endpoints(radix, tiers) == expected


@pytest.mark.parametrize("radix", [8, 16, 32, 64])
def test_full_three_tier_k_ary_fat_tree_has_5k2_over_4_switches(radix):
    nodes = max_endpoints(radix, 3)
    fabric = design_fabric(FabricSpec(nodes=nodes, ports_per_node=1, radix=radix, tiers=3))
    assert fabric.switches_total == 5 * radix**2 // 4
    assert fabric.switches_per_tier == (radix**2 // 2, radix**2 // 2, radix**2 // 4)
    assert fabric.max_endpoints == nodes


def test_fewest_tiers_boundaries():
    assert fewest_tiers(64, 64) == 1
    assert fewest_tiers(65, 64) == 2
    assert fewest_tiers(2048, 64) == 2
    assert fewest_tiers(2049, 64) == 3
    assert fewest_tiers(65_537, 64) == 4


# --- public reference architectures -------------------------------------------------------

H100_RA = ("https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-"
           "infrastructure-h100/latest/network-fabrics.html")
B200_RA = ("https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-"
           "infrastructure-b200/latest/dgx-superpod-architecture.html")
B300_XDR_RA = ("https://docs.nvidia.com/dgx-superpod/reference-architecture/scalable-"
               "infrastructure-b300-xdr/latest/dgx-superpod-architecture.html")


# H100_RA Table 4 "Compute fabric component count" (QM9700, 64 x NDR 400G; SU = 32 nodes,
# one node slot of the last SU holds UFM, so the fabric is built for the full SU).
# (SUs, node slots, leaf, spine, spine-leaf cables)
@pytest.mark.parametrize(("sus", "leaf", "spine", "leaf_spine"), [
    (1, 8, 4, 256), (2, 16, 8, 512), (3, 24, 16, 768), (4, 32, 16, 1024)])
def test_dgx_superpod_h100_compute_fabric(sus, leaf, spine, leaf_spine):
    for nodes in (32 * sus - 1, 32 * sus):  # 127 DGX + UFM build like 128 slots
        fabric = design_fabric(FabricSpec(nodes=nodes, ports_per_node=8, radix=64))
        assert fabric.switches_per_tier == (leaf, spine), H100_RA
        assert fabric.links_per_tier == (nodes * 8, leaf_spine), H100_RA


# B200_RA "Larger DGX SuperPOD component counts" (QM9700 NDR, SU = 32 DGX B200):
# (nodes, leaf, spine, core, node-leaf, leaf-spine, spine-core)
@pytest.mark.parametrize("row", [
    (64, 16, 8, None, 512, 512, None), (128, 32, 16, None, 1024, 1024, None),
    (256, 64, 32, None, 2048, 2048, None), (512, 128, 128, 64, 4096, 4096, 4096),
    (1024, 256, 256, 128, 8192, 8192, 8192), (2048, 512, 512, 256, 16384, 16384, 16384)])
def test_dgx_superpod_b200_component_counts(row):
    nodes, leaf, spine, core, *cables = row
    fabric = design_fabric(FabricSpec(nodes=nodes, ports_per_node=8, radix=64))
    expect = tuple(x for x in (leaf, spine, core) if x is not None)
    assert fabric.switches_per_tier == expect, B200_RA
    assert fabric.links_per_tier == tuple(c for c in cables if c is not None), B200_RA


# B300_XDR_RA Table 3 (Quantum-X800 Q3400, 144 x XDR 800G; SU = 72 DGX B300):
# (nodes, leaf, spine, node-leaf, leaf-spine). 4 SU -> 18 spines: the fewest divisor of
# the 72 leaf uplinks that gives the 32 leaves' 2,304 uplinks enough ports.
@pytest.mark.parametrize(("nodes", "leaf", "spine", "node_leaf", "leaf_spine"), [
    (72, 8, 4, 576, 576), (144, 16, 8, 1152, 1152), (288, 32, 18, 2304, 2304),
    (576, 64, 36, 4608, 4608), (1296, 144, 72, 10368, 10368)])
def test_dgx_superpod_b300_xdr_component_counts(nodes, leaf, spine, node_leaf, leaf_spine):
    fabric = design_fabric(FabricSpec(nodes=nodes, ports_per_node=8, radix=144))
    assert fabric.switches_per_tier == (leaf, spine), B300_XDR_RA
    assert fabric.links_per_tier == (node_leaf, leaf_spine), B300_XDR_RA
    assert scalable_unit_nodes(144, 8, True) == 72, B300_XDR_RA


# --- the 100k-H100 campus -----------------------------------------------------------------


def test_100k_h100_needs_four_tiers_on_qm9700_and_three_on_sn5600():
    ib = design_fabric(FabricSpec(nodes=12_500, ports_per_node=8, radix=64))
    eth = design_fabric(FabricSpec(nodes=12_500, ports_per_node=8, radix=128))
    assert (ib.tiers, eth.tiers) == (4, 3)
    assert ib.endpoints == eth.endpoints == 100_000
    assert ib.switches_per_tier[0] == 8 * math.ceil(12_500 / 32)
    assert eth.switches_per_tier[0] == 8 * math.ceil(12_500 / 64)


def test_100k_h100_as_four_oversubscribed_pods_of_three_tiers():
    spec = FabricSpec(nodes=12_500, ports_per_node=8, radix=64, tiers=3, pods=4,
                      oversubscription=7)
    fabric = design_fabric(spec)
    assert (fabric.pods, fabric.pod_tiers, fabric.tiers) == (4, 3, 4)
    per_pod_endpoints = 12_500 // 4 * 8
    # The pods' uplinks carry at least 1/7 of the pod bandwidth, and not much more.
    assert per_pod_endpoints / 7 <= fabric.links_per_tier[3] / 4 < per_pod_endpoints / 6
    assert fabric.link_classes[3].name == "core-super"
    non_blocking = design_fabric(FabricSpec(nodes=12_500, ports_per_node=8, radix=64))
    assert fabric.switches_total < non_blocking.switches_total
    with pytest.raises(ValueError, match="tiers"):
        design_fabric(FabricSpec(nodes=12_500, ports_per_node=8, radix=64, tiers=3))


@pytest.mark.parametrize(("join", "switches", "links", "wired", "seen"), [
    ("mesh", (32, 8, 0), (256, 256, 72), 64 / 36, 64 / 36 * 3 / 2),
    ("super", (32, 8, 2), (256, 256, 128), 2.0, 2.0)])
def test_pods_smaller_than_a_unit_are_wired_for_their_endpoints(join, switches, links, wired,
                                                                seen):
    """256 H100 (32 nodes x 8 rails), QM9700 (k = 64, h = 32), 4 pods at 2:1. By hand: a
    pod of 8 nodes (a quarter unit) has 8 rail leaves, each with 8 nodes down and 8
    uplinks (not h = 32): 64 leaf-top links a pod. Pod tops S | 8 with d = 64/S: S = 1
    has no ports left, S = 2 gives d = 32, u = 32/2 = 16. Super: 32 uplinks a pod = E/R
    = 64/2, 128 in all on 2 super switches of 64 ports. Mesh: u rounded up to a multiple of
    P-1 = 3 -> 18, 36 a pod, 4 x 36 / 2 = 72 mesh links (E/(2R) = 64, rounded up); wired
    64/36 = 1.78:1, and the pods' ring uses 2 of 3 peer bundles: 1.78 x 3/2 = 2.67:1. (It
    was [32, 32, 0] switches and [256, 1024, 288] links: a full unit's cabling, 288 campus
    links for 256 GPUs, yet charged 3:1.)"""
    from models.design.evaluate import pod_oversubscription

    fabric = design_fabric(FabricSpec(nodes=32, ports_per_node=8, radix=64, pods=4,
                                      oversubscription=2.0, pod_join=join))
    assert (fabric.switches_per_tier, fabric.links_per_tier) == (switches, links)
    assert fabric.leaf_uplinks == 8 and fabric.max_ports_used_per_tier[0] == 16
    assert fabric.wired_oversubscription == pytest.approx(wired)
    assert pod_oversubscription(fabric) == pytest.approx(seen)
    # the leaves and pod tops are those of a 2-tier tree of one pod's 8 nodes
    pod = design_fabric(FabricSpec(nodes=8, ports_per_node=8, radix=64, tiers=2))
    assert pod.switches_per_tier[0] == switches[0] // 4


def test_a_pod_of_nine_nodes_rounds_its_leaf_uplinks_to_a_divisor_of_h():
    """4 pods of 9 nodes x 8 rails (the review's hall pods of 34 nodes), k = 64, 7:1. By
    hand: 8 leaves with 9 nodes down get e = 16 uplinks (fewest divisor of 32 >= 9, so
    each pod top takes the same links from every leaf), 128 leaf-top links a pod. Pod tops
    S | 16 with d = 128/S: S = 2, d = 64 has no ports left; S = 4, d = 32 and u =
    ⌈32·72/(7·128)⌉ = 3, 12 links leave a pod (>= 72/7 = 10.3): wired 6:1. (It was 32
    leaf uplinks, 8 pod tops a pod and 8 x 5 = 40 links leaving it: 1.8:1.)"""
    fabric = design_fabric(FabricSpec(nodes=36, ports_per_node=8, radix=64, pods=4,
                                      oversubscription=7.0))
    assert fabric.leaf_uplinks == 16
    assert fabric.switches_per_tier[:2] == (4 * 8, 4 * 4)
    assert fabric.links_per_tier[:3] == (288, 4 * 128, 4 * 12)
    assert fabric.wired_oversubscription == 6.0


def test_pods_wired_below_one_are_not_faster_than_their_nics():
    """64 nodes x 8 ports, middle-of-rack, k = 64, 3 pods at 1:1: pods of ⌈64/3⌉ = 22
    nodes, 3 x 22 x 8 = 528 endpoints, and 600 links leave the pods (uplinks round up):
    wired 528/600 = 0.88:1. The traffic between pods still runs at most at the NICs'
    rate, so the performance model sees 1:1 (was 0.88: faster than the NIC)."""
    from models.design.evaluate import pod_oversubscription

    fabric = design_fabric(FabricSpec(nodes=64, ports_per_node=8, radix=64, pods=3,
                                      oversubscription=1.0, rail_optimized=False))
    assert fabric.links_per_tier[-1] == 600
    assert fabric.wired_oversubscription == pytest.approx(0.88)
    assert pod_oversubscription(fabric) == 1.0


def test_pods_with_a_partial_unit_send_their_endpoints_over_r():
    """4 pods of 40 nodes (a unit of 32 + 8) x 8 rails, k = 64, 2:1, 2 tiers. The leaves
    keep a full unit's cabling: 16 leaves x 32 = 512 pod-top downlinks for 320 endpoints,
    so a pod top with d downlinks gets ⌈d·320/(2·512)⌉ uplinks: the one plane of 16 leaves
    needs S = 16 pod tops (S = 8: d = 64, no ports left) with d = 32 and u = 10, 160 links
    leaving a pod = 320/2 exactly (16 each before, 256 a pod: 1.25:1 wired)."""
    fabric = design_fabric(FabricSpec(nodes=160, ports_per_node=8, radix=64, tiers=2,
                                      pods=4, oversubscription=2.0))
    assert fabric.switches_per_tier[:2] == (4 * 16, 4 * 16)
    assert fabric.links_per_tier[:3] == (1280, 4 * 512, 4 * 160)
    assert fabric.wired_oversubscription == 2.0


def test_middle_of_rack_groups_whole_nodes_per_leaf():
    assert scalable_unit_nodes(64, 8, False) == 4
    fabric = design_fabric(FabricSpec(nodes=10, ports_per_node=8, radix=64,
                                      rail_optimized=False))
    assert fabric.switches_per_tier[0] == 3  # 4 + 4 + 2 nodes
    assert fabric.max_ports_used_per_tier[0] == 32 + 32
    with pytest.raises(ValueError, match="middle-of-rack"):
        design_fabric(FabricSpec(nodes=2, ports_per_node=72, radix=64, rail_optimized=False))


def test_nvl72_rail_optimized_has_72_leaves_per_scalable_unit():
    fabric = design_fabric(FabricSpec(nodes=40, ports_per_node=72, radix=64))
    assert fabric.switches_per_tier[0] == 72 * 2  # 40 racks = 2 units of 32


def test_single_switch_and_errors():
    one = design_fabric(FabricSpec(nodes=8, ports_per_node=8, radix=64))
    assert (one.tiers, one.switches_per_tier, one.links_per_tier) == (1, (1,), (64,))
    with pytest.raises(ValueError, match="radix"):
        design_fabric(FabricSpec(nodes=8, ports_per_node=8, radix=63))
    with pytest.raises(ValueError, match="nodes"):
        design_fabric(FabricSpec(nodes=0, ports_per_node=8, radix=64))
    with pytest.raises(ValueError, match="pods"):
        design_fabric(FabricSpec(nodes=100, ports_per_node=8, radix=64, pods=65, tiers=2))


# --- properties ---------------------------------------------------------------------------

specs = st.builds(
    FabricSpec,
    nodes=st.integers(1, 20_000),
    ports_per_node=st.sampled_from([1, 2, 4, 8]),
    radix=st.sampled_from([16, 32, 64, 128, 144]),
    rail_optimized=st.booleans())


def _try(spec):
    try:
        return design_fabric(spec)
    except ValueError:
        return None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(specs)
def test_every_endpoint_connected_ports_respected_links_conserve(spec):
    fabric = _try(spec)
    if fabric is None:
        return
    assert fabric.links_per_tier[0] == fabric.endpoints == spec.nodes * spec.ports_per_node
    assert fabric.endpoints <= fabric.max_endpoints
    assert all(used <= spec.radix for used in fabric.max_ports_used_per_tier)
    for t in range(fabric.tiers - 1):
        assert fabric.uplinks_per_tier[t] == fabric.links_per_tier[t + 1]
    assert fabric.uplinks_per_tier[-1] == 0
    assert [c.links for c in fabric.link_classes] == list(fabric.links_per_tier)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(specs, st.integers(1, 3000), st.sampled_from([None, 2, 3, 4]))
def test_switch_counts_monotone_in_nodes(spec, extra, tiers):
    small = _try(FabricSpec(spec.nodes, spec.ports_per_node, spec.radix, tiers,
                            rail_optimized=spec.rail_optimized))
    big = _try(FabricSpec(spec.nodes + extra, spec.ports_per_node, spec.radix, tiers,
                          rail_optimized=spec.rail_optimized))
    if small is None or big is None:
        return
    assert big.switches_total >= small.switches_total
    if big.tiers == small.tiers:
        assert all(b >= s for b, s in zip(big.switches_per_tier, small.switches_per_tier,
                                          strict=True))


pod_specs = st.builds(
    FabricSpec,
    nodes=st.integers(2, 20_000),
    ports_per_node=st.sampled_from([1, 8]),
    radix=st.sampled_from([32, 64, 128]),
    tiers=st.sampled_from([None, 2, 3]),
    pods=st.integers(2, 8),
    oversubscription=st.sampled_from([1.0, 1.5, 2.0, 3.0, 4.0, 7.0]),
    rail_optimized=st.booleans())


@settings(max_examples=200, deadline=None, derandomize=True)
@given(pod_specs, st.sampled_from([1.0, 2.0, 3.5, 8.0]))
def test_oversubscription_never_adds_switches(spec, more):
    low = _try(spec)
    high = _try(FabricSpec(spec.nodes, spec.ports_per_node, spec.radix, spec.tiers, spec.pods,
                           spec.oversubscription + more, spec.rail_optimized))
    if low is None:
        return
    assert high is not None
    assert high.switches_total <= low.switches_total
    # pods: the same invariants as a single tree
    assert low.links_per_tier[0] == low.endpoints
    assert all(used <= spec.radix for used in high.max_ports_used_per_tier)
    for f in (low, high):
        for t in range(f.tiers - 1):
            assert f.uplinks_per_tier[t] == f.links_per_tier[t + 1]
        pod_endpoints = math.ceil(spec.nodes / spec.pods) * spec.ports_per_node
        ratio = f.spec.oversubscription
        assert f.links_per_tier[-1] >= spec.pods * pod_endpoints / ratio - 1e-9
        assert f.wired_oversubscription <= ratio + 1e-9
        unit = scalable_unit_nodes(spec.radix, spec.ports_per_node, spec.rail_optimized)
        if f.pod_tiers == 2 and math.ceil(spec.nodes / spec.pods) < unit:
            # a pod smaller than a unit: its leaves send up what their nodes send down,
            # rounded up to a divisor of h (less than twice it for these radices)
            assert (spec.pods * pod_endpoints <= f.links_per_tier[1]
                    < 2 * spec.pods * pod_endpoints)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(specs, pod_specs))
def test_leaf_groups_partition_the_fabrics_leaves_and_spines(spec):
    """Placement builds the fabric from these groups: they must be the counted fabric."""
    fabric = _try(spec)
    if fabric is None:
        return
    groups = leaf_groups(fabric)
    if fabric.pod_tiers == 1:
        assert groups == () and fabric.switches_per_tier == (1,)
        return
    assert sum(g.leaves for g in groups) == fabric.switches_per_tier[0]
    assert sum(g.spines for g in groups) == fabric.switches_per_tier[1]
    assert {g.pod for g in groups} == set(range(fabric.pods))
    assert all(g.leaves >= 1 and g.spines >= 1 for g in groups)
    if fabric.pod_tiers >= 3:  # balanced wiring: each spine takes h/S links of every leaf
        half = spec.radix // 2
        assert all(half % g.spines == 0 and g.leaves <= g.spines <= half for g in groups)
    assert sum(pod_nodes(spec)) == spec.nodes


@pytest.mark.parametrize("radix", [2, 4])
def test_a_tree_too_deep_is_refused_not_searched_forever(radix):
    """Radix 2 never grows (2·1^L = 2 endpoints): the tier search must stop at MAX_TIERS."""
    with pytest.raises(ValueError, match="tiers"):
        fewest_tiers(10**9, radix)
    with pytest.raises(ValueError, match="tiers"):
        design_fabric(FabricSpec(nodes=10_000, ports_per_node=8, radix=radix))


def test_leaf_groups_by_hand():
    """4 pods of 3-tier QM9700 at 7:1, 11,607 rail-optimized H100 nodes: each pod is
    built for 2,902 nodes = 91 scalable units of 32 nodes -> 728 leaves = 22 groups of 32
    leaves (32 spines each) + one of 24 leaves (32 spines: fewest divisor of 32 >= 24)."""
    fabric = design_fabric(FabricSpec(11_607, 8, 64, tiers=3, pods=4, oversubscription=7.0))
    groups = leaf_groups(fabric)
    assert len(groups) == 4 * 23
    assert [(g.first_leaf, g.leaves, g.spines) for g in groups[21:24]] == [
        (672, 32, 32), (704, 24, 32), (0, 32, 32)]
    assert pod_nodes(fabric.spec) == (2902, 2902, 2902, 2901)


# --- media --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FakeMedium:
    id: str
    kind: str
    gbps: int
    reach_m: float
    links_per_module: int
    price_usd_per_end: float
    power_w_per_end: float
    fiber_usd_per_link: float = 0.0

    @property
    def is_transceiver(self) -> bool:
        return self.kind in ("multimode", "singlemode", "coherent")


MEDIA = (
    FakeMedium("dac", "dac", 400, 3.0, 1, 50.0, 0.0),
    FakeMedium("sr4", "multimode", 400, 50.0, 2, 800.0, 8.0, 20.0),
    FakeMedium("dr4", "singlemode", 400, 500.0, 2, 1200.0, 9.0, 30.0),
    FakeMedium("zr", "coherent", 400, 10_000.0, 1, 9000.0, 20.0, 50.0),
    FakeMedium("dac800", "dac", 800, 3.0, 1, 10.0, 0.0),
)


def test_choose_media_cheapest_that_reaches():
    fabric = design_fabric(FabricSpec(nodes=128, ports_per_node=8, radix=64))
    lines = choose_media(fabric, {"node-leaf": 30.0, "leaf-spine": 100.0}, MEDIA, 400)
    assert [(x.link_class, x.medium_id) for x in lines] == [
        ("node-leaf", "sr4"), ("leaf-spine", "dr4")]
    node_leaf, leaf_spine = lines
    # 1024 links: 512 twin-port modules at the leaves + 1024 single modules at the nodes;
    # money per link end (half a twin-port module) plus fibre per link.
    assert node_leaf.transceivers == 512 + 1024
    assert node_leaf.capex_usd == 2048 * 400.0 + 1024 * 20.0
    assert node_leaf.power_w == 2048 * 4.0
    assert leaf_spine.transceivers == 2 * 512
    twin = choose_media(fabric, {"node-leaf": 30.0, "leaf-spine": 100.0}, MEDIA, 400,
                        twin_port_nics=True)
    assert twin[0].transceivers == 512 + 512
    assert twin[0].capex_usd == node_leaf.capex_usd
    mor = design_fabric(FabricSpec(nodes=128, ports_per_node=8, radix=64,
                                   rail_optimized=False))
    copper = choose_media(mor, {"node-leaf": 3.0, "leaf-spine": 100.0}, MEDIA, 400)
    assert copper[0].medium_id == "dac" and copper[0].transceivers == 0
    assert copper[0].cables == 1024 and copper[0].capex_usd == 1024 * 2 * 50.0


def test_choose_media_errors_name_the_link_class():
    fabric = design_fabric(FabricSpec(nodes=128, ports_per_node=8, radix=64))
    with pytest.raises(ValueError, match="leaf-spine"):
        choose_media(fabric, {"node-leaf": 30.0}, MEDIA, 400)
    with pytest.raises(ValueError, match="leaf-spine"):
        choose_media(fabric, {"node-leaf": 3.0, "leaf-spine": 20_000.0}, MEDIA, 400)


def test_media_line_cable_power_counts_both_ends():
    aec = FakeMedium("aec", "aec", 400, 7.0, 1, 100.0, 6.0)
    line = media_line(LinkClass("leaf-spine", 2, 10), aec, 5.0)
    assert (line.cables, line.transceivers, line.capex_usd, line.power_w) == (
        10, 0, 2000.0, 120.0)


# --- CLI ----------------------------------------------------------------------------------


def _cli(*args):
    from typer.testing import CliRunner

    from solver.cli import app
    return CliRunner().invoke(app, ["fabric", *args])


def _catalog_ready():
    try:
        from solver.loading import load_catalog
        catalog = load_catalog()
    except Exception:  # noqa: BLE001 - the catalog is being written by another engineer
        return False
    return {"h100-sxm"} <= set(catalog.gpu) and {
        "quantum2-qm9700", "spectrum4-sn5600"} <= set(catalog.switch)


needs_catalog = pytest.mark.skipif(not _catalog_ready(), reason="shipped catalog not present")


@needs_catalog
@pytest.mark.parametrize(("switch", "tiers"), [("quantum2-qm9700", 4), ("spectrum4-sn5600", 3)])
def test_cli_100k_h100(switch, tiers):
    result = _cli("--gpus", "100000", "--gpu", "h100-sxm", "--switch", switch, "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["tiers"] == tiers and doc["endpoints"] == 100_000
    assert doc["switches_total"] == sum(doc["switches_per_tier"])
    assert doc["capex_usd"] > 0 and doc["power_w"] > 0
    assert sum(doc["transceivers"].values()) > 0
    assert doc["frontend"]["switches"] > 0


@needs_catalog
@pytest.mark.parametrize(("args", "option"), [
    (["--gpus", "0", "--gpu", "h100-sxm", "--switch", "quantum2-qm9700"], "--gpus"),
    (["--gpus", "8", "--gpu", "nope", "--switch", "quantum2-qm9700"], "--gpu"),
    (["--gpus", "8", "--gpu", "h100-sxm", "--switch", "nope"], "--switch")])
def test_cli_bad_input_exits_3_naming_the_option(args, option):
    result = _cli(*args, "--json")
    assert result.exit_code == 3
    assert option in result.stderr


def test_link_lengths_map_cable_length_fields_to_link_classes():
    from solver.fabric_inputs import link_lengths
    from solver.schema import CableLengths

    lengths = CableLengths(node_leaf_rail_optimized_m=31.0, node_leaf_middle_of_rack_m=2.5,
                           leaf_spine_m=51.0, spine_core_m=301.0, between_buildings_m=1001.0)
    four = design_fabric(FabricSpec(nodes=12_500, ports_per_node=8, radix=64))
    assert link_lengths(lengths, four) == {"node-leaf": 31.0, "leaf-spine": 51.0,
                                           "spine-core": 301.0, "core-super": 1001.0}
    assert link_lengths(lengths, four, single_building=True)["core-super"] == 301.0
    mor = design_fabric(FabricSpec(nodes=64, ports_per_node=8, radix=64, rail_optimized=False))
    assert link_lengths(lengths, mor) == {"node-leaf": 2.5, "leaf-spine": 51.0}
