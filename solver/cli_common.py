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

from solver.deadline import MAX_TIME_LIMIT_S, Deadline, time_limit_in
from solver.errors import ClusterplanError, InvalidInstance
from solver.interruption import reraise_interruption

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
COMMAND_TIME_LIMIT_S = 900.0
"""Default wall-clock budget of a whole solve or place [s]: generous, so that the default
instance's placement (up to 10x its 30 s of deterministic time on a loaded machine) fits."""
TimeLimitOpt = Annotated[float, typer.Option(
    "--time-limit", min=0.1, max=MAX_TIME_LIMIT_S,
    help="Wall-clock budget of the whole command [s]: every stage (loading, candidates, "
         "MILP, diagnosis, placement, output files); exit 5 when spent.")]


PlacementGapOpt = Annotated[float, typer.Option(
    "--placement-gap", min=0.0, max=1.0,
    help="Placement relative gap: CP-SAT stops once its layout's cost is within it of "
         "the bound.")]


def placement_limit(time_limit: float) -> float:
    """CP-SAT's deterministic time for a placement: the usual 30 s, at most the budget."""
    from solver.backends import SolveOptions

    return min(time_limit, SolveOptions.placement_time_limit_s)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """User-supplied text made safe for the terminal: rich markup escaped, control
    characters (terminal escape sequences) shown as \\xNN instead of sent raw."""
    return escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text)))


def run(action: Callable[[], Any], deadline: Deadline | None = None) -> Any:
    """Run a command body; map clusterplan errors to messages and exit codes. With a
    ``deadline`` the body is stopped when it is spent (exit 5)."""
    try:
        if deadline is None:
            return action()
        with deadline.alarm():
            return action()
    except InvalidInstance as exc:
        stderr.print(f"[bold red]invalid input[/] {safe(exc.source)}:", highlight=False)
        for problem in exc.problems:
            stderr.print(f"  - {safe(problem)}", highlight=False)
        raise typer.Exit(exc.exit_code) from None
    except Exception as exc:
        reraise_interruption(exc)  # not the error it was turned into
        error = exc if isinstance(exc, ClusterplanError) else time_limit_in(exc)
        if error is None:  # not clusterplan's: the last resort (solver.cli.main)
            raise
        stderr.print("[bold red]error:[/]", safe(error), highlight=False)
        raise typer.Exit(error.exit_code) from None


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
