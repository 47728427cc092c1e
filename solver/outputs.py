"""Write a solve's files atomically: results/<instance>/{design.json, bom.csv, summary.md}.

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

from solver.loading import REPO_ROOT


def default_out_dir(instance_name: str) -> Path:
    return REPO_ROOT / "results" / instance_name


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
    lines += ["", "## Media", "", "| link class | medium | length m | links |", "|---|---|---|---|"]
    lines += [f"| {m['link_class']} | {m['medium']} | {m['length_m']:g} | {m['links']:,} |"
              for m in d["media"]]
    lines += ["", "## Limits", "", "| limit | value | limit | binding |", "|---|---|---|---|"]
    lines += [f"| {b['name']} | {b['value']:,.3f} | {b['limit']:,.3f} | {b['binding']} |"
              for b in summary["binding"]]
    return "\n".join(lines) + "\n"


def write_solve_outputs(summary: dict[str, Any], bom_csv: str, out_dir: Path) -> list[Path]:
    return write_atomically(out_dir, {
        "design.json": json.dumps(summary, indent=2) + "\n",
        "bom.csv": bom_csv,
        "summary.md": summary_markdown(summary),
    })
