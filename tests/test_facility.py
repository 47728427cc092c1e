"""The facility from parts (models/facility.py): redundancy and cooling are decisions of
the design MILP, checked against hand calculations on instances/tiny/min-capex."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest

from models.facility import facility_cost, hall_cooling, pue
from models.space import rack_nodes
from solver import solve
from solver.loading import (
    DEFAULT_INSTANCE,
    instance_from_dict,
    load_catalog,
    load_instance,
    read_document,
)
from solver.prepare import enumerate_configs

MIN_CAPEX = "instances/tiny/min-capex.toml"


def parts_doc(**facility) -> dict:
    """tiny/min-capex (min capex for 700M tokens/s: 32 H100 nodes on QM9700) with the
    facility built from parts and `facility` overrides."""
    doc = read_document(Path(MIN_CAPEX))
    doc["catalog"]["facility"].pop("facility_cost_mode")
    doc["catalog"]["facility"].update(facility)
    return doc


def test_facility_cost_and_pue_by_hand():
    fac = load_catalog().facility
    # 10 MW, 250 racks, N+1 and air: 4.1 + 2.1 $M/MW; shell: site and plant space
    # $3.63M/MW + white space 250 racks x 3 m2 x $15,600.
    f = facility_cost(fac, "N+1", "air", 10e6, 250)
    assert f.electrical_usd == pytest.approx(41e6) and f.cooling_usd == pytest.approx(21e6)
    assert f.shell_usd == pytest.approx(3.63e6 * 10 + 15_600 * 3 * 250)
    assert f.pue == pytest.approx(1 + 0.07 + 0.25 + 0.02)
    assert pue(fac, "2N", "dlc") == pytest.approx(1 + 0.09 + 0.10 + 0.02)
    # 2N costs more than N+1 than N, at every size
    assert (facility_cost(fac, "2N", "air", 1e6, 25).capex_usd
            > facility_cost(fac, "N+1", "air", 1e6, 25).capex_usd
            > facility_cost(fac, "N", "air", 1e6, 25).capex_usd)
    # B200 node 14.3 kW: 2 per air rack (42 kW), 4 with rear doors or liquid (the one
    # rack-capacity rule of the space model, at the cooling's rack power)
    b200 = SimpleNamespace(max_nodes_per_rack=4, node_rack_units=10, liquid_cooled=False)
    assert [rack_nodes(b200, 14_300, fac.cooling_max_rack_kw[t], hall_cooling(t) == "liquid")
            for t in ("air", "rdhx", "dlc")] == [2, 4, 4]
    nvl72 = SimpleNamespace(max_nodes_per_rack=1, node_rack_units=48, liquid_cooled=True)
    assert [rack_nodes(nvl72, 120_000, 200.0, hall_cooling(t) == "liquid")
            for t in ("air", "rdhx", "dlc")] == [0, 0, 1]


@pytest.mark.parametrize("racks_per_mw", [7.5, 9.0, 10.5])
def test_a_liquid_build_lands_in_the_sourced_range(racks_per_mw):
    """Plant and support space scale with power, not racks: an N+1 direct-liquid build at
    NVL72 density (120-132 kW racks, 7.6-8.3 a MW, plus network and support racks) costs
    4.1 + 7.5 + 3.63 $M/MW + white space 3 m2 x $15,600 a rack, inside the $15-20M/MW
    quoted for AI liquid-cooled builds (infra-economics; the shell per rack made it
    ~$8.9M/MW before). An N+1 air hall at 40 kW racks (25 a MW) stays at C&W's US
    average (range $9.3-15.0M/MW)."""
    fac = load_catalog().facility
    liquid = facility_cost(fac, "N+1", "dlc", 1e6, racks_per_mw).capex_usd
    assert liquid == pytest.approx(4.1e6 + 7.5e6 + 3.63e6 + 46_800 * racks_per_mw)
    assert 15e6 <= liquid <= 20e6
    air = facility_cost(fac, "N+1", "air", 1e6, 25).capex_usd
    assert air == pytest.approx(11.0e6)
    assert 9.3e6 <= air <= 15e6
    # the per-MW shortcut splits its figure by the sourced shares, summing to it
    shortcut = facility_cost(fac, "per-mw", "per-mw", 2e6, 50)
    assert (shortcut.electrical_usd, shortcut.cooling_usd, shortcut.shell_usd) == \
        pytest.approx((0.376 * 23.4e6, 0.188 * 23.4e6, 0.436 * 23.4e6))
    assert shortcut.capex_usd == pytest.approx(fac.build_usd_per_mw * 2)


def test_build_shares_must_name_every_part_and_sum_to_one():
    from solver.errors import InvalidInstance

    doc = read_document(DEFAULT_INSTANCE)
    facility = doc.setdefault("catalog", {}).setdefault("facility", {})
    facility["build_shares"] = {"electrical": 0.5, "cooling": 0.3, "shell": 0.3}
    with pytest.raises(InvalidInstance, match="build_shares: must sum to 1"):
        instance_from_dict(doc)
    facility["build_shares"] = {"electrical": 0.5, "cooling": 0.5}
    with pytest.raises(InvalidInstance, match="build_shares: needs exactly"):
        instance_from_dict(doc)


def solved(doc: dict) -> dict:
    r = solve(instance_from_dict(doc), place=False)
    assert r.summary["verified"], r.summary["verification"]
    return r.summary


def test_2n_is_bought_only_when_the_availability_target_asks_for_it():
    base = parts_doc()
    doc = copy.deepcopy(base)
    doc.setdefault("reliability", {})["site_availability_target"] = None
    free = solved(doc)
    assert free["design"]["facility"]["redundancy"] == "N"  # cheapest: nothing asks more
    doc["reliability"]["site_availability_target"] = 0.9998
    tier3 = solved(doc)
    assert tier3["design"]["facility"]["redundancy"] == "N+1"
    doc["reliability"]["site_availability_target"] = 0.99990
    tier4 = solved(doc)
    assert tier4["design"]["facility"]["redundancy"] == "2N"
    # same cluster, the facility alone costs more: (6.6 - 3.3) $M/MW of critical IT
    assert tier4["design"]["nodes"] == free["design"]["nodes"]
    it_mw = free["power"]["it_mw"]
    assert tier4["cost"]["capex_usd"] - free["cost"]["capex_usd"] == pytest.approx(
        (6.6e6 - 3.3e6) * it_mw, rel=1e-6)


CHEAP_FLOOR = {"cooling_max_rack_kw": {"air": 25.0, "rdhx": 75.0, "dlc": 140.0},
               "white_space_usd_per_m2": 100.0, "rack_usd": 10_000.0}
"""Air at 25 kW a rack, and floor and racks cheap enough that air's 8 more racks for 32
nodes ($10,000 + 3 m2 x $100 + a management switch with its 2 uplinks, $8,600: $151,200)
cost less than rear doors ($0.5M/MW more cooling for ~0.36 MW of IT, ~$179,000)."""


def test_liquid_cooling_is_chosen_when_floor_space_binds():
    """Air at 25 kW per rack holds 2 of the 10.4 kW nodes, rear doors and liquid 4. With
    cheap floor space air is the cheapest cooling (CHEAP_FLOOR); 32 nodes + spares need
    16 air racks (8 with rear doors) plus the network and support: a 14-rack hall forces
    denser cooling."""
    doc = parts_doc(**CHEAP_FLOOR)
    open_floor = solved(doc)
    assert open_floor["design"]["facility"]["cooling"] == "air"
    doc["site"]["buildings"][0]["max_racks"] = 14
    tight = solved(doc)
    assert tight["design"]["facility"]["cooling"] == "rdhx"  # cheaper than liquid
    assert tight["cost"]["capex_usd"] > open_floor["cost"]["capex_usd"]


def test_rack_density_rules_out_air_for_nvl72():
    configs, notes = enumerate_configs(load_instance(Path("instances/gb200-campus.toml")))
    assert {p.cooling for p in configs} == {"dlc"}
    assert any("air cooling (air, 42 kW per rack) cannot cool" in n for n in notes)


def test_an_air_cooled_system_never_gets_direct_liquid_cooling():
    """Direct liquid cooling needs cold plates: an air-cooled H100 system takes air or
    rear doors only (its heat goes to the room air), with a note saying why."""
    configs, notes = enumerate_configs(load_instance(DEFAULT_INSTANCE))
    assert "dlc" not in {p.cooling for p in configs}
    assert {p.cooling for p in configs} <= {"air", "rdhx"}
    assert any("dlc cooling needs cold plates" in n for n in notes)


def test_denser_cooling_is_chosen_when_the_halls_floor_binds():
    """The cooling sets the rack power of the one space model (design stage and
    placement): air at 25 kW per rack (CHEAP_FLOOR) holds 2 of the 10.4 kW nodes, so a 4-node
    middle-of-rack block is 2 racks wide; rear doors at 75 kW hold the block in one rack.
    One row of 12 positions (the other row holds the network) takes 6 air blocks, fewer
    than the ~9 the 32 nodes and their spares need, but 12 rear-door blocks; with 40
    positions air fits and, cheapest, is chosen. The placement on the narrow hall uses
    the same racks."""
    doc = parts_doc(**CHEAP_FLOOR)
    hall = {"name": "hall-1", "rows": 2, "positions_per_row": 40, "rack_power_kw": 25.0,
            "power_kw": 1900.0}
    doc["site"]["buildings"][0]["halls"] = [hall]
    wide = solved(doc)
    assert wide["design"]["facility"]["cooling"] == "air"
    hall["positions_per_row"] = 12
    narrow = solve(instance_from_dict(doc))
    s = narrow.summary
    assert s["verified"], s["verification"]
    assert s["design"]["facility"]["cooling"] == "rdhx"
    assert s["placement"]["status"] in ("optimal", "feasible")
    nodes_per_rack = {h["hall"]: h["nodes_per_rack"] for h in s["placement"]["halls"]}
    assert set(nodes_per_rack.values()) == {4}


@pytest.mark.parametrize(("field", "value"), [
    ("cooling_max_rack_kw", {"air": 1e300, "rdhx": 75.0, "dlc": 140.0}),
    ("dataset_bytes_per_token", 1e300),
    ("staff_usd_per_mw_year", 1e308),
    ("software_usd_per_gpu_year", 1e308),
    ("white_space_usd_per_m2", 1e300),
    ("shell_usd_per_mw", 1e300),
])
def test_huge_facility_figures_are_refused_naming_the_field(field, value):
    """Figures whose products overflow (an OverflowError, or inf $/GPU-hour written as
    non-JSON `Infinity`) are refused by the schema with the field's name."""
    from solver.errors import InvalidInstance

    doc = read_document(DEFAULT_INSTANCE)
    doc.setdefault("catalog", {}).setdefault("facility", {})[field] = value
    with pytest.raises(InvalidInstance, match=field):
        instance_from_dict(doc)


