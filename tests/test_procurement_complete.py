"""Issue 15's bar on every shipped instance: the BOM has front-end, storage and management
network lines and the cold-spare pool, the facility is broken into electrical, cooling
and shell, the BOM sums to equipment capex, and the independent checker re-derives every
one of these lines with its own arithmetic (solver.checker)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from solver import load_instance, solve
from solver.checker import check_design
from solver.loading import INSTANCES_DIR
from solver.prepare import prepare

SUPPORT = ("frontend", "storage", "management", "spares")
"""BOM categories every design buys besides servers and the back-end fabric."""
REDERIVED = ("support[frontend]", "support[storage]", "support[management]", "cold_spares",
             "facility[electrical]", "facility[cooling]", "facility[shell]")
"""The checker's checks of those lines and of the facility's parts."""


def shipped_instances() -> list:
    """Every shipped instance with one design (the infeasible example has none; a phased
    build-out prices its facility per period, tests/test_phased.py)."""
    paths = sorted(p for p in [*INSTANCES_DIR.glob("*.toml"), *INSTANCES_DIR.glob("tiny/*.toml")]
                   if "infeasible" not in p.name and "phased" not in p.name)
    return [pytest.param(p, id=p.stem) for p in paths]


@pytest.mark.slow
@pytest.mark.parametrize("instance", shipped_instances())
def test_every_shipped_bom_is_procurement_complete(instance):
    r = solve(load_instance(instance), place=False)
    s = r.summary
    bom = s["bom"]
    for category in SUPPORT:
        lines = [x for x in bom if x["category"] == category]
        assert lines and all(x["quantity"] > 0 and x["cost_usd"] > 0 for x in lines), category
    f = s["design"]["facility"]
    parts = [f["electrical_usd"], f["cooling_usd"], f["shell_usd"]]
    assert all(usd > 0 for usd in parts)
    assert sum(parts) == pytest.approx(s["cost"]["facility_capex_usd"], rel=1e-12)
    assert sum(x["cost_usd"] for x in bom) == pytest.approx(
        s["cost"]["equipment_capex_usd"], rel=1e-12)
    assert s["cost"]["equipment_capex_usd"] + s["cost"]["facility_capex_usd"] == pytest.approx(
        s["cost"]["capex_usd"], rel=1e-12)
    no_requirements = SimpleNamespace(required_effective_tokens_per_s=0.0, min_goodput=0.0)
    verdict = check_design(r.inputs, r.design, no_requirements, r.design.candidate)
    assert set(REDERIVED) <= {c.name for c in verdict.checks}
    assert verdict.ok, verdict.failures
    assert s["verified"], s["verification"]


@pytest.mark.parametrize("instance", sorted(INSTANCES_DIR.glob("tiny/*.toml")),
                         ids=lambda p: p.stem)
def test_every_tiny_instance_buys_the_support_networks_and_the_spares_pool(instance):
    """The tiny instances too (infeasible-power included, which has no design to check):
    the support networks sized from the design, and failure rates for the cold-spare pool
    although their goodput is a fixed overhead."""
    inputs = prepare(load_instance(instance))
    assert inputs.facility.support_networks == "sized"
    assert inputs.objective.reliability_model == "overhead"
    assert {p.gpu.generation for p in inputs.configs} <= set(inputs.rates)
