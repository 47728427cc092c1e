"""`clusterplan reliability`: interruptions, checkpointing, restart, spares and goodput."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

import typer
from rich.table import Table

from solver.cli_common import JsonFlag, emit_json, run, stdout
from solver.errors import InvalidInstance

DEFAULT_WORKLOAD = "llama3-405b"


def build(gpu_id: str, gpus: int, workload_ref: str, switch_id: str | None,
          rail_optimized: bool, checkpoint_gbps: float | None, recovery: str,
          simulate_runs: int | None, days: float, seed: int) -> dict[str, Any]:
    """The reliability document; bad options raise InvalidInstance naming the option."""
    from models.reliability import RECOVERY_MODES, goodput, param_count, simulate
    from solver.loading import load_catalog, load_workload
    from solver.prepare import backend_nic
    from solver.reliability_inputs import (
        catalog_item,
        default_switch,
        design_inputs,
        load_reliability_catalog,
        reliability_rates,
    )

    problems = []
    if gpus <= 0:
        problems.append(f"--gpus: must be a positive number of GPUs (got {gpus})")
    if checkpoint_gbps is not None and not checkpoint_gbps > 0:
        problems.append(f"--checkpoint-gbps: must be positive (got {checkpoint_gbps})")
    if recovery not in RECOVERY_MODES:
        problems.append(f"--recovery: must be one of {', '.join(RECOVERY_MODES)} "
                        f"(got '{recovery}')")
    if simulate_runs is not None and simulate_runs < 2:
        problems.append(f"--runs: need at least 2 runs (got {simulate_runs})")
    if not days > 0:
        problems.append(f"--days: must be positive (got {days})")
    if problems:
        raise InvalidInstance(problems, "reliability")
    catalog = load_catalog()
    gpu = catalog_item(catalog, "gpu", gpu_id, "--gpu")
    switch = catalog_item(catalog, "switch", switch_id or default_switch(
        catalog, catalog.nic[gpu.default_nic].port_gbps), "--switch")
    nic = backend_nic(catalog, gpu, switch)
    workload = load_workload(workload_ref, "--workload")
    rel_catalog = load_reliability_catalog()
    rates = reliability_rates(rel_catalog, gpu.generation)
    inputs = design_inputs(gpu, nic, switch, gpus, workload, rail_optimized, checkpoint_gbps,
                           recovery, rel_catalog.recovery.availability_target.value)
    result = goodput(inputs, rates)
    doc: dict[str, Any] = {
        "gpu": gpu.id, "gpus": gpus, "nodes": inputs.nodes, "switch": switch.id,
        "workload": workload.name, "rail_optimized": rail_optimized, "recovery": recovery,
        "params": param_count(workload), "checkpoint_size_gb": inputs.checkpoint_size_gb,
        "checkpoint_gbps": inputs.checkpoint_gbps, "switches": inputs.switches,
        "switch_links_optical": inputs.switch_links_optical,
        "node_links_optical": inputs.node_links_optical,
        "node_links_copper": inputs.node_links_copper,
        **asdict(result),
    }
    if simulate_runs is not None:
        mean, low, high = simulate(inputs, rates, days, simulate_runs, seed)
        doc["simulated"] = {"goodput": mean, "ci_low": low, "ci_high": high,
                            "runs": simulate_runs, "days": days, "seed": seed}
    return doc


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
            help="Rail-optimized (optical node links) or middle-of-rack (copper).")] = True,
        checkpoint_gbps: Annotated[float | None, typer.Option(
            "--checkpoint-gbps",
            help="Aggregate checkpoint storage bandwidth [GB/s] (default: 1 GB/s per node).")
        ] = None,
        recovery: Annotated[str, typer.Option(
            "--recovery", help="storage | in-memory")] = "storage",
        simulate: Annotated[bool, typer.Option(
            "--simulate", help="Also estimate goodput by Monte-Carlo simulation.")] = False,
        runs: Annotated[int, typer.Option("--runs", help="Simulated runs.")] = 100,
        days: Annotated[float, typer.Option("--days", help="Simulated days per run.")] = 30.0,
        seed: Annotated[int, typer.Option("--seed", help="Simulation seed.")] = 0,
        as_json: JsonFlag = False,
    ) -> None:
        """Job interruptions, checkpoint interval, restart, hot spares and goodput."""
        doc = run(lambda: build(gpu, gpus, workload, switch, rail_optimized, checkpoint_gbps,
                                recovery, runs if simulate else None, days, seed))
        if as_json:
            emit_json(doc)
            return
        table = Table(title=f"reliability: {doc['gpus']} x {doc['gpu']} ({doc['workload']})")
        table.add_column("quantity")
        table.add_column("value", justify="right")
        for key in ("interruptions_per_day", "mtbf_hours", "checkpoint_size_gb",
                    "checkpoint_write_s", "checkpoint_interval_s", "restart_s", "goodput",
                    "spare_nodes", "availability"):
            table.add_row(key, f"{doc[key]:,.4g}")
        for key, value in doc["breakdown"].items():
            table.add_row(f"  interruptions/day: {key}", f"{value:,.3g}")
        if "simulated" in doc:
            s = doc["simulated"]
            table.add_row("simulated goodput (95% CI)",
                          f"{s['goodput']:.4f} [{s['ci_low']:.4f}, {s['ci_high']:.4f}]")
        stdout.print(table)
