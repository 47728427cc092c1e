"""Instance files: every class of bad input gets exit 3, the field path named, no
traceback; all problems at once; TOML and JSON; the JSON Schema command."""

from __future__ import annotations

import copy
import json
import os
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solver import loading
from solver.cli import app
from solver.errors import InvalidInstance
from solver.loading import DEFAULT_INSTANCE, INSTANCES_DIR, instance_from_dict, load_instance
from solver.scenario import resolved_instance_sha256
from solver.schema import Catalog, Instance

runner = CliRunner()


def base() -> dict:
    return tomllib.loads(DEFAULT_INSTANCE.read_text())


def problems_of(doc: dict) -> list[str]:
    with pytest.raises(InvalidInstance) as err:
        instance_from_dict(doc)
    return err.value.problems


def test_every_shipped_instance_is_valid():
    paths = sorted(INSTANCES_DIR.glob("*.toml")) + sorted((INSTANCES_DIR / "tiny").glob("*.toml"))
    assert len(paths) >= 4
    for path in paths:
        assert load_instance(path).name


def _deepseek() -> dict:
    return tomllib.loads((INSTANCES_DIR / "workloads" / "deepseek-v3.toml").read_text())[
        "workload"]


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["limits"].update(it_power_mw="lots"), "limits.it_power_mw"),
    (lambda d: d["limits"].update(colour="blue"), "limits.colour"),
    (lambda d: d["choices"].update(gpus=["h1000-sxm"]), "choices.gpus[0]"),
    (lambda d: d["choices"]["fabrics"][0].update(switch="nope"), "choices.fabrics[0].switch"),
    (lambda d: d["limits"].update(it_power_mw=-5.0), "limits.it_power_mw"),
    (lambda d: d["limits"].update(it_power_mw=float("nan")), "limits.it_power_mw"),
    (lambda d: d["limits"].pop("budget_usd"), "limits.budget_usd"),
    (lambda d: d.update(workload="no-such-model"), "workload"),
    (lambda d: d.update(catalog={"gpu": {"h100-sxm": {"gpu_power_w": -1}}}),
     "catalog.gpu.h100-sxm.gpu_power_w"),
    (lambda d: d.update(catalog={"widget": {}}), "catalog.widget"),
    (lambda d: d["site"]["buildings"].append({"name": "hall-a", "it_power_mw": 1.0}),
     "duplicate building"),
    (lambda d: d.update(workload={**_deepseek(), "mtp_layers": -1}), "workload.mtp_layers"),
    (lambda d: d.update(workload={**_deepseek(), "mtp_layers": "one"}),
     "workload.mtp_layers"),
    (lambda d: d.update(workload={**_deepseek(), "mtp_layers": 62}),
     "mtp_layers 62 exceeds layers 61"),
    (lambda d: d.update(workload={**_deepseek(), "schedule": "zero-bubble"}),
     "workload.schedule"),
])
def test_bad_input_names_the_field(mutate, field):
    doc = base()
    mutate(doc)
    problems = problems_of(doc)
    assert any(field in p for p in problems), problems


def test_all_problems_reported_at_once():
    doc = base()
    doc["limits"]["it_power_mw"] = -1.0
    doc["limits"]["budget_usd"] = "cheap"
    doc["choices"]["gpus"] = ["nope"]
    problems = problems_of(doc)
    for field in ("limits.it_power_mw", "limits.budget_usd"):
        assert any(p.startswith(field) for p in problems), problems


def test_catalog_override_is_applied_and_marked():
    doc = base()
    doc["catalog"] = {"gpu": {"h100-sxm": {"node_price_usd": 250000.0}}}
    inst = instance_from_dict(doc)
    gpu = inst.catalog.gpu["h100-sxm"]
    assert gpu.node_price_usd == 250000.0
    assert gpu.sources["node_price_usd"].kind == "override"


