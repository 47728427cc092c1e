"""`clusterplan solve [INSTANCE]`: the optimal design, its BOM, power, cost, throughput."""

from __future__ import annotations

import contextlib
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

MAX_THREADS = 1024
"""Most --threads (HiGHS's and CP-SAT's): 50,000 aborted the process with no message."""


def render(result) -> None:
    """Readable rich tables of a solve on stdout."""
    from solver.commands.place import render as render_placement
    from solver.commands.place import render_notes
    from solver.outputs import pods_text
    from solver.report_html import between_pods

    s = result.summary
    d, p, c, t = s["design"], s["power"], s["cost"], s["throughput"]
    head = Table(title=f"clusterplan design - {s['instance']} ({s['status']}, "
                       f"verified={s['verified']})", show_header=False)
    head.add_row("GPU system", f"{d['gpu']}: {d['gpus']:,} GPUs in {d['nodes']:,} nodes "
                               f"+ {d['spare_nodes']:,} spare nodes")
    head.add_row("Fabric", f"{d['switch']} + {d['nic']}: {d['tiers']} tiers, {d['pods']} pod(s)"
                           f"{pods_text(d)}, "
                           f"{between_pods(d)}, "
                           f"{'rail-optimized' if d['rail_optimized'] else 'middle-of-rack'}, "
                           f"{d['nic_attachment']}-port cages")
    head.add_row("Switches per tier", " / ".join(f"{n:,}" for n in d["switches_per_tier"]))
    head.add_row("Power", f"{p['it_mw']:.1f} MW critical IT, {p['facility_mw']:.1f} MW facility, "
                          f"{p['annual_energy_twh']:.2f} TWh/yr")
    head.add_row("Cost", f"capex ${c['capex_usd'] / 1e9:,.3f}B, opex "
                         f"${c['annual_opex_usd'] / 1e6:,.1f}M/yr, TCO "
                         f"${c['tco_usd'] / 1e9:,.3f}B over {c['tco_years']} years")
    head.add_row("Full cost", f"${c['usd_per_gpu_hour']:,.2f} per GPU-hour, "
                              f"${c['usd_per_million_tokens']:,.4g} per million effective "
                              f"tokens (${c['annual_cost_usd'] / 1e9:,.3f}B a year)")
    fac = d.get("facility")
    if fac:
        built = ("$/MW shortcut in sourced shares" if fac["cooling"] == "per-mw" else
                 f"{fac['redundancy']} electrical, {fac['cooling']} cooling")
        head.add_row("Facility", f"{built}, PUE {fac['pue']:.2f}: electrical "
                                 f"${fac['electrical_usd'] / 1e6:,.0f}M, cooling "
                                 f"${fac['cooling_usd'] / 1e6:,.0f}M, shell "
                                 f"${fac['shell_usd'] / 1e6:,.0f}M")
    head.add_row("Throughput", f"{t['tokens_per_s']:,.0f} tokens/s, MFU {t['mfu']:.1%}, "
                               f"goodput {t['goodput']:.1%} -> {t['effective_tokens_per_s']:,.0f} "
                               "effective tokens/s")
    par = t["performance"].get("parallelism")
    if par:
        head.add_row("Parallelism", ", ".join(f"{k} {v}" for k, v in par.items()))
    mapping = d.get("job_mapping")
    if mapping:
        head.add_row("Job mapping", "; ".join(
            f"{dim} {g['degree']} " + (f"crosses {', '.join(g['crosses'])}" if g["crosses"]
                                        else "inside the NVLink domain")
            for dim, g in mapping["groups"].items()))
    rel = t["reliability"]
    if "interruptions_per_day" in rel:
        band = rel.get("interruptions_per_day_band", [rel["interruptions_per_day"]] * 2)
        head.add_row("Reliability", (
            f"{rel['interruptions_per_day']:.1f} interruptions/day [{band[0]:.1f}-{band[1]:.1f}]"
            f" (MTBF {rel['mtbf_hours'] * 60:.0f} min), {rel['recovery']} recovery, "
            f"checkpoints every {rel['checkpoint_interval_s']:,.0f} s, restart "
            f"{rel['restart_s']:,.0f} s; {1 - t['goodput']:.1%} of throughput lost to "
            f"failures and checkpoints"))
    if t["time_to_train_days"] is not None:
        head.add_row("Time to train", f"{t['time_to_train_days']:.1f} days")
    stdout.print(head)
    bom = Table(title="Bill of materials")
    for col in ("item", "category", "quantity", "unit $", "cost $M", "power kW"):
        bom.add_column(col, justify="left" if col in ("item", "category") else "right")
    for line in s["bom"]:
        bom.add_row(line["item"], line["category"], f"{line['quantity']:,.0f}",
                    f"{line['unit_cost_usd']:,.0f}", f"{line['cost_usd'] / 1e6:,.1f}",
                    f"{line['power_w'] / 1e3:,.0f}")
    stdout.print(bom)
    limits = Table(title="Limits (binding = the next size up would break it)")
    for col in ("limit", "value", "cap", "slack", "binding"):
        limits.add_column(col)
    for b in s["binding"]:
        limits.add_row(escape(b["name"]), f"{b['value']:,.2f}", f"{b['limit']:,.2f}",
                       f"{b['slack']:,.2f} {b['unit']}", "yes" if b["binding"] else "")
    stdout.print(limits)
    for b in s["binding"]:
        if b["binding"] and b.get("note"):
            stdout.print(f"  binding {escape(b['name'])}: {escape(b['note'])}")
    if "placement" in s:
        render_placement(s["placement"])
        est, placed = s["design_estimate"]["cost"]["capex_usd"], s["cost"]["capex_usd"]
        stdout.print(f"Placed cabling replaces the design's media estimate: capex "
                     f"${est / 1e9:,.3f}B -> ${placed / 1e9:,.3f}B; within limits: "
                     + escape(", ".join(f"{name} {'yes' if ok else 'NO'}" for name, ok
                                        in s["placement"]["within_limits"].items())))
    render_notes(s["notes"])
    solver = s["solver"]
    gap = f"{solver['gap']:.2g}" if solver["gap"] is not None else "n/a"
    stdout.print(f"HiGHS {solver['termination']} (gap {gap}) in {solver['milp_runtime_s']:.2f} s;"
                 f" whole solve {solver['runtime_s']:.2f} s; verified by the independent "
                 f"checker: {s['verified']}")


