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
def default_solve_json(cli, tmp_path_factory) -> dict:
    """`clusterplan solve instances/h100-100k.toml --json` (with placement), run once."""
    out = cli("solve", DEFAULT_INSTANCE, "--json", "--out", tmp_path_factory.mktemp("default"))
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)
