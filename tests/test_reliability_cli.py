"""`clusterplan reliability` contract and the sourced reliability catalog."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from solver.cli import app
from solver.errors import InvalidInstance
from solver.loading import DEFAULT_INSTANCE, instance_from_dict, load_catalog, read_document
from solver.reliability_inputs import reliability_rates

runner = CliRunner()
KEYS = ("interruptions_per_day", "mtbf_hours", "checkpoint_size_gb", "checkpoint_write_s",
        "checkpoint_interval_s", "restart_s", "goodput", "spare_nodes", "availability_target",
        "interruptions_per_day_band", "goodput_band", "restart_breakdown_s", "profile")


def invoke(*args: str):
    return runner.invoke(app, ["reliability", *args, "--json"])


def all_rates(cat):
    for table in (cat, *cat.profile.values()):
        yield from table.gpu.values()
        yield from table.link.values()
        for name in ("host", "nic", "switch", "software", "sdc", "planned"):
            if getattr(table, name) is not None:
                yield getattr(table, name)


def test_every_rate_and_figure_has_a_source():
    cat = load_catalog().reliability
    figures = [getattr(cat.recovery, name) for name in type(cat.recovery).model_fields]
    figures += [getattr(parts, name) for parts in cat.restart.values()
                for name in type(parts).model_fields]
    for item in [*all_rates(cat), *figures]:
        assert item.url.startswith("http") and item.by and item.note
    assert set(cat.restart) == {"storage", "in-memory"}
    assert cat.profiles() == ["default", "research-cluster", "semianalysis-optics"]


def test_field_rates_and_the_host_subtraction():
    cat = load_catalog().reliability
    # Alibaba HPN: 0.057% of NIC-ToR links and 0.051% of ToR switches fail per month.
    assert cat.link["multimode"].mttf_hours == pytest.approx(730.5 / 0.00057, rel=1e-5)
    assert cat.switch.mttf_hours == pytest.approx(730.5 / 0.00051, rel=1e-5)
    # Llama 3 host causes 32+3+3+2+2+2+2 = 46 over 2,048 nodes x 1,296 h.
    assert cat.host.events == 46
    assert cat.host.mttf_hours == pytest.approx(2048 * 1296 / 46, rel=1e-3)
    # research-cluster: all-cause 4.42 per 1000 node-days (mean of Meta's RSC-1 6.50 and
    # RSC-2 2.34; BLOOM's GPU-only rate is no all-cause figure) minus GPU, NIC and link
    # shares (0.678 + 0.063 + 0.150): host 3.529, MTTF 6,801 h.
    per_kday = 8 * 24_000
    host = (6.50 + 2.34) / 2 - per_kday * (1 / cat.gpu["ampere"].mttf_hours + 1 / cat.nic.mttf_hours
                             + 1 / cat.link["multimode"].mttf_hours)
    assert cat.profile["research-cluster"].host.mttf_hours == pytest.approx(
        24_000 / host, rel=1e-3)
    assert cat.profile["research-cluster"].host.mttf_hours == pytest.approx(6801, abs=1)
    # SemiAnalysis's illustration: 5 years per optical link, a what-if only.
    optics = cat.with_profile("semianalysis-optics").link["multimode"]
    assert optics.mttf_hours == 43_800 and cat.link["multimode"].mttf_hours > 25 * 43_800


def test_rates_ranges_and_restart_parts():
    rates = reliability_rates(load_catalog().reliability, "hopper")
    assert rates.gpu.per_h == pytest.approx(1 / 88768)
    assert rates.host.low_per_h < rates.host.per_h < rates.host.high_per_h
    assert rates.restart["storage"].reinit_exponent == pytest.approx(
        math.log(390 / 169) / math.log(10752 / 512), abs=0.001)
    assert rates.restart["in-memory"].reinit_s(4800) == pytest.approx(100.0)


def test_instance_overrides_and_profile():
    doc = read_document(DEFAULT_INSTANCE)
    doc["catalog"] = {"reliability": {"gpu": {"hopper": {"mttf_hours": 50_000.0}}}}
    doc["reliability"] = {"profile": "semianalysis-optics"}
    inst = instance_from_dict(doc)
    hopper = inst.catalog.reliability.gpu["hopper"]
    assert hopper.mttf_hours == 50_000.0 and hopper.kind == "override"
    doc["reliability"] = {"profile": "no-such-profile"}
    with pytest.raises(InvalidInstance, match="reliability.profile"):
        instance_from_dict(doc)


def test_json_document_has_contract_keys():
    result = invoke("--gpu", "h100-sxm", "--gpus", "4096")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    for key in KEYS:
        assert key in doc
    assert 0 < doc["goodput"] < 1 and doc["spare_nodes"] >= 1
    assert list(doc["restart_breakdown_s"]) == ["detect", "isolate", "replace", "reinit",
                                                "reload", "warmup"]
    assert sum(doc["restart_breakdown_s"].values()) == pytest.approx(doc["restart_s"])
    low, high = doc["goodput_band"]
    assert low < doc["goodput"] < high and doc["profile"] == "default"


def test_profiles_and_recovery_modes_move_the_answer():
    base = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "16384").stdout)
    optics = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "16384",
                               "--profile", "semianalysis-optics").stdout)
    research = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "16384",
                                 "--profile", "research-cluster").stdout)
    warm = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "16384",
                             "--recovery", "in-memory").stdout)
    assert optics["interruptions_per_day"] > 2 * base["interruptions_per_day"]
    assert research["breakdown"]["host"] > 4 * base["breakdown"]["host"]
    assert warm["restart_s"] < base["restart_s"] / 3 and warm["goodput"] > base["goodput"]


def test_nic_is_the_one_the_switch_requires():
    doc = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "4096",
                            "--switch", "spectrum4-sn5600").stdout)
    assert doc["nic"] == "bluefield-3"


def test_copper_and_simulation():
    optical = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "4096").stdout)
    result = invoke("--gpu", "h100-sxm", "--gpus", "4096", "--no-rail-optimized",
                    "--recovery", "in-memory", "--simulate", "--runs", "20", "--days", "30")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["interruptions_per_day"] < optical["interruptions_per_day"]
    sim = doc["simulated"]
    assert sim["runs"] == 20 and sim["ci_low"] <= sim["goodput"] <= sim["ci_high"]


@pytest.mark.parametrize(("args", "named"), [
    (("--gpu", "h100-sxm", "--gpus", "0"), "--gpus"),
    (("--gpu", "h100-sxm", "--gpus", "-8"), "--gpus"),
    (("--gpu", "no-such-gpu", "--gpus", "64"), "--gpu"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--checkpoint-gbps", "0"), "--checkpoint-gbps"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--recovery", "tape"), "--recovery"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--switch", "no-such-switch"), "--switch"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--profile", "no-such-profile"), "--profile"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--checkpoint-gbps", "inf"), "--checkpoint-gbps"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--simulate", "--days", "inf"), "--days"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--simulate", "--days", "1e7"), "--days"),
    (("--gpu", "h100-sxm", "--gpus", "64", "--simulate", "--runs", "1"), "--runs"),
])
def test_nonsense_input_exits_3_naming_it(args, named):
    result = invoke(*args)
    assert result.exit_code == 3
    assert named in result.stderr and result.stdout == ""


@pytest.mark.parametrize(("args", "lift"), [
    (("--runs", "100000000"), "--max-runs 100000000"),
    (("--gpus", "100000", "--days", "3650"), "--max-events"),
])
def test_simulations_above_the_caps_exit_2_naming_the_flag_that_lifts_them(args, lift):
    """--runs 1e9 tried to allocate 671 GiB; 100k GPUs over ten years took > 10 min."""
    result = invoke("--gpu", "h100-sxm", "--gpus", "64", "--simulate", *args)
    assert result.exit_code == 2 and lift in result.stderr and result.stdout == ""
    lifted = invoke("--gpu", "h100-sxm", "--gpus", "64", "--simulate", "--runs", "3",
                    "--days", "1", "--max-runs", "3", "--max-events", "1000")
    assert lifted.exit_code == 0 and json.loads(lifted.stdout)["simulated"]["runs"] == 3


def test_breakdown_keeps_the_former_aggregate_keys():
    """Old consumers read node_optics, node_copper, node_rest, other_switch and
    switch_optics: each is the sum of the classes it regroups."""
    doc = json.loads(invoke("--gpu", "h100-sxm", "--gpus", "4096").stdout)
    b = {row["class"]: row["per_day"] for row in doc["classes"]}
    old = doc["breakdown"]
    assert old["node_rest"] == pytest.approx(b["host"] + b["software"] + b["sdc"])
    assert old["other_switch"] == pytest.approx(b.get("fabric_switch", 0.0))
    node_links = sum(v for k, v in b.items() if k.startswith("node_link_"))
    assert old["node_optics"] + old["node_copper"] == pytest.approx(node_links)
    assert old["switch_optics"] == pytest.approx(sum(
        v for k, v in b.items() if k.startswith("fabric_link_")
        and k.removeprefix("fabric_link_") not in ("dac", "acc", "aec")))
    assert all(old[k] == pytest.approx(v) for k, v in b.items())


def test_storage_too_slow_for_any_checkpoint_gives_zero_goodput():
    """1e-4 GB/s for 100,000 GPUs: a checkpoint takes far longer than the MTBF, so the job
    never commits work; goodput 0, not an overflow."""
    result = invoke("--gpu", "h100-sxm", "--gpus", "100000", "--checkpoint-gbps", "1e-4")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["goodput"] < 1e-12


@pytest.mark.parametrize(("field", "value"), [
    ("host_copy_gbytes_per_s_per_gpu", 0.0), ("fabric_interrupt_fraction", 5.0),
    ("node_repair_h", 0.0), ("availability_target", 1.0)])
def test_recovery_figures_out_of_bounds_rejected(field, value):
    doc = read_document(DEFAULT_INSTANCE)
    doc["catalog"] = {"reliability": {"recovery": {field: {"value": value}}}}
    with pytest.raises(InvalidInstance, match=field):
        instance_from_dict(doc)


def test_command_and_design_candidates_count_the_same_links():
    """A design candidate's reliability figures equal `clusterplan reliability` for the same
    GPU count, switch, layout, medium, storage bandwidth and recovery mode."""
    from models.design.candidates import build_design_data
    from models.design.evaluate import default_evaluators
    from solver.prepare import prepare

    doc = read_document(DEFAULT_INSTANCE)
    doc["limits"]["max_gpus"] = 4096
    doc["choices"]["fabrics"] = [{"switch": "tomahawk5"}]
    inputs = prepare(instance_from_dict(doc))
    data, _ = build_design_data(inputs, default_evaluators(inputs))
    exact = [k for k in data.candidates
             if "interpolated_between_nodes" not in k.extra["reliability"]]
    assert {data.configs[k.config].recovery for k in exact} == {"storage", "in-memory"}
    for k in exact:
        cfg = data.configs[k.config]
        rel = k.extra["reliability"]
        out = json.loads(invoke(
            "--gpu", cfg.gpu, "--gpus", str(k.gpus), "--switch", cfg.switch,
            "--workload", "gpt4-1.8t-moe", "--recovery", cfg.recovery,
            "--checkpoint-gbps", str(k.nodes * cfg.checkpoint_gbytes_per_s_per_node),
            "--rail-optimized" if cfg.rail_optimized else "--no-rail-optimized").stdout)
        assert out["spare_nodes"] == k.spare_nodes
        assert out["media"] == {a.link_class: a.kind for a in cfg.media}
        assert out["interruptions_per_day"] == pytest.approx(rel["interruptions_per_day"])
        assert out["restart_s"] == pytest.approx(rel["restart_s"])
        assert out["goodput"] == pytest.approx(k.goodput)


def test_solve_reports_the_chosen_recovery_and_its_cost():
    """The MILP picks the recovery mode; its host memory is in the BOM and the checker's
    own arithmetic agrees (verified)."""
    from solver import solve

    doc = read_document(DEFAULT_INSTANCE)
    doc["limits"]["max_gpus"] = 4096
    doc["choices"]["fabrics"] = [{"switch": "tomahawk5"}]
    result = solve(instance_from_dict(doc))
    summary = result.summary
    assert summary["verified"], summary["verification"]
    assert summary["design"]["recovery"] == summary["throughput"]["reliability"]["recovery"]
    memory = [b for b in summary["bom"] if b["category"] == "recovery"]
    if summary["design"]["recovery"] == "in-memory":
        assert memory and memory[0]["cost_usd"] > 0


def test_goodput_is_re_evaluated_on_the_placed_media(tmp_path):
    """Placement re-cables links by routed length; the reliability model then counts each
    link by its placed medium, and effective throughput follows the new goodput."""
    doc = read_document(DEFAULT_INSTANCE)
    doc["limits"]["max_gpus"] = 2048
    doc["choices"]["fabrics"] = [{"switch": "tomahawk5"}]
    doc["site"]["buildings"] = [{"name": "b0", "it_power_mw": 10.0}]
    path = tmp_path / "small.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["solve", str(path), "--out", str(tmp_path), "--json",
                                 "--time-limit", "10"])
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)
    t, placed = s["throughput"], s["placement"]["bom_media"]
    by_cause = t["reliability"]["interruptions_per_day_by_cause"]
    upper = {m["kind"] for m in placed if m["link_class"] != "node-leaf"}
    assert {k.removeprefix("fabric_link_") for k in by_cause if k.startswith("fabric_link_")
            } == upper
    assert t["effective_tokens_per_s"] == pytest.approx(t["tokens_per_s"] * t["goodput"])
    assert "throughput" in s["design_estimate"]
