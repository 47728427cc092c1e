"""`clusterplan reliability` contract and the sourced reliability catalog."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from solver.cli import app
from solver.reliability_inputs import load_reliability_catalog, reliability_rates

runner = CliRunner()
KEYS = ("interruptions_per_day", "mtbf_hours", "checkpoint_size_gb", "checkpoint_write_s",
        "checkpoint_interval_s", "restart_s", "goodput", "spare_nodes", "availability_target")


def invoke(*args: str):
    return runner.invoke(app, ["reliability", *args, "--json"])


def test_every_rate_has_a_source():
    cat = load_reliability_catalog()
    rates = [*cat.gpu.values(), cat.node_rest, cat.nic, *cat.optic.values(),
             *cat.copper.values(), cat.switch]
    figures = [getattr(cat.recovery, name) for name in type(cat.recovery).model_fields]
    for item in rates + figures:
        assert item.url.startswith("http") and item.by and item.note
    assert {"multimode", "singlemode", "aoc"} <= set(cat.optic)
    assert min(cat.copper[k].mttf_hours for k in cat.copper) > cat.optic["multimode"].mttf_hours


def test_rates_for_each_generation_and_mlperf_exponent():
    cat = load_reliability_catalog()
    rates = reliability_rates(cat, "hopper")
    assert rates.init_exponent == pytest.approx(0.275, abs=0.005)
    assert rates.gpu_per_h == pytest.approx(1 / 88768)


def test_json_document_has_contract_keys():
    result = invoke("--gpu", "h100-sxm", "--gpus", "4096")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    for key in KEYS:
        assert key in doc
    assert 0 < doc["goodput"] < 1 and doc["spare_nodes"] >= 1


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
])
def test_nonsense_input_exits_3_naming_it(args, named):
    result = invoke(*args)
    assert result.exit_code == 3
    assert named in result.stderr and result.stdout == ""
