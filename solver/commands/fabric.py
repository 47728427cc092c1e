"""`clusterplan fabric`: exact scale-out fabric for a GPU count, with media, capex and power."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from solver.errors import InvalidInstance


def build(gpus: int, gpu: str, switch: str, tiers: int | None, oversubscription: float,
          pods: int, rail_optimized: bool, twin_port: bool,
          instance: Path | None) -> dict[str, Any]:
    """The fabric document; bad options raise InvalidInstance naming the option."""
    from models.fabric import FabricSpec
    from solver.fabric_inputs import (
        design_with_media,
        fabric_report,
        frontend_network,
        resolve_fabric_parts,
    )
    from solver.loading import load_catalog, load_instance
    from solver.schema import CableLengths

    problems = []
    if gpus < 1:
        problems.append(f"--gpus: must be a positive number of GPUs (got {gpus})")
    if tiers is not None and not 1 <= tiers <= 5:
        problems.append(f"--tiers: must be 1..5 (got {tiers})")
    if not 1 <= oversubscription <= 64:
        problems.append(f"--oversubscription: must be 1..64 (got {oversubscription})")
    if pods < 1:
        problems.append(f"--pods: must be >= 1 (got {pods})")
    if problems:
        raise InvalidInstance(problems, "fabric")
    if instance is not None:
        inst = load_instance(instance)
        catalog, lengths = inst.catalog, inst.site.cable_lengths
        single_building = len(inst.site.buildings) == 1
    else:
        catalog, lengths, single_building = load_catalog(), CableLengths(), False
    parts = resolve_fabric_parts(catalog, gpu, switch, "--gpu", "--switch")
    nodes = math.ceil(gpus / parts.gpu.gpus_per_node)
    spec = FabricSpec(nodes=nodes, ports_per_node=parts.gpu.nics_per_node, radix=parts.radix,
                      tiers=tiers, pods=pods, oversubscription=oversubscription,
                      rail_optimized=rail_optimized)
    try:
        fabric, media = design_with_media(parts, spec, lengths, catalog, twin_port,
                                          single_building)
    except ValueError as exc:
        raise InvalidInstance([f"--tiers/--pods/--oversubscription: {exc}"], "fabric") from None
    report = fabric_report(fabric, parts, media, frontend_network(nodes, parts.gpu, catalog))
    return {"gpus": gpus, **report}


def render(doc: dict[str, Any]) -> None:
    """Readable rich tables of a fabric document on stdout."""
    from solver.cli_common import stdout

    head = Table(title=f"{doc['gpus']:,} x {doc['gpu']} on {doc['switch']} + {doc['nic']} "
                       f"at {doc['gbps']}G", show_header=False)
    head.add_row("Endpoints", f"{doc['endpoints']:,} ({doc['nodes']:,} nodes x "
                              f"{doc['ports_per_node']} ports), max {doc['max_endpoints']:,}")
    head.add_row("Structure", f"{doc['tiers']} tiers, radix {doc['radix']}, {doc['pods']} pod(s)"
                              f" of {doc['pod_tiers']} tiers, {doc['oversubscription']:g}:1 "
                              f"between pods, "
                              f"{'rail-optimized' if doc['rail_optimized'] else 'middle-of-rack'}")
    head.add_row("Switches per tier", " / ".join(f"{n:,}" for n in doc["switches_per_tier"])
                 + f" = {doc['switches_total']:,}")
    head.add_row("Capex", f"${doc['capex_usd'] / 1e6:,.1f}M")
    head.add_row("Power", f"{doc['power_w'] / 1e6:,.2f} MW")
    fe = doc["frontend"]
    head.add_row("Front-end", f"{fe['switches']:,} {fe['switch']} switches, {fe['links']:,} "
                              f"links ({fe['tiers']} tiers at {fe['gbps']}G)")
    stdout.print(head)
    links = Table(title="Link classes")
    for col in ("class", "links", "length m", "medium", "transceivers", "cables", "capex $M",
                "power kW"):
        links.add_column(col, justify="left" if col in ("class", "medium") else "right")
    for c in doc["link_classes"]:
        links.add_row(c["name"], f"{c['links']:,}", f"{c['length_m']:g}", c["medium"],
                      f"{c['transceivers']:,}", f"{c['cables']:,}",
                      f"{c['capex_usd'] / 1e6:,.2f}", f"{c['power_w'] / 1e3:,.1f}")
    stdout.print(links)


def register(app: typer.Typer) -> None:
    """Attach the `fabric` command to the CLI app."""
    from solver.cli_common import emit_json, run

    @app.command()
    def fabric(
        gpus: Annotated[int, typer.Option("--gpus", help="Training GPUs to attach.")],
        gpu: Annotated[str, typer.Option("--gpu", help="GPU system id (catalog).")],
        switch: Annotated[str, typer.Option("--switch", help="Switch id (catalog).")],
        tiers: Annotated[int | None, typer.Option(
            "--tiers", help="Switch tiers (per pod); default the fewest that fit.")] = None,
        oversubscription: Annotated[float, typer.Option(
            "--oversubscription", help="Down:up ratio of the pods' uplinks.")] = 1.0,
        pods: Annotated[int, typer.Option("--pods", help="Equal pods joined by a top tier.")] = 1,
        rail_optimized: Annotated[bool, typer.Option(
            "--rail-optimized/--no-rail-optimized",
            help="One rail per leaf (optics from every node) or middle-of-rack.")] = True,
        twin_port: Annotated[bool, typer.Option(
            "--twin-port", help="Twin-port NIC cages: half the node-end transceivers.")] = False,
        instance: Annotated[Path | None, typer.Option(
            "--instance", help="Take catalog overrides and cable lengths from this file.")
        ] = None,
        as_json: Annotated[bool, typer.Option(
            "--json", help="Print one JSON document on stdout.")] = False,
    ) -> None:
        """Exact switch, link and media counts of the scale-out fabric, capex and power."""
        doc = run(lambda: build(gpus, gpu, switch, tiers, oversubscription, pods,
                                rail_optimized, twin_port, instance))
        if as_json:
            emit_json(doc)
        else:
            render(doc)
