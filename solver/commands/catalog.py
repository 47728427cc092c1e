"""`clusterplan catalog [KIND]`: list the shipped component catalog."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from solver.cli_common import JsonFlag, emit_json, run, stdout
from solver.errors import UsageError

KINDS = ("gpu", "switch", "nic", "medium", "facility")


def register(app: typer.Typer) -> None:
    @app.command()
    def catalog(
        kind: Annotated[str | None, typer.Argument(help=f"One of {', '.join(KINDS)}.")] = None,
        as_json: JsonFlag = False,
    ) -> None:
        """List the component catalog (every figure with its source in --json)."""
        from solver.loading import load_catalog

        def body():
            if kind is not None and kind not in KINDS:
                raise UsageError(f"KIND: unknown catalog kind '{kind}' (one of {', '.join(KINDS)})")
            cat = load_catalog()
            kinds = [kind] if kind else list(KINDS)
            if as_json:
                emit_json({k: (cat.facility.model_dump() if k == "facility" else
                               {i: item.model_dump() for i, item in getattr(cat, k).items()})
                           for k in kinds})
                return
            for k in kinds:
                items = [cat.facility] if k == "facility" else list(getattr(cat, k).values())
                fields = [f for f in type(items[0]).model_fields if f not in ("sources", "name")]
                table = Table(title=f"catalog: {k}")
                for f in fields:
                    table.add_column(f, overflow="fold")
                for item in items:
                    table.add_row(*[str(getattr(item, f)) for f in fields])
                stdout.print(table)

        run(body)
