"""report.html: one self-contained page per solve (no network access needed to view it).

Built from the ``--json`` document (``result.to_dict()`` or a design.json) and the
pictures beside it in the results folder: the design summary, why this design (limits,
runner-up designs and how much they lose), cost and power stacks, the BOM, the floor
plan, reliability (interruptions by cause, restart breakdown, goodput), parallelism and
job mapping, and any sweep, tornado, Pareto or marginal-value pictures found under the
folder. Pictures are embedded as base64 PNG/SVG, CSS and the table-sorting script are
inline. ``clusterplan report design.json`` writes it again from a saved solve.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from models.facility import SHORTCUT

TEMPLATE = "report.html.j2"
FLOORPLAN = "floorplan.png"
PICTURE_DEPTH = 3
"""Folder levels searched below the results folder for analysis pictures."""


def write_report_html(result, folder: str | Path, pictures: str | Path | None = None,
                      stacks: str | None = None) -> Path:
    """Write ``folder``/report.html for ``result`` (anything with ``to_dict()``, or the
    document itself), embedding ``folder``/floorplan.png (the set's own floor plan) and
    the analysis pictures in ``pictures`` (default ``folder``); ``stacks``: its
    :func:`stacks_uri`, if already drawn."""
    from solver.outputs import write_file_atomically

    folder = Path(folder)
    summary = result if isinstance(result, dict) else result.to_dict()
    html = report_html(summary, folder, Path(pictures) if pictures is not None else folder,
                       stacks)
    return write_file_atomically(folder / "report.html",
                                 lambda tmp: tmp.write_text(html, encoding="utf-8"))


def report_html(summary: dict[str, Any], folder: Path | None = None,
                pictures_folder: Path | None = None, stacks: str | None = None) -> str:
    """The page as a string (module doc): a placed design's floor plan from ``folder``
    (else from ``pictures_folder``), analysis pictures from ``pictures_folder`` (default
    ``folder``); ``stacks``: the summary's :func:`stacks_uri` if already drawn."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("solver", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]), undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True)
    env.filters |= {"num": _num, "usd": _usd, "pct": lambda x: f"{x:.1%}",
                    "between_pods": between_pods}
    pictures_folder = pictures_folder or folder
    pictures = [p for p in (found_pictures(pictures_folder) if pictures_folder else [])
                if p["name"] != FLOORPLAN]
    placed = "racks_total" in (summary.get("placement") or {})
    plans = [f / FLOORPLAN for f in (folder, pictures_folder) if f is not None]
    plan = next((path for path in plans if path.is_file()), None)
    floorplan = ({"name": FLOORPLAN, "uri": _png_uri(plan)}
                 if placed and plan is not None else None)  # unplaced: no floor plan
    return env.get_template(TEMPLATE).render(
        s=summary, placed=placed,
        stacks=stacks if stacks is not None else stacks_uri(summary),
        causes=_causes(summary), floorplan=floorplan,
        analyses=pictures,
        restart=_restart(summary))


def between_pods(design: dict[str, Any]) -> str:
    """The ratio between a design's pods as wired, and the one asked for where they
    differ (a pod's uplinks round up): e.g. "2.67:1 between pods (4:1 asked)"."""
    wired, asked = design["oversubscription"], design["oversubscription_requested"]
    text = f"{wired:.3g}:1 between pods"
    return text if abs(wired - asked) <= 1e-9 * asked else f"{text} ({asked:g}:1 asked)"


def _png_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def found_pictures(folder: Path) -> list[dict[str, str]]:
    """PNG pictures in ``folder`` and up to PICTURE_DEPTH levels below, sorted by path,
    each with its data URI."""
    out = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.rglob("*.png")):
        rel = path.relative_to(folder)
        if len(rel.parts) > PICTURE_DEPTH or any(p.startswith(".") for p in rel.parts):
            continue
        out.append({"name": str(rel), "uri": _png_uri(path)})
    return out


def _num(x: Any, digits: int = 0) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    return f"{x:,.{digits}f}"


