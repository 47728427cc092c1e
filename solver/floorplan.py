"""floorplan.png: a placed layout drawn to metric scale, for planners to pin on the wall.

One panel per building, halls outlined at their real coordinates (metres in the
building's frame), every rack a rectangle of ``rack_pitch_m`` x 1.2 m at its position,
rows labelled, the aisles between rows left blank. Compute racks are coloured by power
(colour bar in kW), network racks by switch tier; compute racks that also hold the
block's leaf switches (middle-of-rack) carry a black dot. The longest cable runs are
drawn as lines and listed; links between buildings run the site's
``between_buildings_m``. A scale bar in metres on every panel.

Racks are drawn as one PolyCollection per panel (thousands of racks in well under a
second; one patch each took ~9 s for the 100k-GPU campus).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np

from solver.placement import PlacementResult, Rack

RACK_DEPTH_M = 1.2
"""Depth of a rack drawn on the plan [m] (a 1200 mm rack; the rest of the row pitch is
the hot and cold aisles)."""
ROLE_COLOURS = {"leaf": "#1f77b4", "spine": "#2ca02c", "core": "#9467bd", "super": "#8c564b",
                "hyper": "#e377c2", "apex": "#7f7f7f", "support": "#17becf"}
ROLE_LABELS = {"support": "support rack (front-end, storage, control plane)"}
LONGEST_LINKS = 5
"""Cable runs drawn and listed (the longest first)."""


def _rack_boxes(xy: np.ndarray, width: np.ndarray, transpose: bool) -> np.ndarray:
    """Corners (N, 4, 2) of racks whose position centres are ``xy`` (N, 2) in the building
    frame, ``width`` (N,) along the row and RACK_DEPTH_M across, in plot coordinates (x
    along the row, y across rows; swapped when ``transpose``)."""
    dx = np.array([-0.5, 0.5, 0.5, -0.5])[None, :] * width[:, None]
    dy = np.array([-0.5, -0.5, 0.5, 0.5])[None, :] * RACK_DEPTH_M
    boxes = np.stack([xy[:, :1] + dx, xy[:, 1:] + np.broadcast_to(dy, dx.shape)], axis=2)
    return boxes[:, :, ::-1] if transpose else boxes


def import_pyplot():
    """matplotlib.pyplot on the Agg backend (no display), imported on first use: ~0.4 s
    that a command drawing nothing does not pay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def floorplan_png(result: PlacementResult, path: str | Path) -> None:
    """Draw ``result`` (a placed layout) to ``path`` as PNG (module doc)."""
    plt = import_pyplot()
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.colors import ListedColormap, Normalize, to_rgba
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import ScalarFormatter
    from mpl_toolkits.axes_grid1.anchored_artists import AnchoredSizeBar

    halls = result.inputs.halls
    buildings = sorted({h.building for h in halls}, key=[h.building for h in halls].index)
    extent = {}
    for b in buildings:
        hs = [h.hall for h in halls if h.building == b]
        extent[b] = (max(h.origin_m[0] + h.positions_per_row * h.rack_pitch_m for h in hs),
                     max(h.origin_m[1] + h.rows * h.row_pitch_m for h in hs))
    # long side horizontal: halls deeper (rows) than wide are drawn with rows as columns
    transpose = sum(e[1] for e in extent.values()) > sum(e[0] for e in extent.values())
    span = max(max(e) for e in extent.values())
    depth = [min(e) for e in extent.values()]
    width_in = 15.0
    heights = [max(1.2, width_in * d / span) + 0.6 for d in depth]
    # a fixed layout (constrained layout would draw every text twice): title 0.55 in,
    # the panels, colour bar and legend 1.1 in
    height_in = sum(heights) + 1.65
    fig, axes = plt.subplots(len(buildings), 1, squeeze=False,
                             figsize=(width_in, height_in),
                             gridspec_kw={"height_ratios": heights, "hspace": 0.35,
                                          "top": 1 - 0.55 / height_in,
                                          "bottom": 1.1 / height_in, "left": 0.035,
                                          "right": 0.99})
    compute_kw = [r.power_w / 1e3 for r in result.racks if r.role == "compute"] or [0.0]
    low, high, ticks = power_scale(min(compute_kw), max(compute_kw))
    norm = Normalize(vmin=low, vmax=high)
    # the bar shows exactly the colours the racks get (the palest 15% left out)
    cmap = ListedColormap(plt.get_cmap("YlOrRd")(np.linspace(0.15, 1.0, 256)))
    by_building: dict[str, list[Rack]] = defaultdict(list)
    for r in result.racks:
        by_building[r.position.building].append(r)
    geo = {h.key: h for h in halls}
    # parsed once per role, not once per rack (to_rgba re-parses each call: ~0.3 s)
    role_rgba = {r.role: to_rgba(ROLE_COLOURS.get(r.role, "black")) for r in result.racks}
    longest = sorted(result.runs, key=lambda c: (-c.length_m, c.link_class, c.a, c.b))
    where = {r.id: r.position for r in result.racks}
    between = result.inputs.inputs.site.cable_lengths.between_buildings_m
    for ax, b in zip(axes[:, 0], buildings, strict=True):
        racks = by_building[b]
        polys = _rack_boxes(
            np.array([(r.position.x_m, r.position.y_m) for r in racks]).reshape(-1, 2),
            np.array([0.9 * geo[f"{b}/{r.position.hall}"].hall.rack_pitch_m for r in racks]),
            transpose)
        kw = np.array([r.power_w / 1e3 for r in racks])
        faces = cmap(norm(kw))
        for i, r in enumerate(racks):
            if r.role != "compute":
                faces[i] = role_rgba[r.role]
        # free positions, faint
        taken = {(r.position.hall, r.position.row, r.position.slot) for r in racks}
        free_at = [(h.position(row, slot), h.hall.rack_pitch_m)
                   for h in halls if h.building == b
                   for row in range(h.hall.rows) for slot in range(h.hall.positions_per_row)
                   if (h.hall.name, row, slot) not in taken]
        free = _rack_boxes(np.array([(p.x_m, p.y_m) for p, _ in free_at]).reshape(-1, 2),
                           np.array([0.9 * w for _, w in free_at]), transpose)
        ax.add_collection(PolyCollection(free, facecolors="#ececec", edgecolors="none"))
        ax.add_collection(PolyCollection(polys, facecolors=faces, edgecolors="none"))
        mor = [r.position for r in racks if r.role == "compute" and r.switches]
        if mor:
            pts = np.array([(p.x_m, p.y_m) for p in mor])
            pts = pts[:, ::-1] if transpose else pts
            ax.scatter(pts[:, 0], pts[:, 1], s=3, c="black", marker="o", linewidths=0,
                       zorder=3)
        for h in (g for g in halls if g.building == b):
            _hall_outline(ax, h, transpose, Rectangle)
        _gaps(ax, [g for g in halls if g.building == b], transpose)
        segs, labels = [], []
        for run in longest:
            pa, pb = where[run.a], where[run.b]
            if pa.building == b and pb.building == b and len(segs) < LONGEST_LINKS:
                seg = [(pa.x_m, pa.y_m), (pb.x_m, pb.y_m)]
                segs.append([s[::-1] for s in seg] if transpose else seg)
                labels.append(f"{run.length_m:,.0f} m {run.link_class} ({run.medium})")
        if segs:
            ax.add_collection(LineCollection(segs, colors="#0050a0", linewidths=1.0,
                                             linestyles="--", zorder=4))
            for i, seg in enumerate(segs, start=1):
                ax.annotate(str(i), seg[1], fontsize=6, color="#0050a0", zorder=5,
                            xytext=(2, 2 + 6 * (i - 1)), textcoords="offset points")
            ax.set_title("longest runs: " + "; ".join(
                f"{i} {t}" for i, t in enumerate(labels, start=1)), loc="right",
                fontsize=6, color="#0050a0")
        w, d = extent[b]
        x0, x1, y0, y1 = -3, (d if transpose else w) + 3, -6, (w if transpose else d) + 6
        # the panel keeps its full width: x spans what fills it at the halls' scale (an
        # axes shrunk to the halls' aspect put its title over the runs' caption)
        slot = ax.get_position(original=True)
        grow = max(0.0, (y1 - y0) * slot.width * width_in / (slot.height * height_in)
                   - (x1 - x0)) / 2
        ax.set_xlim(x0 - grow, x1 + grow)
        ax.set_ylim(y1, y0)
        ax.set_aspect("equal")
        ax.set_title(f"building {b}: {len(racks):,} racks, {kw.sum() / 1e3:,.1f} MW in racks",
                     fontsize=9, loc="left")
        ax.tick_params(labelsize=6)
        bar = _round_length(span / 8)
        ax.add_artist(AnchoredSizeBar(ax.transData, bar, f"{bar:g} m", "lower right",
                                      pad=0.3, frameon=True, size_vertical=0.6,
                                      fontproperties={"size": 7}))
    cax = fig.add_axes((0.3, 0.62 / height_in, 0.4, 0.12 / height_in))
    cbar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax,
                        orientation="horizontal")
    cbar.formatter = ScalarFormatter(useOffset=False)  # no "1e-7+4.3307e1" offset
    if ticks is not None:
        cbar.set_ticks(ticks, labels=[f"{t:,.1f}" for t in ticks])
    cbar.set_label("compute rack power [kW]" + (
        ": every compute rack draws the same" if ticks is not None else ""), fontsize=8)
    cbar.ax.tick_params(labelsize=7)
    roles = sorted({r.role for r in result.racks} - {"compute"})
    legend = [Patch(color=ROLE_COLOURS.get(x, "black"), label=ROLE_LABELS.get(
        x, f"{x} switch rack")) for x in roles]
    legend += [Patch(color="#ececec", label="free position")]
    handles = legend + [plt.Line2D([], [], marker="o", ls="", color="black", markersize=3,
                                   label="leaf switches inside the compute rack")]
    handles += [plt.Line2D([], [], ls="--", color="#0050a0",
                           label=f"longest runs in a building (top {LONGEST_LINKS})")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7,
               frameon=False, bbox_to_anchor=(0.5, 0.0))
    s = result.summary
    cross = [r for r in longest if where[r.a].building != where[r.b].building]
    note = (f"; {sum(r.count for r in cross):,} links between buildings, routed "
            f"{between:,.0f} m + drops" if cross else "")
    # 0.08 in from the top edge, whatever the figure's height, clear of the first
    # panel's titles (which start 0.55 in down): at suptitle's default y = 0.98 a tall
    # figure (one deep hall, ~15 in) put it over them
    halls_used = len(s["halls_used"])
    fig.suptitle(f"{result.inputs.inputs.name}: {s['racks_total']:,} racks in "
                 f"{halls_used} hall{'s' * (halls_used != 1)}, longest link "
                 f"{s['max_link_m']:,.0f} m{note}",
                 fontsize=10, x=0.01, y=1 - 0.08 / height_in, ha="left", va="top")
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)