def test_the_per_mw_shortcut_reports_its_build_in_parts(tmp_path):
    """tiny/min-capex keeps the $/MW shortcut: design.json, report.html and the solve
    table give its build as electrical, cooling and shell by the sourced shares (not all
    as electrical), and the checker re-derives each part: moving $1 from cooling to
    electrical keeps the total but fails it."""
    import dataclasses
    import json

    from solver.checker import check_design
    from solver.outputs import write_solve_outputs

    r = solve(load_instance(MIN_CAPEX), place=False)
    write_solve_outputs(r, tmp_path)
    doc = json.loads((tmp_path / "design.json").read_text())
    f, build = doc["design"]["facility"], doc["cost"]["facility_capex_usd"]
    assert f["cooling"] == "per-mw"
    assert [f["electrical_usd"], f["cooling_usd"], f["shell_usd"]] == pytest.approx(
        [0.376 * build, 0.188 * build, 0.436 * build], rel=1e-12)
    html = (tmp_path / "report.html").read_text()
    assert "$/MW shortcut in sourced shares" in html
    from solver.report_html import stack_parts

    capex_stack = dict(stack_parts(doc)[0])  # the report's capex bar
    assert capex_stack["facility cooling ($/MW share)"] == pytest.approx(f["cooling_usd"])
    moved = dataclasses.replace(r.design.candidate.facility,
                                electrical_usd=r.design.candidate.facility.electrical_usd + 1,
                                cooling_usd=r.design.candidate.facility.cooling_usd - 1)
    design = dataclasses.replace(r.design, candidate=dataclasses.replace(
        r.design.candidate, facility=moved))
    no_requirements = SimpleNamespace(required_effective_tokens_per_s=0.0, min_goodput=0.0)
    failures = check_design(r.inputs, design, no_requirements, design.candidate).failures
    assert {f.split(":")[0] for f in failures} == {"facility[electrical]", "facility[cooling]"}

