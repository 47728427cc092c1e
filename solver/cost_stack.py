"""The cost stack of a solved design: capex by BOM category and facility part, and the
electricity over the TCO horizon, as one stacked bar (a PNG for the README or a report).

    python -m solver.cost_stack results/h100-100k/design.json results/cost-stack-h100-100k.png
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from solver.report_html import facility_parts


def cost_stack(summary: dict[str, Any]) -> list[tuple[str, float]]:
    """(term, USD) from the bottom of the stack up: BOM categories (largest first), the
    facility (by part when built from parts) and the electricity over the horizon."""
    by_cat: dict[str, float] = {}
    for line in summary["bom"]:
        by_cat[line["category"]] = by_cat.get(line["category"], 0.0) + line["cost_usd"]
    out = sorted(by_cat.items(), key=lambda kv: -kv[1]) + facility_parts(summary)
    cost = summary["cost"]
    out.append((f"electricity x {cost['tco_years']} years",
                cost["tco_years"] * cost["annual_opex_usd"]))
    return out


def write_cost_stack(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    terms = cost_stack(summary)
    fig, ax = plt.subplots(figsize=(8, 6.5))
    bottom = 0.0
    colors = plt.get_cmap("tab20").colors
    for i, (name, usd) in enumerate(terms):
        ax.bar(0, usd / 1e9, bottom=bottom, color=colors[i % len(colors)], width=0.6,
               label=f"{name}: ${usd / 1e6:,.{1 if usd < 1e7 else 0}f}M")
        bottom += usd / 1e9
    ax.set_xlim(-0.5, 2.2)
    ax.set_xticks([])
    ax.set_ylabel("USD billion")
    d, c = summary["design"], summary["cost"]
    ax.set_title(f"{summary['instance']}: {d['gpus']:,} {d['gpu']}, TCO ${c['tco_usd'] / 1e9:.2f}B "
                 f"over {c['tco_years']} years", fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], loc="center right", fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    write_cost_stack(json.loads(Path(sys.argv[1]).read_text()), Path(sys.argv[2]))