SAME_POWER_KW = 0.05
"""Compute racks whose powers span less than this draw "the same" on the colour bar [kW]
(below the bar's 0.1 kW labels)."""


def power_scale(low_kw: float, high_kw: float) -> tuple[float, float, list[float] | None]:
    """The colour bar's range [kW] for compute racks drawing ``low_kw``..``high_kw``, and
    its ticks: when they all draw the same (within SAME_POWER_KW), a range of 1 kW
    around that value with the one value as its only tick; else the span itself and
    None (matplotlib's ticks)."""
    if high_kw - low_kw < SAME_POWER_KW:
        mid = (low_kw + high_kw) / 2
        return mid - 0.5, mid + 0.5, [mid]
    return low_kw, high_kw, None


def _round_length(x: float) -> float:
    """The largest 1, 2 or 5 x 10^k not above ``x`` (a scale bar's length) [m]."""
    k = 10 ** np.floor(np.log10(max(x, 1.0)))
    return float(max(m * k for m in (1, 2, 5) if m * k <= max(x, 1.0)))


def _hall_outline(ax, h, transpose: bool, rectangle) -> None:
    """The hall's walls (one position pitch around its racks), its name and row labels."""
    hall = h.hall
    x0, y0 = hall.origin_m
    w = hall.positions_per_row * hall.rack_pitch_m
    d = hall.rows * hall.row_pitch_m
    x, y = x0 - hall.rack_pitch_m, y0 - hall.row_pitch_m / 2
    w, d = w + hall.rack_pitch_m, d
    xy, size = ((y, x), (d, w)) if transpose else ((x, y), (w, d))
    ax.add_patch(rectangle(xy, *size, fill=False, ec="#333333", lw=0.8))
    ax.text(xy[0], xy[1] + size[1] + 0.5, f"{hall.name} ({hall.cooling}, "
            f"{hall.hall_cap_kw / 1e3:,.1f} MW, aisles {hall.row_pitch_m - RACK_DEPTH_M:g} m)",
            fontsize=6, va="top")
    step = max(1, hall.rows // 12)
    for row in range(0, hall.rows, step):
        p = h.position(row, 0)
        label = f"R{row}" + (" net" if row in h.network_rows else "")
        at = (p.y_m, x - 0.3) if transpose else (x - 0.3, p.y_m)
        ax.text(*at, label, fontsize=4.5, ha="center" if transpose else "right",
                va="bottom" if transpose else "center", rotation=90 if transpose else 0)


def _gaps(ax, halls, transpose: bool) -> None:
    """Distance between neighbouring halls of a building along the long axis [m]."""
    hs = sorted(halls, key=lambda h: h.hall.origin_m[1] if transpose else h.hall.origin_m[0])
    for a, b in zip(hs, hs[1:], strict=False):
        if transpose:
            end = a.hall.origin_m[1] + (a.hall.rows - 0.5) * a.hall.row_pitch_m
            start = b.hall.origin_m[1] - 0.5 * b.hall.row_pitch_m
        else:
            end = a.hall.origin_m[0] + a.hall.positions_per_row * a.hall.rack_pitch_m
            start = b.hall.origin_m[0] - b.hall.rack_pitch_m
        if start > end:
            ax.annotate("", (start, -2), (end, -2),
                        arrowprops={"arrowstyle": "<->", "lw": 0.6})
            ax.text((start + end) / 2, -2.5, f"{start - end:,.1f} m", fontsize=6,
                    ha="center", va="bottom")
