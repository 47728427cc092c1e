"""Write a solve's files atomically: results/<instance>/{design.json, bom.csv, summary.md,
bom.xlsx, report.html} and, with a placement, placement.csv, cables.csv and floorplan.png.
Every file is written from the final result (``result.to_dict()``: placed and re-checked
when placed); the design stage's estimate appears only where labelled so.

Files are written into a temporary folder beside the target and moved into place one by
one with os.replace, so an interrupted run never leaves a half-written file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from solver.bom_xlsx import write_bom_xlsx
from solver.floorplan import floorplan_png
from solver.placement import CableRun, PlacementResult, Rack, cables_table
from solver.report_html import write_report_html


def default_out_dir(instance_name: str) -> Path:
    """./results/<instance>/ of the working directory."""
    return Path.cwd() / "results" / instance_name


def write_atomically(out_dir: Path, files: dict[str, str]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".tmp-") as tmp:
        for name, text in files.items():
            (Path(tmp) / name).write_text(text, encoding="utf-8")
        for name in files:
            os.replace(Path(tmp) / name, out_dir / name)
            written.append(out_dir / name)
    return written


_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_file_atomically(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` on a temporary file in `path`'s folder, fsync it and os.replace
    it onto `path`: readers see the old file or the whole new one, never a part. The
    temporary file is removed when `write` fails (a full disk, a file-size limit). The
    file gets the permissions of a plainly created one (mkstemp's are owner-only)."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.stem}-", suffix=path.suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def summary_markdown(summary: dict[str, Any]) -> str:
    """A short human report of a solve, for pasting into planning documents."""
    d, p, c, t = summary["design"], summary["power"], summary["cost"], summary["throughput"]
    lines = [
        f"# clusterplan design: {summary['instance']}",
        "",
        f"Status: **{summary['status']}**, verified by the independent checker: "
        f"**{summary['verified']}**.",
        "",
        "| | |", "|---|---|",
        f"| GPU system | {d['gpu']} x {d['gpus']:,} GPUs ({d['nodes']:,} nodes + "
        f"{d['spare_nodes']:,} spares) |",
        f"| Fabric | {d['switch']} ({d['nic']}), {d['tiers']} tiers, {d['pods']} pod(s), "
        f"{d['oversubscription']:g}:1 between pods, "
        f"{'rail-optimized' if d['rail_optimized'] else 'middle-of-rack'}, "
        f"{d['nic_attachment']}-port NIC cages |",
        f"| Switches per tier | {', '.join(f'{n:,}' for n in d['switches_per_tier'])} |",
        f"| Critical IT / facility | {p['it_mw']:.1f} MW / {p['facility_mw']:.1f} MW, "
        f"{p['annual_energy_twh']:.2f} TWh/yr |",
        f"| Capex | ${c['capex_usd'] / 1e9:.3f}B (equipment ${c['equipment_capex_usd'] / 1e9:.3f}B"
        f", facility ${c['facility_capex_usd'] / 1e9:.3f}B) |",
        f"| TCO ({c['tco_years']} yr) | ${c['tco_usd'] / 1e9:.3f}B |",
        f"| Throughput | {t['tokens_per_s']:,.0f} tokens/s at MFU {t['mfu']:.1%} |",
        f"| Effective | {t['effective_tokens_per_s']:,.0f} tokens/s (goodput {t['goodput']:.1%}) |",
    ]
    if t["time_to_train_days"] is not None:
        lines.append(f"| Time to train | {t['time_to_train_days']:.1f} days |")
    par = t["performance"].get("parallelism")
    if par:
        lines.append("| Parallelism | " + ", ".join(f"{k} {v}" for k, v in par.items()) + " |")
    rel = t["reliability"]
    if "interruptions_per_day" in rel:
        lines.append(f"| Reliability | {rel['interruptions_per_day']:.1f} interruptions/day, "
                     f"{rel['recovery']} checkpoints every {rel['checkpoint_interval_s']:,.0f} s, "
                     f"restart {rel['restart_s']:,.0f} s, {d['spare_nodes']:,} hot spares |")
    if "placement" in summary:
        pl, est = summary["placement"], summary["design_estimate"]["cost"]["capex_usd"]
        lines.append(f"| Placement | {pl['racks_total']:,} racks in {len(pl['halls_used'])} "
                     f"halls, longest link {pl['max_link_m']:,.0f} m, capex with placed cabling "
                     f"${c['capex_usd'] / 1e9:.3f}B (design estimate ${est / 1e9:.3f}B) |")
    placed = "design_estimate" in summary
    lines += _media_table("Media (as placed, longest routed length)" if placed else "Media",
                          d["media"])
    lines += ["", "## Limits" + (" (on the placed design)" if placed else ""), "",
              "| limit | value | limit | binding |", "|---|---|---|---|"]
    lines += [f"| {b['name']} | {b['value']:,.3f} | {b['limit']:,.3f} | {b['binding']} |"
              for b in summary["binding"]]
    if placed:
        est = summary["design_estimate"]
        lines += ["", "## Design-stage estimate (before placement)", "",
                  "The design MILP's estimate, kept for comparison; every figure above is the "
                  "placed, re-checked design.", "",
                  f"- capex ${est['cost']['capex_usd'] / 1e9:.3f}B, critical IT "
                  f"{est['power']['it_mw']:.1f} MW, effective "
                  f"{est['throughput']['effective_tokens_per_s']:,.0f} tokens/s"]
        lines += _media_table("Media (design-stage estimate)", est.get("media", []))
    return "\n".join(lines) + "\n"


def _media_table(title: str, media: list[dict[str, Any]]) -> list[str]:
    return ["", f"## {title}", "", "| link class | medium | length m | links |",
            "|---|---|---|---|"] + [
        f"| {m['link_class']} | {m['medium']} | {m['length_m']:g} | {m['links']:,} |"
        for m in media]


def write_solve_outputs(result, out_dir: Path) -> list[Path]:
    """design.json (the --json document), bom.csv and summary.md of a solve
    (``solver.api.SolveResult``); with a placement also placement.csv, cables.csv and
    floorplan.png."""
    out_dir = Path(out_dir)
    summary = result.to_dict()
    written = write_atomically(out_dir, {
        "design.json": json.dumps(summary, indent=2) + "\n",
        "bom.csv": pd.DataFrame(summary["bom"]).to_csv(index=False),
        "summary.md": summary_markdown(summary),
    })
    if result.placement is not None and result.placement.racks:
        written += write_placement_outputs(result.placement, out_dir)
    return [*written, write_bom_xlsx(result, out_dir), write_report_html(result, out_dir)]



def placement_csv(racks: list[Rack]) -> str:
    """placement.csv: rack, building, hall, row, position, role, contents, power_kw."""
    lines = ["rack,building,hall,row,position,role,contents,power_kw"]
    for r in sorted(racks, key=lambda r: (r.position.building, r.position.hall,
                                          r.position.row, r.position.slot)):
        p = r.position
        lines.append(f"{r.id},{p.building},{p.hall},{p.row},{p.slot},{r.role},"
                     f"\"{r.contents}\",{r.power_w / 1e3:.3f}")
    return "\n".join(lines) + "\n"


def cables_csv(runs: list[CableRun]) -> str:
    """cables.csv: link_class, medium, length_m (rounded up to 0.1 m), count."""
    lines = ["link_class,medium,length_m,count"]
    lines += [f"{c['link_class']},{c['medium']},{c['length_m']:.1f},{c['count']}"
              for c in cables_table(runs)]
    return "\n".join(lines) + "\n"


def write_placement_outputs(result: PlacementResult, out_dir) -> list:
    """placement.csv, cables.csv (atomically) and floorplan.png into ``out_dir``."""
    out_dir = Path(out_dir)
    written = write_atomically(out_dir, {"placement.csv": placement_csv(result.racks),
                                         "cables.csv": cables_csv(result.runs)})
    return [*written, write_file_atomically(out_dir / "floorplan.png",
                                            lambda tmp: floorplan_png(result, tmp))]
