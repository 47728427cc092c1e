"""`solve()` and `clusterplan solve`: the hand-worked optima of instances/tiny, the
summary contract, BOM/capex consistency, the checker, determinism and the CLI."""

from __future__ import annotations

import csv
import functools
import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solver import load_instance, solve
from solver.cli import app
from solver.loading import instance_from_dict

TINY = Path(__file__).resolve().parents[1] / "instances" / "tiny"

# The optimum of each tiny instance, copied from the hand calculation in its header
# comment (never from a solver run).
HAND = {
    "power-bound": {
        "switch": "quantum2-qm9700", "nodes": 64, "gpus": 512, "switches_per_tier": [16, 8],
        "it_w": 708_464.5, "capex_usd": 31_020_534.65, "tco_usd": 34_167_052.20,
        "tokens_per_s": 1_688_576_000, "effective_tokens_per_s": 1_519_718_400,
        "objective": 1_519_718_400, "binding": "limits.it_power_mw"},
    "budget-bound": {
        "switch": "quantum2-qm9700", "nodes": 64, "gpus": 512, "switches_per_tier": [16, 8],
        "it_w": 708_464.5, "capex_usd": 31_020_534.65,
        "effective_tokens_per_s": 1_519_718_400, "objective": 1_519_718_400,
        "binding": "limits.budget_usd"},
    "cheapest-fabric": {
        "switch": "tomahawk5", "nodes": 64, "gpus": 512, "switches_per_tier": [8, 4],
        "it_w": 701_422.78, "capex_usd": 30_398_146.53,
        "effective_tokens_per_s": 1_519_718_400, "objective": 1_519_718_400,
        "binding": "limits.max_gpus"},
    "min-capex": {
        "switch": "quantum2-qm9700", "nodes": 32, "gpus": 256, "switches_per_tier": [8, 4],
        "it_w": 358_279.724, "capex_usd": 15_809_372.77,
        "effective_tokens_per_s": 759_859_200, "objective": 15_809_372.77},
    "min-tco": {
        "switch": "tomahawk5", "nodes": 64, "gpus": 512, "switches_per_tier": [8, 4],
        "it_w": 701_422.78, "capex_usd": 30_398_146.53, "tco_usd": 33_513_389.55,
        "effective_tokens_per_s": 1_519_718_400, "objective": 33_513_389.55},
    "two-buildings": {
        "switch": "quantum2-qm9700", "nodes": 128, "gpus": 1024, "switches_per_tier": [32, 16],
        "it_w": 1_418_555.1, "capex_usd": 62_068_694.67,
        "effective_tokens_per_s": 3_039_436_800, "objective": 3_039_436_800,
        "su_per_building": {"hall-a": 2, "hall-b": 2}},
    "space-bound": {
        "switch": "quantum2-qm9700", "nodes": 96, "gpus": 768, "switches_per_tier": [24, 16],
        "it_w": 1_064_091.964, "capex_usd": 46_629_425.98,
        "effective_tokens_per_s": 2_279_577_600, "objective": 2_279_577_600},
}
CENTS = 0.01  # hand figures are rounded to cents / milliwatts


@functools.cache
def solved(name: str):
    return solve(load_instance(TINY / f"{name}.toml"), place=False)


@pytest.mark.parametrize("name", sorted(HAND))
def test_tiny_instance_reaches_its_hand_computed_optimum(name):
    hand, result = HAND[name], solved(name)
    s = result.summary
    assert result.status == s["status"] == "optimal"
    d = s["design"]
    assert (d["gpu"], d["switch"], d["nodes"], d["gpus"]) == (
        "h100-sxm", hand["switch"], hand["nodes"], hand["gpus"])
    assert d["spare_nodes"] == 0 and d["rail_optimized"] is False
    assert d["switches_per_tier"] == hand["switches_per_tier"]
    assert s["power"]["it_mw"] * 1e6 == pytest.approx(hand["it_w"], abs=1e-3)
    assert s["cost"]["capex_usd"] == pytest.approx(hand["capex_usd"], abs=CENTS)
    if "tco_usd" in hand:
        assert s["cost"]["tco_usd"] == pytest.approx(hand["tco_usd"], abs=CENTS)
    if "tokens_per_s" in hand:
        assert s["throughput"]["tokens_per_s"] == pytest.approx(hand["tokens_per_s"])
    t = s["throughput"]
    assert t["effective_tokens_per_s"] == pytest.approx(hand["effective_tokens_per_s"])
    assert (t["mfu"], t["goodput"]) == pytest.approx((0.4, 0.9))
    assert s["objective"]["value"] == pytest.approx(hand["objective"], abs=CENTS)
    if "binding" in hand:
        binding = {b["name"] for b in s["binding"] if b["binding"]}
        assert binding == {hand["binding"]}
    if "su_per_building" in hand:
        assert d["scalable_units_per_building"] == hand["su_per_building"]


@pytest.mark.parametrize(("name", "limit"), [("two-buildings", "site.buildings"),
                                             ("space-bound", "max_racks")])
