"""`clusterplan fabric`: exact scale-out fabric for a GPU count, with media, capex and power."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table


def render(doc: dict[str, Any]) -> None:
    """Readable rich tables of a fabric document on stdout."""
    from solver.cli_common import stdout
    from solver.report_html import between_pods

    head = Table(title=f"{doc['gpus']:,} x {doc['gpu']} on {doc['switch']} + {doc['nic']} "
                       f"at {doc['gbps']}G", show_header=False)
    head.add_row("Endpoints", f"{doc['endpoints']:,} ({doc['nodes']:,} nodes x "
                              f"{doc['ports_per_node']} ports), max {doc['max_endpoints']:,}")
    head.add_row("Structure", f"{doc['tiers']} tiers, radix {doc['radix']}, {doc['pods']} pod(s)"
                              f" of {doc['pod_tiers']} tiers, {between_pods(doc)}"
                              f"{' (meshed)' if doc.get('pod_join') == 'mesh' else ''}, "
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
        pod_join: Annotated[str, typer.Option(
            "--pod-join", help="Pods joined by 'super' switches or a 'mesh' of their top "
                               "switches (no extra tier).")] = "super",
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
        from solver.api import fabric as fabric_api

        doc = run(lambda: fabric_api(gpus, gpu, switch, tiers=tiers,
                                     oversubscription=oversubscription, pods=pods,
                                     rail_optimized=rail_optimized, twin_port=twin_port,
                                     instance=instance, pod_join=pod_join)).to_dict()
        if as_json:
            emit_json(doc)
        else:
            render(doc)
