"""Package data: shipped instances by name (`clusterplan example`), results in the
working directory, workload files relative to their instance file."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from solver.cli import app
from solver.loading import INSTANCES_DIR, load_instance, shipped_instances
from solver.outputs import default_out_dir


def test_example_lists_every_shipped_instance():
    out = CliRunner().invoke(app, ["example"])
    assert out.exit_code == 0
    names = out.stdout.split()
    assert "h100-100k" in names and "tiny/power-bound" in names
    assert names == list(shipped_instances())
    assert len(names) == len(list(INSTANCES_DIR.glob("*.toml"))
                             + list(INSTANCES_DIR.glob("tiny/*.toml")))


def test_example_writes_a_loadable_copy_and_never_overwrites(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    assert runner.invoke(app, ["example", "tiny/power-bound"]).exit_code == 0
    written = tmp_path / "power-bound.toml"
    assert written.read_text() == (INSTANCES_DIR / "tiny" / "power-bound.toml").read_text()
    assert load_instance(written).name == "tiny-power-bound"
    again = runner.invoke(app, ["example", "tiny/power-bound"])
    assert again.exit_code == 2 and "not overwritten" in again.stderr
    assert runner.invoke(app, ["example", "h100-100k", "--out", "mine.toml"]).exit_code == 0
    assert (tmp_path / "mine.toml").is_file()
    unknown = runner.invoke(app, ["example", "nope"])
    assert unknown.exit_code == 2 and "h100-100k" in unknown.stderr


def test_results_go_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_out_dir("x") == tmp_path / "results" / "x"


def test_a_workload_file_resolves_against_the_instance_folder(tmp_path, monkeypatch):
    folder = tmp_path / "study"
    (folder / "jobs").mkdir(parents=True)
    shutil.copy(INSTANCES_DIR / "workloads" / "llama3-405b.toml", folder / "jobs" / "mine.toml")
    text = (INSTANCES_DIR / "llama3-16k.toml").read_text()
    line = next(s for s in text.splitlines() if s.startswith("workload ="))
    (folder / "inst.toml").write_text(text.replace(line, 'workload = "jobs/mine.toml"'))
    monkeypatch.chdir(tmp_path)  # not the instance's folder
    inst = load_instance(Path("study/inst.toml"))
    assert inst.workload == load_instance(INSTANCES_DIR / "llama3-16k.toml").workload