def test_catalog_overrides_change_only_their_own_instance():
    """The shipped catalog is parsed once and shared (loading._parsed_catalog); an
    instance's overrides (a field, the facility, reliability, a new item) are its own."""
    shipped = copy.deepcopy(loading._parsed_catalog())
    doc = base()
    new_gpu = dict(shipped["gpu"]["h100-sxm"], node_price_usd=1.0)
    doc["catalog"] = {"gpu": {"h100-sxm": {"node_price_usd": 250000.0},
                              "my-gpu": {k: v for k, v in new_gpu.items() if k != "id"}},
                      "facility": {"facility_cost_mode": "per-mw"},
                      "reliability": {"gpu": {"hopper": {"mttf_hours": 60000.0}}}}
    changed = instance_from_dict(doc)
    assert changed.catalog.gpu["h100-sxm"].node_price_usd == 250000.0
    assert changed.catalog.gpu["my-gpu"].node_price_usd == 1.0
    assert changed.catalog.reliability.gpu["hopper"].mttf_hours == 60000.0
    assert loading._parsed_catalog() == shipped
    again = instance_from_dict(base())
    assert again.catalog.gpu["h100-sxm"].node_price_usd == shipped["gpu"]["h100-sxm"][
        "node_price_usd"]
    assert "my-gpu" not in again.catalog.gpu
    assert again.catalog.reliability == load_instance(DEFAULT_INSTANCE).catalog.reliability
    assert again.catalog.facility.facility_cost_mode == "parts"  # the schema's default


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name, text, needle", [
    ("broken.toml", "name = [unclosed\n", "not valid TOML"),
    ("broken.json", "{\"name\": }", "not valid JSON"),
    ("list.json", "[1, 2]", "must be a table"),
    ("missing.toml", None, "no such file"),
])
def test_cli_unreadable_files_exit_3(tmp_path, name, text, needle):
    path = tmp_path / name if text is None else write(tmp_path, name, text)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 3
    assert needle in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("kind, needle", [
    ("folder", "a folder, not a file"), ("device", "larger than 16 MB"),
    ("huge", "larger than 16 MB")])
