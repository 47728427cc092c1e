"""`clusterplan place [INSTANCE | design.json]`: racks on the floor plan, cables and media.
A design.json is read by solver.design_file (validated, checked against the instance,
re-derived from it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from solver.backends import SolveOptions
from solver.cli_common import (
    COMMAND_TIME_LIMIT_S,
    JsonFlag,
    PlacementGapOpt,
    TimeLimitOpt,
    emit_json,
    placement_limit,
    run,
    stderr,
    stdout,
)
from solver.deadline import Deadline
from solver.errors import Infeasible, NoSolution
from solver.results import Status


def render_notes(notes: list[str]) -> None:
    """Each note on its own line (why a smaller or other design came back, ...)."""
    for note in notes:
        stdout.print(f"note: {escape(note)}", highlight=False)


def render(summary: dict) -> None:
    s = summary
    stdout.print(f"placement {s['status']} (verified={s.get('verified')}): "
                 f"{s['racks_total']:,} racks {s['racks']} in {len(s['halls_used'])} halls")
    t = Table(title="Cables by link class and medium")
    for col in ("link class", "medium", "count", "total m", "longest m"):
        t.add_column(col, justify="left" if col in ("link class", "medium") else "right")
    for c in s["cables"]:
        t.add_row(c["link_class"], c["medium"], f"{c['count']:,}",
                  f"{c['total_length_m']:,.0f}", f"{c['max_length_m']:,.1f}")
    stdout.print(t)
    stdout.print(f"optics capex ${s['optics_capex_usd'] / 1e6:,.1f}M, optics power "
                 f"{s['optics_power_w'] / 1e3:,.0f} kW, longest link {s['max_link_m']:,.0f} m; "
                 f"lifetime media objective ${s['objective_usd'] / 1e6:,.1f}M, bound "
                 f"${s['objective_bound'] / 1e6:,.1f}M ({s['bound_method']}), gap "
                 f"{s['gap']:.2%} (${s['gap_usd'] / 1e6:,.1f}M), {s['runtime_s']:.1f} s")
    render_notes(s.get("notes", []))


def register(app: typer.Typer) -> None:
    @app.command()
    def place(
        source: Annotated[Path | None, typer.Argument(
            help="Instance file, or a design.json from `clusterplan solve`; default: the "
                 "shipped instance's optimal design.")] = None,
        instance: Annotated[Path | None, typer.Option(
            "--instance",
            help="Instance of a design.json (default: the shipped instance of its name).")
        ] = None,
        out: Annotated[Path | None, typer.Option(
            "--out", help="Output folder (default results/<instance>/).")] = None,
        time_limit: TimeLimitOpt = COMMAND_TIME_LIMIT_S,
        placement_gap: PlacementGapOpt = SolveOptions.placement_gap,
        as_json: JsonFlag = False,
    ) -> None:
        """Place racks on the floor plan; cable media from routed lengths (CP-SAT)."""
        deadline = Deadline(time_limit)  # imports below count against it
        from solver.api import place as place_api
        from solver.design_file import is_design_file, read_design_file
        from solver.loading import load_instance, shipped_instance_named
        from solver.outputs import check_place_location, default_out_dir, write_placement_outputs

        def body():
            if out is not None:
                check_place_location(out)
            design = None
            if source is not None and is_design_file(source):
                design = read_design_file(source)
                inst = load_instance(instance or shipped_instance_named(design.instance))
            else:
                inst = load_instance(source)
            target = out or default_out_dir(inst.name)
            check_place_location(target)

            result = place_api(inst, design, SolveOptions(
                time_limit, placement_time_limit_s=placement_limit(time_limit),
                placement_gap=placement_gap,
                deadline=deadline))
            if not result.status.has_solution:
                if as_json:
                    emit_json(result.to_dict())
                error = Infeasible if result.status == Status.INFEASIBLE else NoSolution
                raise error(result.summary["diagnosis"])
            deadline.enter("writing the output files")
            written = write_placement_outputs(result, target)
            if as_json:
                emit_json(result.to_dict())
            else:
                render(result.to_dict())
            stderr.print(f"wrote {', '.join(str(w) for w in written)}", highlight=False)

        run(body, deadline)
