"""Regression pins: every shipped instance keeps its design, BOM, power, cost and
throughput (`clusterplan solve --no-place --json`), the default instance keeps its
placement summary, and each phased build-out its plan per period.

The expected figures are in tests/regression_values.py, captured from the code and
dated with why each was (re)captured. They are not hand calculations (those are in
tests/test_solve.py): they prove that a refactoring changes nothing. When a model change
moves a figure on purpose, re-capture with `python tests/test_regression.py` and add a
dated line saying why to the values file's header.
"""

from __future__ import annotations

import json
import math
import pprint
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # so `python tests/test_regression.py` imports this tree

from solver.cli import app  # noqa: E402

VALUES = Path(__file__).with_name("regression_values.py")
INSTANCES = sorted([*ROOT.glob("instances/*.toml"), *ROOT.glob("instances/tiny/*.toml")])
SHIPPED = [p for p in INSTANCES if "[[periods]]" not in p.read_text(encoding="utf-8")]
PHASED = [p for p in INSTANCES if p not in SHIPPED]
"""Phased build-outs (campus-phased), pinned by their own fingerprint: their MILP stops at
a relative gap or node limit, not at the wall clock, so the plan is the same on any
machine (solver.phased)."""
DEFAULT = ROOT / "instances" / "h100-100k.toml"
REL = 1e-9  # floats may differ by rounding order only

DESIGN_FIELDS = ("gpu", "gpus", "nodes", "spare_nodes", "switch", "nic", "tiers", "pods",
                 "oversubscription", "rail_optimized", "nic_attachment", "switches_per_tier",
                 "links_per_tier", "media", "scalable_units_per_building")
THROUGHPUT_FIELDS = ("tokens_per_s", "effective_tokens_per_s", "mfu", "goodput",
                     "time_to_train_days")
PLACEMENT_FIELDS = ("status", "racks", "racks_total", "halls_used", "cables",
                    "optics_capex_usd", "optics_power_w", "transceivers", "cable_assemblies",
                    "media_lifetime_cost_usd", "media_failure_cost_usd", "max_link_m",
                    "objective_usd", "objective_bound", "gap_usd", "bound_method", "bom_media",
                    "halls", "verified", "within_limits")


def key(path: Path) -> str:
    return str(path.relative_to(ROOT / "instances").with_suffix(""))


def solve_json(path: Path, tmp: Path, place: bool) -> tuple[int, dict]:
    args = ["solve", str(path), "--json", "--out", str(tmp)] + ([] if place else ["--no-place"])
    out = CliRunner().invoke(app, args)
    return out.exit_code, json.loads(out.stdout)


def fingerprint(code: int, s: dict) -> dict:
    """The figures a design is judged by; runtimes and hashes left out."""
    pin = {"exit_code": code, "status": s["status"]}
    if s["status"] not in ("optimal", "feasible"):
        return pin | {"diagnosis": s["diagnosis"]}
    thr = s["throughput"]
    return pin | {
        "design": {f: s["design"][f] for f in DESIGN_FIELDS},
        "bom": [{k: line[k] for k in ("item", "category", "quantity", "unit_cost_usd",
                                      "cost_usd", "power_w")} for line in s["bom"]],
        "power": s["power"],
        "cost": s["cost"],
        "objective": s["objective"]["value"],
        "throughput": {f: thr[f] for f in THROUGHPUT_FIELDS}
        | {"parallelism": thr["performance"].get("parallelism")},
        "binding": [(b["name"], b["binding"]) for b in s["binding"]],
        "verified": s["verified"],
    }


def phased_fingerprint(code: int, s: dict) -> dict:
    """What a phased build-out is judged by: per period what is bought and operating,
    spend and tokens; the proven gap and that the stop was deterministic."""
    return {"exit_code": code, "status": s["status"], "verified": s["verified"],
            "objective": s["objective"]["value"], "totals": s["totals"],
            "gap": s["solver"]["gap"], "deterministic": s["solver"]["deterministic"],
            "periods": [{"name": p["name"], "spend_usd": p["spend_usd"], "it_mw": p["it_mw"],
                         "tokens": p["tokens"], "clusters": [
                             {k: c[k] for k in ("gpu", "switch", "tiers", "gpus_owned",
                                                "gpus_operating", "spend_usd")}
                             for c in p["clusters"]]}
                        for p in s["periods"]]}


def placement_fingerprint(s: dict) -> dict:
    p = s["placement"]
    return {f: p[f] for f in PLACEMENT_FIELDS} | {
        "capex_usd": s["cost"]["capex_usd"], "it_mw": s["power"]["it_mw"],
        "verified": s["verified"]}


def assert_same(actual, expected, where="") -> None:
    """Exact for ints, strings and structure; floats to REL."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), where
        for k in expected:
            assert_same(actual[k], expected[k], f"{where}.{k}")
    elif isinstance(expected, list | tuple):
        assert isinstance(actual, list | tuple) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, f"{where}[{i}]")
    elif isinstance(expected, float) and not isinstance(actual, bool):
        assert math.isclose(actual, expected, rel_tol=REL, abs_tol=1e-9), (
            f"{where}: {actual!r} != {expected!r}")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


def expected() -> dict:
    namespace: dict = {}
    exec(VALUES.read_text(encoding="utf-8"), namespace)
    return namespace


@pytest.mark.parametrize("path", SHIPPED, ids=key)
def test_shipped_instance_solves_as_pinned(path, tmp_path):
    pins = expected()["SOLVE"]
    assert key(path) in pins, f"no pin for {key(path)}: capture one (see module docstring)"
    assert_same(fingerprint(*solve_json(path, tmp_path, place=False)), pins[key(path)],
                key(path))


def test_every_pin_is_a_shipped_instance():
    assert sorted(expected()["SOLVE"]) == sorted(key(p) for p in SHIPPED)


@pytest.mark.parametrize("path", PHASED, ids=key)
def test_phased_instance_solves_as_pinned(path, tmp_path):
    """The same plan on any machine, however loaded (run it beside a busy CPU)."""
    assert_same(phased_fingerprint(*solve_json(path, tmp_path, place=False)),
                expected()["PHASED"][key(path)], key(path))


def test_default_instance_places_as_pinned(default_solve_json):
    assert_same(placement_fingerprint(default_solve_json), expected()["PLACEMENT"],
                "placement")


def capture() -> None:
    """Re-write the values file from this tree (keeps its header comment)."""
    import tempfile

    header = VALUES.read_text(encoding="utf-8").split("SOLVE = ")[0]
    with tempfile.TemporaryDirectory() as tmp:
        solve_pins = {key(p): fingerprint(*solve_json(p, Path(tmp), place=False))
                      for p in SHIPPED}
        placement = placement_fingerprint(solve_json(DEFAULT, Path(tmp), place=True)[1])
        phased = {key(p): phased_fingerprint(*solve_json(p, Path(tmp), place=False))
                  for p in PHASED}
    VALUES.write_text(header + "SOLVE = " + pprint.pformat(solve_pins, width=96)
                      + "\n\nPLACEMENT = " + pprint.pformat(placement, width=96)
                      + "\n\nPHASED = " + pprint.pformat(phased, width=96) + "\n",
                      encoding="utf-8")


if __name__ == "__main__":
    capture()