def test_cli_refuses_what_is_not_an_instance_file_at_once(tmp_path, kind, needle):
    """Was: /dev/zero was read until the machine ran out of memory."""
    if kind == "folder":
        path = tmp_path
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path = write(tmp_path, "huge.toml", "# " + "x" * 2**24 + "\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 3
    assert needle in result.output
    assert "Traceback" not in result.output


def test_an_instance_from_a_pipe_or_with_any_line_endings_reads_as_its_file(tmp_path):
    """A shell's `<(cat in.toml)` is a pipe; old Mac files end lines with CR alone (the
    reader keeps Python's text mode's newlines)."""
    import threading

    text = (INSTANCES_DIR / "tiny" / "min-capex.toml").read_text()
    pipe = tmp_path / "pipe.toml"
    os.mkfifo(pipe)
    writer = threading.Thread(target=pipe.write_text, args=(text,))
    writer.start()
    result = runner.invoke(app, ["validate", str(pipe)])
    writer.join()
    assert result.exit_code == 0, result.output
    for ending in ("\r\n", "\r"):
        path = write(tmp_path, "endings.toml", "")
        path.write_bytes(text.replace("\n", ending).encode())
        result = runner.invoke(app, ["validate", str(path)])
        assert result.exit_code == 0, (repr(ending), result.output)


def test_a_building_of_more_than_10_gw_is_refused_naming_it(tmp_path):
    """Was: a building's power typed in kW as MW (1e8) generated 4 million halls and ran
    the solve out of memory."""
    text = (INSTANCES_DIR / "tiny" / "min-capex.toml").read_text().replace(
        'it_power_mw = 2.0 }', 'it_power_mw = 1e8 }')
    result = runner.invoke(app, ["validate", str(write(tmp_path, "kw.toml", text))])
    assert result.exit_code == 3
    assert "site.buildings.0.it_power_mw" in result.output


def test_a_workload_of_absurd_size_is_refused_naming_it(tmp_path):
    """Was: layers = 1e20 passed validation, then the checkpoint storage's network needed
    more than any fabric and the solve ended in an internal error."""
    text = (INSTANCES_DIR / "tiny" / "min-capex.toml").read_text().replace(
        "layers = 1\n", "layers = 99999999999999999999\n", 1)
    result = runner.invoke(app, ["validate", str(write(tmp_path, "huge.toml", text))])
    assert result.exit_code == 3
    assert "workload: 1.2e+27 parameters, more than 1e+15" in result.output


def test_cli_invalid_instance_exit_3_names_field(tmp_path):
    text = DEFAULT_INSTANCE.read_text().replace("it_power_mw = 150.0", "it_power_mw = -150.0")
    result = runner.invoke(app, ["solve", str(write(tmp_path, "bad.toml", text)), "--json"])
    assert result.exit_code == 3
    assert "limits.it_power_mw" in result.output
    assert "Traceback" not in result.output


def test_cli_invalid_workload_field_exit_3(tmp_path):
    """A workload file with a bad optional field: exit 3 naming it, no traceback."""
    text = (INSTANCES_DIR / "workloads" / "deepseek-v3.toml").read_text().replace(
        "mtp_layers = 1", "mtp_layers = -2")
    path = write(tmp_path, "wl.toml", text)
    result = runner.invoke(app, ["perf", "--workload", str(path), "--gpu", "h100-sxm",
                                 "--gpus", "2048", "--json"])
    assert result.exit_code == 3, result.output
    assert "mtp_layers" in result.output
    assert "Traceback" not in result.output


def test_json_instances_are_accepted(tmp_path):
    path = write(tmp_path, "inst.json", json.dumps(base()))
    assert load_instance(path).name == "h100-100k"


def test_validate_json_document():
    result = runner.invoke(app, ["validate", str(DEFAULT_INSTANCE), "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["valid"] is True


def test_schema_command_prints_the_instance_file_schema():
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert {"limits", "site", "choices", "workload", "catalog"} <= set(schema["properties"])
    assert "catalog" not in schema.get("required", [])
    assert schema["$defs"]["Limits"]["additionalProperties"] is False


def test_committed_json_schema_is_fresh():
    """instances/instance.schema.json is `clusterplan schema` output (regenerate it with
    `clusterplan schema > instances/instance.schema.json`)."""
    result = runner.invoke(app, ["schema"])
    committed = json.loads((INSTANCES_DIR / "instance.schema.json").read_text())
    assert json.loads(result.stdout) == committed


def test_instances_share_what_validates_once_and_it_equals_validating_anew(tmp_path):
    """A sweep validates an instance per scenario, so solver.loading keeps the last
    catalog it validated (by the files' parse and the overrides) and a workload file's
    validation (by its text): instances share them, equal to a validation from scratch,
    and their hash (solver.scenario.resolved_instance_sha256) is the same however they
    were made. Other overrides, and a workload file edited in place (same size, same
    modification time), give new ones."""
    doc = loading.read_instance_document(DEFAULT_INSTANCE)
    first, again = instance_from_dict(doc), instance_from_dict(doc)
    assert first.catalog is again.catalog and first.workload is again.workload
    assert first.catalog == Catalog.model_validate(loading.raw_catalog())
    loading._LAST_CATALOG.clear()
    anew = instance_from_dict(doc)
    assert anew.catalog is not first.catalog and anew == first
    assert resolved_instance_sha256(anew) == resolved_instance_sha256(first)

    def priced(price) -> Instance:
        return instance_from_dict(doc | {"catalog": {"gpu": {"h100-sxm": {
            "node_price_usd": price}}}})
    dearer = priced(400_000)
    assert priced(400_000).catalog is dearer.catalog  # the same overrides: kept
    assert dearer.catalog.gpu["h100-sxm"].node_price_usd == 400_000
    assert resolved_instance_sha256(dearer) != resolved_instance_sha256(first)
    assert priced(400_000.5).catalog.gpu["h100-sxm"].node_price_usd == 400_000.5
    assert resolved_instance_sha256(instance_from_dict(doc)) == resolved_instance_sha256(first)
    with pytest.raises(InvalidInstance, match="node_price_usd"):
        priced("a lot")
    assert priced(400_000) == dearer

    workload = tmp_path / "workload.toml"
    text = (loading.WORKLOADS_DIR / f"{doc['workload']}.toml").read_text()
    workload.write_text(text)
    stat = workload.stat()
    own = instance_from_dict(doc | {"workload": str(workload)})
    assert own.workload == first.workload
    layers = f"layers = {first.workload.layers}"
    workload.write_text(text.replace(layers, layers[:-1] + "9", 1))
    os.utime(workload, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    edited = instance_from_dict(doc | {"workload": str(workload)})
    assert edited.workload.layers % 10 == 9
    assert resolved_instance_sha256(edited) != resolved_instance_sha256(own)
