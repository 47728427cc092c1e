"""`clusterplan report DESIGN.json`: report.html again from a saved solve."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from solver.cli_common import JsonFlag, emit_json, run, stderr
from solver.errors import InvalidInstance

MAX_PROBLEMS = 20
"""Problems of a damaged design.json listed (the first, by field)."""


def read_design(path: Path) -> dict:
    """A solved design.json, checked before anything is written: the solve document's
    schema (solver.schema.result.SOLVED: every section the report reads, with its
    types) and the design's decisions within their bounds (as `place` reads them,
    solver.schema.design_file). Invalid input names each field (exit 3)."""
    import jsonschema

    from solver.design_file import read_design_document, read_design_file
    from solver.schema.result import SOLVED

    doc = read_design_document(path)
    if isinstance(doc, dict) and doc.get("status") not in ("optimal", "feasible"):
        raise InvalidInstance([f"status: {doc.get('status')!r}: not a solved design "
                               "(a report needs status optimal or feasible)"], "design")
    errors = sorted(jsonschema.Draft202012Validator(SOLVED).iter_errors(doc),
                    key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        raise InvalidInstance([f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: "
                               f"{e.message}" for e in errors[:MAX_PROBLEMS]], "design")
    read_design_file(path, doc)  # the decisions within their bounds, as `place` reads them
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
