"""`clusterplan reliability`: interruptions, checkpointing, restart, spares and goodput."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from solver.cli_common import JsonFlag, emit_json, run, stdout
from solver.reliability_inputs import DEFAULT_WORKLOAD, MAX_EVENTS_PER_RUN, MAX_SIMULATED_RUNS


def register(app: typer.Typer) -> None:
    @app.command()
    def reliability(
        gpu: Annotated[str, typer.Option("--gpu", help="GPU system id from the catalog.")],
        gpus: Annotated[int, typer.Option("--gpus", help="GPUs the job trains on.")],
        workload: Annotated[str, typer.Option(
            "--workload", help="Workload id or file (sets the checkpoint size).")
        ] = DEFAULT_WORKLOAD,
        switch: Annotated[str | None, typer.Option(
            "--switch", help="Back-end switch id (default: first with the NIC's speed).")
        ] = None,
        rail_optimized: Annotated[bool, typer.Option(
            "--rail-optimized/--no-rail-optimized",
            help="Rail-optimized (node links leave the rack to the row's leaves) or "
            "middle-of-rack (leaves in the rack group: copper).")] = True,
        checkpoint_gbps: Annotated[float | None, typer.Option(
            "--checkpoint-gbps",
            help="Aggregate checkpoint storage bandwidth [GB/s] (default: 1 GB/s per node).")
        ] = None,
        recovery: Annotated[str, typer.Option(
            "--recovery", help="storage (cold restart from a storage checkpoint) | in-memory "
            "(warm standby, in-memory peer/CPU checkpoints)")] = "storage",
        profile: Annotated[str, typer.Option(
            "--profile", help="Failure-rate profile: default | semianalysis-optics | "
            "research-cluster")] = "default",
        simulate: Annotated[bool, typer.Option(
            "--simulate", help="Also estimate goodput by Monte-Carlo simulation.")] = False,
        runs: Annotated[int, typer.Option("--runs", help="Simulated runs.")] = 100,
        max_runs: Annotated[int, typer.Option(
            "--max-runs", min=2, help="Refuse a simulation of more runs than this.")
        ] = MAX_SIMULATED_RUNS,
        max_events: Annotated[int, typer.Option(
            "--max-events", min=1, help="Refuse a simulation whose runs step through more "
            "failure events each than this (days x events a day).")] = MAX_EVENTS_PER_RUN,
        days: Annotated[float, typer.Option("--days", help="Simulated days per run.")] = 30.0,
        seed: Annotated[int, typer.Option("--seed", min=0, help="Simulation seed.")] = 0,
        as_json: JsonFlag = False,
    ) -> None:
        """Job interruptions, checkpoint interval, restart, hot spares and goodput."""
        from solver.api import reliability as reliability_api

        doc = run(lambda: reliability_api(
            gpu, gpus, workload=workload, switch=switch, rail_optimized=rail_optimized,
            checkpoint_gbps=checkpoint_gbps, recovery=recovery,
            simulate_runs=runs if simulate else None, days=days, seed=seed,
            profile=profile)).to_dict()
        if as_json:
            emit_json(doc)
            return
        table = Table(title=f"reliability: {doc['gpus']} x {doc['gpu']} ({doc['workload']}, "
                            f"{doc['recovery']} recovery, profile {doc['profile']})")
        table.add_column("quantity")
        table.add_column("value", justify="right")
        for key in ("interruptions_per_day", "mtbf_hours", "checkpoint_size_gb",
                    "checkpoint_write_s", "checkpoint_interval_s", "restart_s", "goodput",
                    "spare_nodes", "availability", "planned_per_day"):
            table.add_row(key, f"{doc[key]:,.4g}")
        for key in ("interruptions_per_day_band", "goodput_band"):
            table.add_row(key, "[{:,.4g}, {:,.4g}]".format(*doc[key]))
        for key, value in doc["restart_breakdown_s"].items():
            table.add_row(f"  restart: {key} [s]", f"{value:,.4g}")
        for row in doc["classes"]:
            table.add_row(f"  interruptions/day: {row['class']} ({row['blast']})",
                          f"{row['per_day']:,.3g}")
        if "simulated" in doc:
            s = doc["simulated"]
            table.add_row("simulated goodput (95% CI)",
                          f"{s['goodput']:.4f} [{s['ci_low']:.4f}, {s['ci_high']:.4f}]")
        stdout.print(table)
