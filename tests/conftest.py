"""Shared fixtures: the CLI runner, the shipped instances' folder, and the default
instance solved once per session through the CLI (with placement)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solver.cli import app
from solver.loading import DEFAULT_INSTANCE, INSTANCES_DIR


@pytest.fixture(scope="session")
def instances_dir() -> Path:
    return INSTANCES_DIR


@pytest.fixture(scope="session")
def cli():
    """Run `clusterplan ARGS...` in-process: cli(*args) -> click Result."""
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="session")
def default_solve_run(cli, tmp_path_factory) -> tuple[Path, dict]:
    """`clusterplan solve instances/h100-100k.toml --json --out FOLDER` (with placement),
    run once: the output folder and the JSON document."""
    folder = tmp_path_factory.mktemp("default")
    out = cli("solve", DEFAULT_INSTANCE, "--json", "--out", folder)
    assert out.exit_code == 0, out.output
    return folder, json.loads(out.stdout)


@pytest.fixture(scope="session")
def default_solve_json(default_solve_run) -> dict:
    """The default solve's JSON document (default_solve_run)."""
    return default_solve_run[1]
