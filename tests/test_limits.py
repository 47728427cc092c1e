"""One definition of what a limit is (models.design.limits): the instance schema, the
candidates' with_limits, the sweep's shared paths and the checker all follow it."""

from __future__ import annotations

import dataclasses
import re

import pytest

from models.design import candidates
from models.design.data import DesignData
from models.design.evaluate import default_evaluators
from models.design.limits import BUILDING, LIMIT_FIELDS, LIMITS, shared_paths
from models.design.milp import FAMILIES
from solver import checker, solve
from solver.loading import INSTANCES_DIR, instance_from_dict, read_document
from solver.prepare import prepare
from solver.schema.instance import Building, Limits, Objective, Reliability
from solver.sweeps import REUSABLE_PATHS

NOT_LIMITS = {
    "objective.kind", "objective.performance", "objective.assumed_mfu",
    "objective.reliability_model", "objective.overhead_fraction",
    "objective.throughput_quantile", "objective.years", "objective.discount_rate_per_year",
    "reliability.availability_target",
    "reliability.spare_fraction", "reliability.profile",
    "reliability.failure_rate_multipliers",
    f"{BUILDING}.name", f"{BUILDING}.halls",
}
"""Fields of the sections that hold limits which are not limits (choices, models, names)."""


def schema_paths() -> set[str]:
    sections = {"limits": Limits, "objective": Objective, "reliability": Reliability,
                BUILDING: Building}
    return {f"{prefix}.{name}" for prefix, model in sections.items()
            for name in model.model_fields}


def test_every_field_of_the_limit_sections_is_a_limit_or_named_otherwise():
    """A new field in [limits] (or a building, [objective], [reliability]) fails here until
    it is listed in models.design.limits.LIMITS or, if not a limit, in NOT_LIMITS."""
    listed = {p for limit in LIMITS for p in (*limit.paths, *limit.qualifiers)}
    assert schema_paths() - NOT_LIMITS == listed
    assert not listed & NOT_LIMITS


def test_limit_fields_are_design_data_fields_and_what_with_limits_replaces():
    names = {f.name for f in dataclasses.fields(DesignData)}
    assert set(LIMIT_FIELDS) <= names
    assert candidates.LIMIT_FIELDS is LIMIT_FIELDS


def test_milp_families_and_checker_checks_are_named_after_the_limits():
    families = {name for name, _add, _relaxable in FAMILIES}
    for limit in LIMITS:
        if limit.data_fields:  # carried to the MILP: a constraint family enforces it
            assert limit.name in families or limit.name in ("min_gpus", "max_gpus"), limit
    assert "gpu_range" in families  # min_gpus and max_gpus
    assert set(checker.LIMIT_CHECKS) == {limit.name for limit in LIMITS}


@pytest.mark.parametrize("path", shared_paths())
def test_sweeps_share_candidates_exactly_on_the_shared_paths(path):
    concrete = path.replace("[*]", "[b0]")
    assert REUSABLE_PATHS.match(concrete)


@pytest.mark.parametrize("path", sorted(
    {p for limit in LIMITS if not limit.shared for p in limit.paths}
    | {"limits.budget_basis", "objective.kind", "choices.gpu", "site.buildings[b0].name"}))
def test_sweeps_do_not_share_candidates_elsewhere(path):
    assert not REUSABLE_PATHS.match(path)


def tiny(name: str) -> dict:
    return read_document(INSTANCES_DIR / "tiny" / f"{name}.toml")


def test_every_limit_path_reaches_its_design_data_fields():
    """Changing a limit in the instance changes the DesignData fields it names."""
    doc = tiny("power-bound")
    base = prepare(instance_from_dict(doc))
    data, _ = candidates.build_design_data(base, default_evaluators(base))
    edits = {
        "limits.it_power_mw": ("limits", "it_power_mw", 0.5),
        "limits.budget_usd": ("limits", "budget_usd", 1e6),
        "limits.min_gpus": ("limits", "min_gpus", 8),
        "limits.max_gpus": ("limits", "max_gpus", 1024),
        "objective.required_tokens_per_s": ("objective", "required_tokens_per_s", 10.0),
        "reliability.min_goodput": ("reliability", "min_goodput", 0.5),
    }
    for limit in LIMITS:
        for path in limit.paths:
            if path not in edits or not limit.data_fields:
                continue
            section, key, value = edits[path]
            changed = dict(doc, **{section: dict(doc.get(section, {}), **{key: value})})
            new = candidates.with_limits(data, prepare(instance_from_dict(changed)))
            assert any(getattr(new, f) != getattr(data, f) for f in limit.data_fields), path


def test_the_checker_checks_every_limit_the_instance_sets():
    doc = tiny("power-bound")
    doc["limits"] = dict(doc["limits"], max_gpus=10**6)
    doc["reliability"] = dict(doc.get("reliability", {}), min_goodput=0.01,
                              max_blast_radius_gpus=72, site_availability_target=0.9)
    doc["catalog"]["facility"] = dict(doc["catalog"]["facility"], facility_cost_mode="parts")
    doc["objective"] = dict(doc.get("objective", {}), required_tokens_per_s=1.0)
    doc["site"]["buildings"] = [dict(b, max_racks=10**5) for b in doc["site"]["buildings"]]
    result = solve(instance_from_dict(doc), place=False)
    assert result.status.has_solution
    exact_check = checker.check_design(result.inputs, result.design, _data(result),
                                       _exact(result))
    names = {re.sub(r"\[.*\]$", "", c.name) for c in exact_check.checks}
    assert {limit.name for limit in LIMITS} <= names


def _data(result):
    data, _ = candidates.build_design_data(result.inputs, default_evaluators(result.inputs))
    return data


def _exact(result):
    inputs = result.inputs
    return candidates.exact_candidate(inputs, default_evaluators(inputs), _data(result),
                                      result.design.candidate)