def test_building_power_and_space_are_reported_binding(name, limit):
    binding = [b["name"] for b in solved(name).summary["binding"] if b["binding"]]
    assert any(limit in n for n in binding), binding


def test_max_gpus_reports_its_slack():
    rows = {b["name"]: b for b in solved("cheapest-fabric").summary["binding"]}
    assert rows["limits.max_gpus"]["slack"] == 0
    assert rows["limits.it_power_mw"]["slack"] == pytest.approx(2.0 - 0.70142278)


@pytest.mark.parametrize("name", sorted(HAND))
def test_every_solve_passes_the_independent_checker(name):
    s = solved(name).summary
    assert s["verified"] is True
    assert s["verification"]["failures"] == []


@pytest.mark.parametrize("name", sorted(HAND))
def test_bom_lines_sum_to_equipment_capex_and_power(name):
    result = solved(name)
    s = result.summary
    for line in s["bom"]:
        assert line["cost_usd"] == pytest.approx(line["quantity"] * line["unit_cost_usd"])
        assert line["quantity"] > 0
    bom_usd = sum(line["cost_usd"] for line in s["bom"])
    assert bom_usd == pytest.approx(s["cost"]["equipment_capex_usd"], rel=1e-12)
    assert bom_usd + s["cost"]["facility_capex_usd"] == pytest.approx(s["cost"]["capex_usd"])
    assert result.bom["cost_usd"].sum() == pytest.approx(bom_usd)
    equipment_w = sum(line["power_w"] for line in s["bom"])
    assert s["power"]["it_mw"] == pytest.approx(1.01 * equipment_w / 1e6)


def test_bom_items_of_the_power_bound_design():
    """64 nodes, 512 NICs, 24 switches, 17 racks, 512 DAC, 1024 SR4 modules + 512 fibres;
    the support networks of 64 nodes and the cold-spare pool (the instance's header):
    73 front-end ports on one tomahawk5, 1 appliance (64 GB/s of write), 5 control-plane
    servers, 18 management switches (17 racks + the support rack) with 36 uplinks and 1
    aggregation switch; spares 10 GPUs, 1 NIC, 1 switch, 1 DAC, 2 SR4 modules."""
    lines = {line["item"]: line["quantity"] for line in solved("power-bound").summary["bom"]}
    assert lines == {
        "h100-sxm node": 64, "connectx-7 NIC": 512, "quantum2-qm9700 switch": 24,
        "rack and power distribution": 17,
        "tomahawk5 front-end/storage switch": 1,
        "dac-400g front-end link (node-leaf, 3 m)": 73,
        "all-flash storage appliance (write-bound)": 1, "control-plane server": 5,
        "out-of-band management switch (1 per rack)": 18, "management aggregation switch": 1,
        "management uplink": 36, "support rack (front-end/storage/control plane)": 1,
        "dac-400g cable (node-leaf, 1.5 m)": 512,
        "sr4-400g transceiver (leaf-spine, 50 m)": 1024, "sr4-400g fibre (leaf-spine, 50 m)": 512,
        "cold spare h100-sxm GPU": 10, "cold spare connectx-7 NIC": 1,
        "cold spare quantum2-qm9700 switch": 1, "cold spare dac-400g cable (node-leaf)": 1,
        "cold spare sr4-400g transceiver (leaf-spine)": 2}


def test_pandas_tables_agree_with_the_summary():
    result = solved("min-tco")
    cost = result.cost.set_index("term")["cost_usd"]
    assert cost["capex total"] == pytest.approx(result.summary["cost"]["capex_usd"])
    assert cost["tco total"] == pytest.approx(33_513_389.55, abs=CENTS)
    power = result.power.set_index("component")["power_kw"]
    assert power["critical IT total"] == pytest.approx(701.42278)
    assert set(result.binding["name"]) >= {"limits.it_power_mw", "limits.budget_usd"}


def test_same_instance_twice_gives_the_same_design():
    inst = load_instance(TINY / "cheapest-fabric.toml")
    a, b = solve(inst, place=False).summary, solve(inst, place=False).summary
    for key in ("design", "bom", "power", "cost", "objective", "binding"):
        assert a[key] == b[key], key


# ---- the CLI ---------------------------------------------------------------------------

runner = CliRunner()
CONTRACT = {
    "objective": {"name", "value", "unit"},
    "design": {"gpu", "gpus", "nodes", "spare_nodes", "switch", "tiers", "pods",
               "oversubscription", "rail_optimized"},
    "power": {"it_mw", "facility_mw", "annual_energy_twh"},
    "cost": {"capex_usd", "annual_opex_usd", "tco_usd"},
    "throughput": {"tokens_per_s", "effective_tokens_per_s", "mfu", "goodput",
                   "time_to_train_days"},
    "solver": {"backend", "runtime_s", "gap"},
}
BOM_KEYS = {"item", "category", "quantity", "unit_cost_usd", "cost_usd", "power_w"}


def cli(*args: str):
    return runner.invoke(app, ["solve", *args])


