"""`clusterplan reliability`: interruptions, checkpointing, restart, spares and goodput."""

from __future__ import annotations

from dataclasses import asdict
from math import ceil
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from solver.cli_common import JsonFlag, emit_json, run, stdout
from solver.errors import InvalidInstance

if TYPE_CHECKING:
    from models.reliability import ReliabilityInputs, ReliabilityRates
    from solver.schema import Catalog, GpuSystem

DEFAULT_WORKLOAD = "llama3-405b"


def design(gpu_id: str, gpus: int, workload_ref: str, switch_id: str | None,
           rail_optimized: bool, checkpoint_gbps: float | None, recovery: str,
           profile: str = "default") -> tuple[ReliabilityInputs, ReliabilityRates, dict]:
    """The design as `solve` builds it, its rates, and what the document reports of it:
    the NIC the switch requires (else the GPU's default), the exact fabric with its hot
    spares, the cheapest medium reaching each link class at the default cable lengths,
    and the ReliabilityInputs builder the design candidates use."""
    from models.fabric import FabricSpec
    from models.reliability import param_count
    from models.reliability.goodput import choose_spares
    from solver.fabric_inputs import design_with_media, resolve_fabric_parts
    from solver.loading import load_catalog, load_workload
    from solver.reliability_inputs import (
        design_inputs,
        reliability_rates,
        workload_checkpoint_gb,
    )
    from solver.schema import CableLengths, Choices

    catalog = load_catalog()
    if gpu_id not in catalog.gpu:
        raise InvalidInstance([f"--gpu: unknown gpu system '{gpu_id}' "
                               f"(known: {', '.join(sorted(catalog.gpu))})"], "reliability")
    switch_id = switch_id or default_switch(catalog, catalog.gpu[gpu_id])
    parts = resolve_fabric_parts(catalog, gpu_id, switch_id, "--gpu", "--switch")
    workload = load_workload(workload_ref, "--workload")
    rates = reliability_rates(catalog.reliability, parts.gpu.generation, profile, "--profile")
    nodes = ceil(gpus / parts.gpu.gpus_per_node)
    # default: the instance schema's first checkpoint storage choice per node
    per_node = Choices.model_fields["checkpoint_storage_gbytes_per_s_per_node"].default[0]
    bandwidth = checkpoint_gbps if checkpoint_gbps is not None else nodes * per_node
    target = catalog.reliability.recovery.availability_target.value

    def with_media(total_nodes: int):
        spec = FabricSpec(nodes=total_nodes, ports_per_node=parts.gpu.nics_per_node,
                          radix=parts.radix, rail_optimized=rail_optimized)
        try:
            return design_with_media(parts, spec, CableLengths(), catalog, False)
        except ValueError as exc:
            raise InvalidInstance([f"--gpus/--switch/--no-rail-optimized: {exc}"],
                                  "reliability") from None

    def inputs(fabric, media, spares):
        return design_inputs(parts.gpu, parts.nic, parts.radix, rail_optimized, nodes, fabric,
                             media, recovery, workload_checkpoint_gb(workload), bandwidth,
                             target, spares)

    spares = choose_spares(inputs(*with_media(nodes), None), rates)
    fabric, media = with_media(nodes + spares)
    about = {"gpu": parts.gpu.id, "switch": parts.switch.id, "nic": parts.nic.id,
             "workload": workload.name, "params": param_count(workload),
             "media": {line.link_class: line.kind for line in media}}
    return inputs(fabric, media, spares), rates, about


def build(gpu_id: str, gpus: int, workload_ref: str, switch_id: str | None,
          rail_optimized: bool, checkpoint_gbps: float | None, recovery: str,
          simulate_runs: int | None, days: float, seed: int,
          profile: str = "default") -> dict[str, Any]:
    """The reliability document; bad options raise InvalidInstance naming the option."""
    from models.reliability import COPPER_KINDS, RECOVERY_MODES, goodput, simulate

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
    inputs, rates, about = design(gpu_id, gpus, workload_ref, switch_id, rail_optimized,
                                  checkpoint_gbps, recovery, profile)
    result = goodput(inputs, rates)
    doc: dict[str, Any] = {
        **about, "gpus": gpus, "nodes": inputs.nodes, "rail_optimized": rail_optimized,
        "checkpoint_size_gb": inputs.checkpoint_size_gb,
        "checkpoint_gbps": inputs.checkpoint_gbps, "switches": inputs.switches,
        "switch_links_optical": sum(n for k, n in inputs.switch_link_counts().items()
                                    if k not in COPPER_KINDS),
        "node_links_optical": inputs.node_links_optical,
        "node_links_copper": inputs.node_links_copper,
        **asdict(result),
    }
    if simulate_runs is not None:
        mean, low, high = simulate(inputs, rates, days, simulate_runs, seed)
        doc["simulated"] = {"goodput": mean, "ci_low": low, "ci_high": high,
                            "runs": simulate_runs, "days": days, "seed": seed}
    return doc


def default_switch(catalog: Catalog, gpu: GpuSystem) -> str:
    """The first catalog switch (by id) with ports at the speed of the GPU's default NIC
    and no NIC requirement of its own."""
    gbps = catalog.nic[gpu.default_nic].port_gbps
    for switch_id, switch in sorted(catalog.switch.items()):
        if gbps in switch.radix_by_gbps and switch.required_nic is None:
            return switch_id
    raise InvalidInstance([f"--switch: no catalog switch has {gbps} Gb/s ports"], "reliability")


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
        days: Annotated[float, typer.Option("--days", help="Simulated days per run.")] = 30.0,
        seed: Annotated[int, typer.Option("--seed", help="Simulation seed.")] = 0,
        as_json: JsonFlag = False,
    ) -> None:
        """Job interruptions, checkpoint interval, restart, hot spares and goodput."""
        doc = run(lambda: build(gpu, gpus, workload, switch, rail_optimized, checkpoint_gbps,
                                recovery, runs if simulate else None, days, seed, profile))
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
