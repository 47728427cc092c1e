"""Shared pieces of the CLI commands: consoles, the --json flag, error mapping, JSON output."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from solver.errors import ClusterplanError, InvalidInstance

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)

# Modules under solver/commands/ that register their commands on `app`.
COMMAND_MODULES: tuple[str, ...] = ("catalog", "fabric", "solve", "perf", "reliability")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


def run(action: Callable[[], Any]) -> Any:
    """Run a command body; map clusterplan errors to messages and exit codes."""
    try:
        return action()
    except InvalidInstance as exc:
        stderr.print(f"[bold red]invalid input[/] {exc.source}:", highlight=False)
        for problem in exc.problems:
            stderr.print(f"  - {problem}", highlight=False, markup=False)
        raise typer.Exit(exc.exit_code) from None
    except ClusterplanError as exc:
        stderr.print("[bold red]error:[/]", escape(str(exc)), highlight=False)
        raise typer.Exit(exc.exit_code) from None


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (the --json contract)."""
    sys.stdout.write(json.dumps(document, indent=2, default=_json_default) + "\n")


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
