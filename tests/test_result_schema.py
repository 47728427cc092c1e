"""The result documents' JSON Schema (instances/result.schema.json): fresh, and every
command's --json output valid against it; the API and the CLI give the same JSON."""

from __future__ import annotations

import json

import jsonschema
import pytest

from solver import fabric, load_instance, perf, reliability, solve
from solver.loading import DEFAULT_INSTANCE
from solver.schema.result import SOLVED, result_document_schema

SCHEMA = result_document_schema()
FABRIC_ARGS = {"gpus": 16384, "gpu": "h100-sxm", "switch": "quantum2-qm9700"}
PERF_ARGS = {"workload": "llama3-405b", "gpu": "h100-sxm", "gpus": 2048, "switch": "tomahawk5"}
RELIABILITY_ARGS = {"gpu": "h100-sxm", "gpus": 16384}


def validator(command: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$defs": SCHEMA["$defs"],
                                            "$ref": f"#/$defs/{command}"})


def valid(command: str, doc: dict) -> list[str]:
    return [e.message for e in validator(command).iter_errors(doc)]


def as_options(args: dict) -> list[str]:
    return [x for k, v in args.items() for x in (f"--{k}", str(v))]


def json_of(result) -> dict:
    assert result.exit_code in (0, 4), result.output
    return json.loads(result.stdout)


def without_runtimes(doc):
    """The document with wall-clock fields removed (they differ between any two runs)."""
    if isinstance(doc, dict):
        return {k: without_runtimes(v) for k, v in doc.items()
                if k not in ("runtime_s", "milp_runtime_s")}
    if isinstance(doc, list):
        return [without_runtimes(v) for v in doc]
    return doc


def test_committed_result_schema_is_fresh(cli, instances_dir):
    """instances/result.schema.json is `clusterplan schema --result` (regenerate it with
    `clusterplan schema --result > instances/result.schema.json`)."""
    committed = json.loads((instances_dir / "result.schema.json").read_text())
    assert json.loads(cli("schema", "--result").stdout) == committed == SCHEMA
    jsonschema.Draft202012Validator.check_schema(committed)


def test_every_commands_json_is_valid(cli, tmp_path, instances_dir, default_solve_json):
    tiny = instances_dir / "tiny"
    docs = {
        "solve": [default_solve_json,
                  json_of(cli("solve", tiny / "two-buildings.toml", "--json", "--out", tmp_path)),
                  json_of(cli("solve", tiny / "min-tco.toml", "--no-place", "--json", "--out",
                              tmp_path)),
                  json_of(cli("solve", tiny / "infeasible-power.toml", "--json", "--out",
                              tmp_path))],
        "place": [json_of(cli("place", tiny / "power-bound.toml", "--json", "--out",
                              tmp_path / "place"))],
        "fabric": [json_of(cli("fabric", *as_options(FABRIC_ARGS), "--json"))],
        "perf": [json_of(cli("perf", *as_options(PERF_ARGS), "--json"))],
        "reliability": [json_of(cli("reliability", *as_options(RELIABILITY_ARGS), "--simulate",
                                    "--runs", "3", "--days", "1", "--json"))],
    }
    assert docs["solve"][3]["status"] == "infeasible" and "placement" in docs["solve"][1]
    for command, outputs in docs.items():
        for doc in outputs:
            assert valid(command, doc) == [], command


def test_the_schema_rejects_a_broken_document(default_solve_json):
    broken = dict(default_solve_json, design={k: v for k, v in
                                               default_solve_json["design"].items()
                                               if k != "gpus"})
    assert valid("solve", broken)
    assert [e.message for e in jsonschema.Draft202012Validator(SOLVED).iter_errors(broken)
            ] == ["'gpus' is a required property"]
    assert valid("solve", dict(default_solve_json, status="done"))
    assert valid("fabric", {"gpus": 1})


def test_api_and_cli_give_the_same_json(cli, default_solve_json):
    """Default inputs: the shipped default instance (placed), and the README's fabric,
    perf and reliability examples."""
    api = solve(load_instance(DEFAULT_INSTANCE)).to_dict()
    assert without_runtimes(json.loads(json.dumps(api))) == without_runtimes(default_solve_json)
    for command, call, args in [("fabric", fabric, FABRIC_ARGS), ("perf", perf, PERF_ARGS),
                                ("reliability", reliability, RELIABILITY_ARGS)]:
        from_cli = json_of(cli(command, *as_options(args), "--json"))
        assert json.loads(json.dumps(call(**args).to_dict())) == from_cli, command


@pytest.mark.parametrize("command", sorted(SCHEMA["$defs"]))
def test_every_command_has_a_schema(command):
    assert SCHEMA["$defs"][command]


def test_an_infeasible_solve_prints_its_own_document_only(cli, instances_dir, tmp_path):
    text = (instances_dir / "tiny" / "min-capex.toml").read_text().replace(
        "it_power_mw = 2.0\n", "it_power_mw = 0.01\n", 1)
    path = tmp_path / "infeasible.toml"
    path.write_text(text)
    result = cli("solve", path, "--no-place", "--json", "--out", tmp_path / "out")
    assert result.exit_code == 4
    doc = json.loads(result.stdout)  # one document: a second would not parse
    assert doc["status"] == "infeasible" and valid("solve", doc) == []
