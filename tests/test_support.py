"""Support networks and storage (models/support.py): sizing by hand, the BOM lines of a
solved instance, and the checker re-deriving them (and failing a tampered line)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from models.support import size_storage, support_design
from solver import load_instance, solve
from solver.checker import check_design
from solver.loading import load_catalog

FAC = SimpleNamespace(
    frontend_port_gbps=400, storage_appliance_usd=260_000.0, storage_appliance_w=2_400.0,
    storage_appliance_write_gbytes_per_s=65.0, storage_appliance_read_gbytes_per_s=90.0,
    storage_appliance_usable_tb=500.0, storage_appliance_ports=4,
    storage_appliance_rack_units=2, checkpoints_retained=5, dataset_bytes_per_token=4.0,
    control_plane_usd=20_000.0, control_plane_w=800.0, control_plane_nodes_per_server=512,
    control_plane_min_servers=5, management_switch_usd=8_000.0, management_switch_w=100.0,
    management_uplinks_per_switch=2, management_uplink_usd=300.0,
    management_aggregation_usd=25_000.0, management_aggregation_w=500.0,
    management_aggregation_ports=64, rack_usd=15_000.0)


def test_storage_is_sized_by_the_largest_need():
    # 11,572 nodes x 1 GB/s = 11,572 GB/s of write: 178 x 65 = 11,570 < 11,572 -> 179.
    # Read at 100% MFU: 92,160 x 989.4e12 / 1.2e8 x 4 B = 3,039.6 GB/s -> 34 appliances.
    s = size_storage(FAC, 11_572, 92_160, 1.0, 989.4, 1.2e8, 25_000.0, 13e12)
    assert s.write_gbytes_per_s == 11_572
    assert s.read_gbytes_per_s == pytest.approx(3_039.6, rel=1e-4)
    assert s.capacity_tb == pytest.approx(5 * 25 + 52)  # 5 checkpoints of 25 TB + 13T x 4 B
    assert (s.appliances, s.bound_by) == (179, "write")
    # No checkpoint bandwidth and a 1 PB-per-checkpoint model: capacity binds.
    s = size_storage(FAC, 64, 512, 0.0, 989.4, 1.2e8, 1e6, None)
    assert (s.appliances, s.bound_by) == (10, "capacity")  # 5,000 TB / 500 TB


def test_support_design_small_by_hand():
    """64 nodes (512 GPUs), 1 GB/s each, 20 compute and network racks.
    Storage: write 64 GB/s, read 16.9 GB/s, 4.5 TB -> 1 appliance (write first on ties).
    Front-end: 1 port per node (400 Gb/s), 4 appliance ports, 5 control-plane servers =
    73 endpoints on one 128-port Tomahawk 5, 73 DAC links at 3 m ($200, 0.2 W each).
    Racks: support ceil((2 + 2 + 5) / 42) = 1; management switches 20 + 1 = 21; aggregation
    ceil(2 x 21 / 64) = 1; uplinks 42."""
    cat = load_catalog()
    d = support_design(FAC, cat.switch["tomahawk5"], list(cat.medium.values()),
                       lambda f: {lc.name: 3.0 for lc in f.link_classes}, 64, 512, 400.0,
                       1.0, 989.4, 1.2e8, 100.0, 1e12, 20)
    assert (d.storage.appliances, d.storage.bound_by) == (1, "write")
    assert d.frontend_ports_per_node == 1 and d.control_plane_servers == 5
    assert d.frontend.switches_total == 1 and sum(d.frontend.links_per_tier) == 73
    assert [m.medium_id for m in d.frontend_media] == ["dac-400g"]
    assert (d.support_racks, d.management_switches, d.management_aggregation_switches) == \
        (1, 21, 1)
    usd = (30_000 + 73 * 200 + 260_000 + 5 * 20_000 + 21 * 8_000 + 25_000 + 42 * 300
           + 15_000)
    watts = 913 + 73 * 0.2 + 2_400 + 5 * 800 + 21 * 100 + 500
    assert sum(x.cost_usd for x in d.lines) == pytest.approx(usd)
    assert d.power_w == pytest.approx(watts)


@pytest.mark.parametrize(("rack_power_w", "racks"), [
    (10_000.0, 1), (9_900.0, 2), (5_000.0, 3)])
def test_support_racks_are_as_many_as_their_power_needs(rack_power_w, racks):
    """The design above draws W(S) = 9,927.6 W with its one rack-unit-bound support rack,
    and 100 W more (a management switch; aggregation stays 1) per support rack added.
    At 10 kW a rack, 1 holds; at 9.9 kW, ceil(9,927.6 / 9,900) = 2, W(2) = 10,027.6 fits
    in 2 racks; at 5 kW, 2 then ceil(10,027.6 / 5,000) = 3, W(3) = 10,127.6 <= 15,000."""
    cat = load_catalog()
    d = support_design(FAC, cat.switch["tomahawk5"], list(cat.medium.values()),
                       lambda f: {lc.name: 3.0 for lc in f.link_classes}, 64, 512, 400.0,
                       1.0, 989.4, 1.2e8, 100.0, 1e12, 20, rack_power_w)
    assert d.support_racks == racks and d.management_switches == 20 + racks
    assert d.power_w == pytest.approx(9_927.6 + 100 * (racks - 1))
    assert d.power_w <= racks * rack_power_w
    assert sum(x.quantity for x in d.lines if x.category == "rack-support") == racks


@pytest.fixture(scope="module")
def llama_solved():
    return solve(load_instance("instances/llama3-16k.toml"), place=False)


def test_solved_bom_has_every_network_and_the_checker_rederives_it(llama_solved):
    r = llama_solved
    cats = {line.category for line in r.design.bom()}
    assert {"frontend", "storage", "management", "control-plane", "rack-support"} <= cats
    assert "storage and front-end share" not in {x.item for x in r.design.bom()}
    assert r.summary["verified"]
    assert r.summary["cost"]["equipment_capex_usd"] == pytest.approx(
        sum(x.cost_usd for x in r.design.bom()))


def test_checker_fails_a_tampered_support_line(llama_solved):
    r = llama_solved
    inputs, design = r.inputs, r.design
    lines = tuple(dataclasses.replace(x, quantity=x.quantity - 1)
                  if x.category == "storage" else x for x in design.candidate.lines)
    tampered = dataclasses.replace(design, candidate=dataclasses.replace(
        design.candidate, lines=lines))
    no_requirements = SimpleNamespace(required_effective_tokens_per_s=0.0, min_goodput=0.0)
    assert check_design(inputs, design, no_requirements, design.candidate).ok
    verdict = check_design(inputs, tampered, no_requirements, tampered.candidate)
    assert not verdict.ok
    assert any(f.startswith("support[storage]") for f in verdict.failures)