def test_cli_json_document_has_the_contract_keys(tmp_path):
    res = cli(str(TINY / "power-bound.toml"), "--json", "--out", str(tmp_path))
    assert res.exit_code == 0, res.stderr
    doc = json.loads(res.stdout)  # exactly one JSON document
    assert doc["status"] == "optimal" and doc["verified"] is True
    for key, fields in CONTRACT.items():
        assert fields <= set(doc[key]), key
    assert (doc["objective"]["name"], doc["objective"]["unit"]) == ("effective_tokens_per_s",
                                                                    "tokens/s")
    assert doc["objective"]["value"] == pytest.approx(1_519_718_400)
    assert doc["bom"] and all(BOM_KEYS <= set(line) for line in doc["bom"])
    assert isinstance(doc["binding"], list)
    assert all({"name", "slack"} <= set(b) for b in doc["binding"])
    assert doc["solver"]["backend"] and doc["solver"]["runtime_s"] >= 0
    assert doc["design"]["tiers"] == 2 and doc["design"]["pods"] == 1
    assert doc["design"]["oversubscription"] == 1.0
    assert doc["power"]["facility_mw"] == pytest.approx(1.3 * doc["power"]["it_mw"])


def test_cli_out_writes_design_bom_and_summary(tmp_path):
    res = cli(str(TINY / "min-capex.toml"), "--json", "--out", str(tmp_path))
    assert res.exit_code == 0, res.stderr
    assert {"bom.csv", "design.json", "summary.md"} <= {p.name for p in tmp_path.iterdir()}
    written = json.loads((tmp_path / "design.json").read_text())
    assert written["design"] == json.loads(res.stdout)["design"]
    with (tmp_path / "bom.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert sum(float(r["cost_usd"]) for r in rows) == pytest.approx(
        written["cost"]["equipment_capex_usd"])
    summary = (tmp_path / "summary.md").read_text()
    assert "tiny-min-capex" in summary and "quantum2-qm9700" in summary


def test_cli_readable_output_without_json(tmp_path):
    res = cli(str(TINY / "power-bound.toml"), "--out", str(tmp_path))
    assert res.exit_code == 0, res.stderr
    assert "Bill of materials" in res.stdout and "quantum2-qm9700" in res.stdout


def test_cli_infeasible_exits_4_with_a_diagnosis(tmp_path):
    res = cli(str(TINY / "infeasible-power.toml"), "--json", "--out", str(tmp_path))
    assert res.exit_code == 4
    doc = json.loads(res.stdout)
    assert doc["status"] == "infeasible" and doc["verified"] is False
    assert any("limits.it_power_mw" in m for m in doc["diagnosis"])
    assert "limits.it_power_mw" in res.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("content", [
    None,  # missing file
    "name = [unclosed",  # not TOML
    'schema_version = 1\nname = "x"\n',  # required tables missing
])
def test_cli_bad_file_exits_3(tmp_path, content):
    path = tmp_path / "bad.toml"
    if content is not None:
        path.write_text(content)
    res = cli(str(path), "--json", "--out", str(tmp_path / "out"))
    assert res.exit_code == 3
    assert res.stdout == ""
    assert "Traceback" not in res.stderr


def test_cli_unknown_catalog_id_names_the_field(tmp_path):
    text = (TINY / "power-bound.toml").read_text().replace('"quantum2-qm9700"', '"nope"')
    path = tmp_path / "typo.toml"
    path.write_text(text)
    res = cli(str(path), "--json")
    assert res.exit_code == 3
    assert "choices.fabrics[0].switch" in res.stderr


def test_extra_constraints_hook_changes_the_optimum_like_the_equivalent_limit():
    """A user constraint added to the MILP acts like the instance limit it mirrors."""
    import pyomo.environ as pyo

    inst = load_instance(TINY / "min-capex.toml")

    def at_least_512(m, _inst):
        m.at_least_512 = pyo.Constraint(expr=m.gpus >= 512)

    hooked = solve(inst, extra_constraints=at_least_512, place=False).summary
    doc = tomllib.loads((TINY / "min-capex.toml").read_text())
    doc["limits"]["min_gpus"] = 512
    direct = solve(instance_from_dict(doc), place=False).summary
    assert hooked["status"] == direct["status"] == "optimal"
    assert hooked["design"]["gpus"] == direct["design"]["gpus"] == 512
    assert hooked["cost"]["capex_usd"] == pytest.approx(direct["cost"]["capex_usd"])


def test_binding_uses_the_exact_cost_of_the_next_size():
    """At $46.6M the next size (96 nodes) costs $46.63M exactly, although scaling the
    chosen design's cost by nodes would put it just under the budget ($31.02M x 1.5 =
    $46.53M)."""
    doc = tomllib.loads((TINY / "budget-bound.toml").read_text())
    doc["limits"]["budget_usd"] = 46.6e6
    s = solve(instance_from_dict(doc), place=False).summary
    binding = {b["name"] for b in s["binding"] if b["binding"]}
    assert "limits.budget_usd" in binding


def test_checker_confirms_rack_space_per_building():
    s = solved("space-bound").summary
    assert s["verified"]
    assert s["verification"]["checks"] > 0
    assert any(b["name"].endswith(".max_racks") for b in s["binding"])
