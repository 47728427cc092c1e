"""The `clusterplan` command line: thin typer commands, parse -> api -> render.

Contract: with --json a command prints exactly one JSON document on stdout; logs,
progress and errors go to stderr. Exit codes: 0 result, 1 internal error, 2 usage,
3 invalid instance, 4 infeasible, 5 no solution within the limits.
"""

from __future__ import annotations

import gc
import importlib
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.markup import escape

from solver.cli_common import JsonFlag, emit_json, run, stderr, stdout
from solver.interruption import INTERRUPTED_EXIT, INTERRUPTED_NOTE, handling

app = typer.Typer(
    name="clusterplan",
    help="Optimal designs for large GPU training clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
# Modules under solver/commands/ that register their commands on `app`.
COMMAND_MODULES: tuple[str, ...] = (
    "catalog", "fabric", "solve", "reliability", "perf", "sweep", "place", "report")


@app.command()
def validate(
    instance: Annotated[Path, typer.Argument(help="Instance file (TOML or JSON).")],
    as_json: JsonFlag = False,
) -> None:
    """Check an instance file; list every problem with its field path (exit 3)."""
    from solver.loading import load_instance

    inst = run(lambda: load_instance(instance))
    summary = {"valid": True, "name": inst.name, "gpus": inst.choices.gpus,
               "fabrics": [f.switch for f in inst.choices.fabrics]}
    if as_json:
        emit_json(summary)
    else:
        stdout.print(f"[green]valid[/] {instance}: {inst.name}")


@app.command()
def schema(
    result: Annotated[bool, typer.Option(
        "--result", help="The schema of the result documents (--json of solve, place, "
                         "fabric, perf, reliability) instead.")] = False,
) -> None:
    """Print the JSON Schema of instance files (or, with --result, of result documents)."""
    from solver.schema.document import instance_document_schema
    from solver.schema.result import result_document_schema

    emit_json(result_document_schema() if result else instance_document_schema())


@app.command()
def example(
    name: Annotated[str | None, typer.Argument(
        help="A shipped instance, e.g. h100-100k or tiny/power-bound; none: list them.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="File to write (default ./<name>.toml; never overwritten).")] = None,
) -> None:
    """Write a shipped instance to a file for editing (no NAME: list the shipped ones)."""
    from solver.errors import InvalidInstance, UsageError
    from solver.loading import shipped_instances

    def body():
        shipped = shipped_instances()
        if name is None:
            for key in shipped:
                stdout.print(key, highlight=False)
            return
        if name not in shipped:
            raise UsageError(f"NAME: no shipped instance '{name}' (known: {', '.join(shipped)})")
        target = out or Path(shipped[name].name)
        if target.exists():
            raise UsageError(f"--out: {target} exists; not overwritten")
        try:
            target.write_text(shipped[name].read_text(encoding="utf-8"), encoding="utf-8")
        except OSError as exc:
            raise InvalidInstance([f"--out: cannot write {target} ({exc.strerror or exc})"],
                                  "--out") from None
        stderr.print(f"wrote {target}", highlight=False)

    run(body)


for _module in COMMAND_MODULES:
    importlib.import_module(f"solver.commands.{_module}").register(app)


def interrupted() -> NoReturn:
    """The interruption's one line and exit 130."""
    stderr.print("[bold red]interrupted[/]", INTERRUPTED_NOTE, highlight=False)
    sys.exit(INTERRUPTED_EXIT)


def main() -> None:
    """The `clusterplan` script. Ctrl-C or SIGTERM: one line and exit 130 (typer turns the
    KeyboardInterrupt into exit 130; output sets are written whole or not at all). The
    process ends after the command: the objects it leaves are frozen out of the garbage
    collector (``gc.freeze``), whose collections during interpreter shutdown would only
    rescan them (~0.4 s after the default solve, ~200k containers left)."""
    try:
        with handling():
            app()
    except SystemExit as exc:
        if exc.code == INTERRUPTED_EXIT:
            interrupted()
        raise
    except KeyboardInterrupt:  # outside click's own, or an error that came from one
        interrupted()
    except Exception as exc:  # noqa: BLE001 - last resort: no traceback for users
        stderr.print("[bold red]internal error:[/]", escape(f"{type(exc).__name__}: {exc}"),
                     highlight=False)
        sys.exit(1)
    finally:
        gc.freeze()