def _usd(x: float) -> str:
    """$1.234B / $12.3M / $1,234."""
    if abs(x) >= 1e9:
        return f"${x / 1e9:,.3f}B"
    if abs(x) >= 1e6:
        return f"${x / 1e6:,.1f}M"
    return f"${x:,.0f}"


def _causes(summary: dict[str, Any]) -> list[tuple[str, float]]:
    rel = summary.get("throughput", {}).get("reliability", {})
    causes = rel.get("interruptions_per_day_by_cause", {})
    return sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))


def _restart(summary: dict[str, Any]) -> list[tuple[str, float]]:
    rel = summary.get("throughput", {}).get("reliability", {})
    return list(rel.get("restart_breakdown_s", {}).items())


def stack_parts(summary: dict[str, Any]) -> tuple[list[tuple[str, float]],
                                                  list[tuple[str, float]]]:
    """Capex [USD] and critical IT power [W] by BOM category, with the facility build
    and the non-server IT share; each sums to the summary's capex and IT power."""
    cost: dict[str, float] = {}
    power: dict[str, float] = {}
    for line in summary["bom"]:
        cost[line["category"]] = cost.get(line["category"], 0.0) + line["cost_usd"]
        power[line["category"]] = power.get(line["category"], 0.0) + line["power_w"]
    p = summary["power"]
    capex = sorted(cost.items(), key=lambda kv: -kv[1]) + facility_parts(summary)
    watts = sorted(((k, v) for k, v in power.items() if v > 0), key=lambda kv: -kv[1])
    watts.append(("non-server IT", p["it_mw"] * 1e6 - sum(power.values())))
    return capex, watts


def facility_parts(summary: dict[str, Any]) -> list[tuple[str, float]]:
    """The facility build [USD] in electrical, cooling and shell (facility_labels)."""
    built = summary["design"].get("facility")
    if not built:
        return [("facility build", summary["cost"]["facility_capex_usd"])]
    return list(zip(facility_labels(built["redundancy"], built["cooling"]),
                    (built["electrical_usd"], built["cooling_usd"], built["shell_usd"]),
                    strict=True))


def facility_labels(redundancy: str, cooling: str) -> tuple[str, str, str]:
    """Labels of the electrical, cooling and shell parts: the level and technology when
    built from parts; in the per-MW shortcut, the build figure's sourced shares."""
    if cooling == SHORTCUT:
        return ("facility electrical ($/MW share)", "facility cooling ($/MW share)",
                "facility shell and site ($/MW share)")
    return (f"facility electrical ({redundancy})", f"facility cooling ({cooling})",
            "facility shell and support space")


def stacks_uri(summary: dict[str, Any]) -> str | None:
    """The cost and power stacks (:func:`stacks_figure`) as an SVG data URI; None
    without a BOM."""
    return _svg_uri(stacks_figure(summary)) if "bom" in summary else None


def stacks_figure(summary: dict[str, Any]):
    """Two stacked horizontal bars: capex by category [$B] and critical IT by category
    [MW]."""
    from solver.floorplan import import_pyplot

    plt = import_pyplot()
    capex, watts = stack_parts(summary)
    fig, axes = plt.subplots(2, 1, figsize=(9, 3.4))
    colours = plt.get_cmap("tab20").colors
    for ax, parts, scale, unit in ((axes[0], capex, 1e9, "capex [$B]"),
                                   (axes[1], watts, 1e6, "critical IT [MW]")):
        left = 0.0
        total = sum(v for _, v in parts) / scale
        for i, (name, value) in enumerate(parts):
            width = value / scale
            ax.barh(0, width, left=left, color=colours[i % len(colours)], label=name)
            if width > 0.1 * total:
                ax.text(left + width / 2, 0, f"{name}\n{width:,.2f}", ha="center",
                        va="center", fontsize=7)
            left += width
        ax.set_yticks([])
        ax.set_xlim(0, total * 1.001)
        ax.set_xlabel(f"{unit}, total {total:,.3f}", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6, ncol=len(parts), loc="upper center", bbox_to_anchor=(0.5, 1.4),
                  frameon=False)
    fig.tight_layout()
    return fig


def _svg_uri(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
