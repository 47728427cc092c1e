"""Files and terminal view of a phased build-out: design.json, bom_by_period.csv,
cash_flow.csv, timeline.png (capacity, power and spend per period by GPU generation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from solver.outputs import output_set

PHASED_FILES = ("design.json", "bom_by_period.csv", "cash_flow.csv", "timeline.png")
"""The files of a phased solve's set."""


def by_generation(periods: list[dict[str, Any]], field: str) -> dict[str, list[float]]:
    """Per GPU system, the clusters' `field` in each period (0 where it has none)."""
    gpus = sorted({c["gpu"] for p in periods for c in p["clusters"]})
    return {g: [sum(c[field] for c in p["clusters"] if c["gpu"] == g) for p in periods]
            for g in gpus}


def timeline_png(summary: dict[str, Any], path: Path) -> None:
    """Three stacked-bar panels per period: GPUs operating (and owned, outlined),
    critical IT power against the energised power, capital spent against the budget."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    periods = summary["periods"]
    names = [p["name"] for p in periods]
    x = list(range(len(periods)))
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    colours = plt.get_cmap("tab10")

    def stacked(ax, series: dict[str, list[float]], scale: float, **kw) -> None:
        bottom = [0.0] * len(x)
        for i, (gpu, values) in enumerate(series.items()):
            vals = [v / scale for v in values]
            ax.bar(x, vals, bottom=bottom, color=colours(i), label=gpu, **kw)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]

    stacked(axes[0], by_generation(periods, "gpus_operating"), 1e3)
    owned = [sum(c["gpus_owned"] for c in p["clusters"]) / 1e3 for p in periods]
    axes[0].plot(x, owned, "k_", markersize=30, label="owned (incl. decommissioned)")
    axes[0].set_ylabel("GPUs operating [thousands]")
    axes[0].set_title("Capacity by generation")

    power = by_generation(periods, "it_mw")
    stacked(axes[1], power, 1.0)
    axes[1].step(x, [p["energised_mw"] for p in periods], "k--", where="mid",
                 label="energised")
    axes[1].set_ylabel("critical IT [MW]")
    axes[1].set_title("Critical IT power")

    spend = {g: [0.0] * len(x) for g in power}
    for t, p in enumerate(periods):
        for c in p["clusters"]:
            spend[c["gpu"]][t] += c["spend_usd"]
    spend["facility"] = [p["spend_usd"]["facility"] for p in periods]
    stacked(axes[2], spend, 1e9)
    axes[2].plot(x, [p["budget_usd"] / 1e9 for p in periods], "k_", markersize=30,
                 label="budget")
    axes[2].set_ylabel("capital spent [$B]")
    axes[2].set_title("Spend per period")
    for ax in axes:
        ax.set_xticks(x, names, rotation=30)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.3)  # room for the legend above the bars
        ax.legend(fontsize=8, loc="upper left", ncol=2)
    tokens, gap = summary["totals"]["tokens"], summary["solver"]["gap"]
    fig.suptitle(f"{summary['instance']}: {tokens / 1e12:,.0f}T effective tokens by the "
                 f"horizon, ${summary['totals']['spend_usd'] / 1e9:,.2f}B spent "
                 f"({summary['status']}, proven gap "
                 f"{'n/a' if gap is None else f'{gap:.1%}'}, verified={summary['verified']})")
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write_phased_outputs(result, out_dir: Path) -> list[Path]:
    """design.json (the --json document), bom_by_period.csv, cash_flow.csv, timeline.png,
    as one set (solver.outputs.output_set)."""
    summary = result.to_dict()
    with output_set(out_dir, replaces=PHASED_FILES) as stage:
        (stage / "design.json").write_text(json.dumps(summary, indent=2, default=str) + "\n",
                                           encoding="utf-8")
        result.tables["bom"].to_csv(stage / "bom_by_period.csv", index=False)
        result.tables["cash_flow"].to_csv(stage / "cash_flow.csv", index=False)
        timeline_png(summary, stage / "timeline.png")
    return [out_dir / name for name in PHASED_FILES]


def render_phased(summary: dict[str, Any], console) -> None:
    """A table of the periods on the terminal."""
    head = Table(title=f"clusterplan phased build-out - {summary['instance']} "
                       f"({summary['status']}, verified={summary['verified']})")
    for col in ("period", "energised MW", "IT MW", "spend $M", "budget $M", "GPUs by system "
                "(operating/owned)", "eff. tokens/s", "cum. tokens"):
        head.add_column(col, justify="left" if col in ("period",) or "GPUs" in col
                        else "right")
    for p in summary["periods"]:
        gpus = ", ".join(f"{c['gpu']} {c['gpus_operating']:,}/{c['gpus_owned']:,}"
                         for c in p["clusters"])
        head.add_row(p["name"], f"{p['energised_mw']:.0f}", f"{p['it_mw']:.1f}",
                     f"{p['spend_usd']['total'] / 1e6:,.0f}", f"{p['budget_usd'] / 1e6:,.0f}",
                     gpus, f"{p['effective_tokens_per_s'] / 1e6:,.2f}M",
                     f"{p['cumulative_tokens'] / 1e12:,.1f}T")
    console.print(head)
    s, t = summary["solver"], summary["totals"]
    gap = f"{s['gap']:.2%}" if s["gap"] is not None else "n/a"
    console.print(f"{t['tokens'] / 1e12:,.1f}T effective tokens ({t['flops']:.3g} FLOPs) by the "
                  f"horizon for ${t['spend_usd'] / 1e9:,.3f}B; objective "
                  f"{summary['objective']['name']} = {summary['objective']['value']:.4g}")
    stop = ("deterministic" if s["deterministic"]
            else "stopped by the wall-clock limit: NOT reproducible")
    console.print(f"HiGHS {s['termination']} (proven gap {gap}, target {s['gap_target']:g}, "
                  f"{stop}) in {s['milp_runtime_s']:.2f} s; whole solve "
                  f"{s['runtime_s']:.2f} s; every period verified by the independent checker: "
                  f"{summary['verified']}")