def fail_on_status(result, as_json: bool, time_limit: float) -> None:
    """Without a design, or with a placement that failed: the document on stdout (with
    --json), the reason on stderr, exit 4 (infeasible) or 5 (no solution); no files."""
    s = result.to_dict()
    placement = s.get("placement", {})
    if result.status.has_solution and placement.get("status", "optimal") in ("optimal",
                                                                              "feasible"):
        return
    if as_json:
        emit_json(s)
    if not result.status.has_solution:
        if result.status == Status.INFEASIBLE:
            raise Infeasible("instance is infeasible:\n" + "\n".join(
                f"  - {m}" for m in s["diagnosis"]))
        raise NoSolution("; ".join(s["diagnosis"]) or f"no design found within {time_limit:g} s")
    error = Infeasible if placement["status"] == Status.INFEASIBLE else NoSolution
    raise error("the design is optimal but its placement failed (use --no-place to skip "
                f"it): {placement['diagnosis']}")


def register(app: typer.Typer) -> None:
    @app.command()
    def solve(
        instance: Annotated[Path | None, typer.Argument(
            help="Instance file; default: the shipped instances/h100-100k.toml.")] = None,
        out: Annotated[Path | None, typer.Option(
            "--out", help="Output folder (default results/<instance>/).")] = None,
        time_limit: TimeLimitOpt = COMMAND_TIME_LIMIT_S,
        placement_gap: PlacementGapOpt = SolveOptions.placement_gap,
        gap: Annotated[float, typer.Option("--gap", min=0.0, max=1.0,
                                           help="Relative MIP gap.")] = 1e-6,
        threads: Annotated[int, typer.Option("--threads", min=1, max=MAX_THREADS,
                                             help="Solver threads.")] = 1,
        no_place: Annotated[bool, typer.Option(
            "--no-place", help="Skip the rack placement stage.")] = False,
        as_json: JsonFlag = False,
    ) -> None:
        """Solve an instance: the optimal design with BOM, power, cost and throughput."""
        deadline = Deadline(time_limit)  # imports below count against it
        from solver.api import solve as solve_instance
        from solver.forked import gc_paused, usable_cores
        from solver.loading import load_instance
        from solver.outputs import check_out_location, default_out_dir, write_solve_outputs

        def body():
            if out is not None:
                check_out_location(out)
            deadline.enter("loading the instance")
            inst = load_instance(instance)
            target = out or default_out_dir(inst.name)
            check_out_location(target)
            # a single design's command holds ~1M candidate objects to its end, which
            # every full collection would rescan (1-2 s of the default solve, its
            # pictures and reports); its few cycles are freed when it exits. A phased
            # build-out keeps the collector: it builds a MILP per period.
            with contextlib.nullcontext() if inst.periods else gc_paused():
                result = solve_instance(inst, place=not no_place, options=SolveOptions(
                    time_limit, gap, threads, deadline=deadline,
                    placement_time_limit_s=placement_limit(time_limit),
                    placement_gap=placement_gap, candidate_processes=min(2, usable_cores())))
                fail_on_status(result, as_json, time_limit)
                deadline.enter("writing the output files")
                if "periods" in result.summary:  # a phased build-out (solver.phased)
                    from solver.phased_outputs import render_phased, write_phased_outputs

                    written = write_phased_outputs(result, target)
                    if as_json:
                        emit_json(result.to_dict())
                    else:
                        render_phased(result.summary, stdout)
                    stderr.print(f"wrote {', '.join(str(w) for w in written)}",
                                 highlight=False)
                    return
                written = write_solve_outputs(result, target)
            if as_json:
                emit_json(result.to_dict())
            else:
                render(result)
            stderr.print(f"wrote {', '.join(str(w) for w in written)}", highlight=False)

        run(body, deadline)
