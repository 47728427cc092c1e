"""Shared pieces of the CLI commands: consoles, the --json flag, error mapping, JSON output."""

from __future__ import annotations

import json
import math
import re
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

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """User-supplied text made safe for the terminal: rich markup escaped, control
    characters (terminal escape sequences) shown as \\xNN instead of sent raw."""
    return escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text)))


def run(action: Callable[[], Any]) -> Any:
    """Run a command body; map clusterplan errors to messages and exit codes."""
    try:
        return action()
    except InvalidInstance as exc:
        stderr.print(f"[bold red]invalid input[/] {safe(exc.source)}:", highlight=False)
        for problem in exc.problems:
            stderr.print(f"  - {safe(problem)}", highlight=False)
        raise typer.Exit(exc.exit_code) from None
    except ClusterplanError as exc:
        stderr.print("[bold red]error:[/]", safe(exc), highlight=False)
        raise typer.Exit(exc.exit_code) from None


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (the --json contract): non-finite numbers become
    null, since NaN and Infinity are not JSON."""
    sys.stdout.write(json.dumps(_finite(document), indent=2, default=_json_default,
                                allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
