"""`clusterplan report DESIGN.json`: report.html again from a saved solve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from solver.cli_common import JsonFlag, emit_json, run, stderr
from solver.errors import InvalidInstance

REQUIRED = ("status", "instance", "design", "power", "cost", "throughput", "bom", "binding")
"""Sections of a solved design.json the report reads."""


def read_design(path: Path) -> dict:
    """A solved design.json; invalid input names what is missing (exit 3)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInstance([f"{path}: {exc}"], "design") from None
    if not isinstance(doc, dict):
        raise InvalidInstance([f"{path}: not a JSON object"], "design")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise InvalidInstance([f"{k}: missing (not a solved design.json of clusterplan "
                               "solve)" for k in missing], "design")
    return doc


def register(app: typer.Typer) -> None:
    @app.command()
    def report(
        design: Annotated[Path, typer.Argument(
            help="design.json written by clusterplan solve.")],
        out: Annotated[Path | None, typer.Option(
            "--out", help="Output folder (default: the design.json's folder, whose "
                          "pictures are embedded).")] = None,
        as_json: JsonFlag = False,
    ) -> None:
        """Write report.html (self-contained) for a solved design.json."""
        from solver.report_html import write_report_html

        def body():
            doc = read_design(design)
            folder = out or design.parent
            folder.mkdir(parents=True, exist_ok=True)
            path = write_report_html(doc, folder, pictures=design.parent)
            if as_json:
                emit_json({"report": str(path)})
            stderr.print(f"wrote {path}", highlight=False)

        run(body)
