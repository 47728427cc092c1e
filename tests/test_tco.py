"""Full TCO (models/tco.py): the capital recovery factor, the year's cost by hand, the
$/GPU-hour and $/million-tokens of a solve, and the objective that minimises the latter."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest

from models.design import prune
from models.tco import annual_cost, capital_recovery_factor
from solver import solve
from solver.loading import instance_from_dict, read_document

RATES = SimpleNamespace(cost_of_capital=0.08, facility_life_years=15,
                        support_fraction_per_year=0.06, software_usd_per_gpu_year=4500.0,
                        staff_usd_per_mw_year=150_000.0)


def test_capital_recovery_factor():
    assert capital_recovery_factor(0.0, 5) == pytest.approx(0.2)
    # 8% over 5 years: 0.08 x 1.08^5 / (1.08^5 - 1) = 0.250456...
    assert capital_recovery_factor(0.08, 5) == pytest.approx(0.2504565, rel=1e-6)


def test_annual_cost_by_hand():
    # $1B equipment, $200M facility, $20M energy, 8,000 GPUs, 12 MW, 1M effective tokens/s
    year = annual_cost(RATES, 5, 1e9, 2e8, 2e7, 8000, 12e6, 1e6)
    crf5, crf15 = capital_recovery_factor(0.08, 5), capital_recovery_factor(0.08, 15)
    total = crf5 * 1e9 + crf15 * 2e8 + 2e7 + 0.06 * 1e9 + 4500 * 8000 + 150_000 * 12
    assert year.total_usd == pytest.approx(total)
    assert year.usd_per_gpu_hour == pytest.approx(total / (8000 * 8760))
    assert year.usd_per_million_tokens == pytest.approx(total / (1e6 * 3600 * 8760) * 1e6)


def test_solve_reports_cost_per_gpu_hour_and_per_million_tokens():
    s = solve(instance_from_dict(read_document(Path("instances/tiny/min-capex.toml"))),
              place=False).summary
    cost, d = s["cost"], s["design"]
    gpus = (d["nodes"] + d["spare_nodes"]) * d["gpus"] // d["nodes"]
    assert cost["usd_per_gpu_hour"] == pytest.approx(cost["annual_cost_usd"] / (gpus * 8760))
    assert cost["usd_per_million_tokens"] == pytest.approx(
        cost["annual_cost_usd"] / (s["throughput"]["effective_tokens_per_s"] * 3600 * 8760)
        * 1e6)
    assert sum(cost["annual_cost_breakdown_usd"].values()) == pytest.approx(
        cost["annual_cost_usd"])


def test_objective_minimises_cost_per_million_effective_tokens():
    """The MILP's choice equals the least $/million tokens over every buildable candidate
    (enumerated)."""
    doc = read_document(Path("instances/tiny/min-capex.toml"))
    doc["objective"] = {k: v for k, v in doc["objective"].items()
                        if k != "required_tokens_per_s"} | {
        "kind": "min_usd_per_million_tokens"}
    r = solve(instance_from_dict(copy.deepcopy(doc)), place=False)
    assert r.summary["verified"]
    from models.design.evaluate import default_evaluators  # noqa: PLC0415
    from solver.api import candidates  # noqa: PLC0415
    from solver.prepare import prepare  # noqa: PLC0415
    inputs = prepare(instance_from_dict(copy.deepcopy(doc)))
    data, _ = candidates(inputs, default_evaluators(inputs))
    best = min(prune.annual_cost(data, k).usd_per_million_tokens
               for k in data.candidates if prune.buildable(data, k))
    assert r.summary["objective"]["value"] == pytest.approx(best, rel=1e-9)
    assert r.summary["cost"]["usd_per_million_tokens"] == pytest.approx(best, rel=1e-9)
