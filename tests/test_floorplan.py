"""floorplan.png (solver.floorplan): the colour bar's scale and the titles' layout, checked
on the drawn figure (a spy on savefig keeps it)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from solver import load_instance, solve
from solver.floorplan import floorplan_png, power_scale
from solver.loading import INSTANCES_DIR


def test_racks_drawing_the_same_power_get_one_value_on_the_scale():
    """By hand: 43.307 kW everywhere (space-bound's compute racks, 4 x 10,400 W nodes and
    a 1,707 W leaf) is the bar's only tick, in a 1 kW range around it; 30-41 kW keeps
    its span and matplotlib's ticks. Racks 0.04 kW apart still count as the same."""
    assert power_scale(43.307, 43.307) == (42.807, 43.807, [43.307])
    assert power_scale(43.30, 43.34) == pytest.approx((42.82, 43.82, [43.32]))
    assert power_scale(30.0, 41.0) == (30.0, 41.0, None)


def drawn(placement, folder) -> Figure:
    """The floor plan of ``placement`` as saved, drawn."""
    saved: list[Figure] = []
    original = Figure.savefig

    def spy(fig, *args, **kwargs):
        saved.append(fig)
        return original(fig, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", spy)
        floorplan_png(placement, folder / "floorplan.png")
    (fig,) = saved
    FigureCanvasAgg(fig).draw()  # pyplot closed it: a canvas to lay it out again
    return fig


@pytest.fixture(scope="module")
def space_bound_figure(tmp_path_factory):
    """tiny/space-bound placed and drawn: one deep hall (a ~15 in tall figure), all 24
    compute racks at 43.307 kW. The figure as saved, drawn."""
    result = solve(load_instance(INSTANCES_DIR / "tiny" / "space-bound.toml"), place=True)
    kw = {round(r.power_w / 1e3, 6) for r in result.placement.racks if r.role == "compute"}
    assert kw == {43.307}
    return drawn(result.placement, tmp_path_factory.mktemp("plan"))


def test_one_rack_power_shows_as_one_value_without_an_offset(space_bound_figure):
    """The bar read 2 ... 10 with the offset "1e-7+4.3307e1"; now its one tick is 43.3."""
    cbar = next(ax for ax in space_bound_figure.axes
                if ax.get_xlabel().startswith("compute rack power [kW]"))
    labels = [t.get_text() for t in cbar.get_xticklabels() if t.get_text()]
    assert labels == ["43.3"]
    assert cbar.xaxis.get_offset_text().get_text() == ""
    assert "every compute rack draws the same" in cbar.get_xlabel()


def test_the_figure_title_clears_the_buildings_title(space_bound_figure):
    """On the tall space-bound figure the suptitle (at y = 0.98) overlapped the panel's
    "building hall: ..." title; both are now apart, the figure's above. One hall is
    "1 hall" (it read "1 halls")."""
    fig = space_bound_figure
    renderer = fig.canvas.get_renderer()
    title_box = fig._suptitle.get_window_extent(renderer)
    panel = fig.axes[0]
    for text in (panel.title, panel._left_title, panel._right_title):
        if text.get_text():
            box = text.get_window_extent(renderer)
            assert not title_box.overlaps(box), text.get_text()
            assert title_box.y0 > box.y1
    assert fig.get_suptitle().startswith("tiny-space-bound: 26 racks in 1 hall, ")


def test_a_panels_title_clears_its_runs_caption(space_bound_figure, tmp_path):
    """Review 6, defect 7: two small buildings (tests/data/review/runner-ups-under-a-re-
    solve-hold.json) drew each panel shrunk to its halls' aspect, about half the figure's
    width, so the "building ..." title on its left ran over the blue "longest runs"
    caption on its right. Each panel now keeps the figure's width (its x range grows at
    the same scale): title and caption apart, here and on space-bound."""
    path = Path(__file__).resolve().parent / "data" / "review" / (
        "runner-ups-under-a-re-solve-hold.json")
    fig = drawn(solve(load_instance(path), place=True).placement, tmp_path)
    for figure in (fig, space_bound_figure):
        renderer = figure.canvas.get_renderer()
        panels = [ax for ax in figure.axes if ax.get_title(loc="left").startswith("building")]
        assert len(panels) == (2 if figure is fig else 1)
        for ax in panels:
            title = ax._left_title.get_window_extent(renderer)
            caption = ax._right_title.get_window_extent(renderer)
            assert ax.get_title(loc="right").startswith("longest runs: 1 ")
            assert title.x1 < caption.x0, ax.get_title(loc="left")
            assert caption.x1 <= figure.bbox.x1  # the caption is not cut at the edge
            # the same scale as before: a metre is as long across as down
            width, height = ax.get_window_extent(renderer).size
            (x0, x1), (y1, y0) = ax.get_xlim(), ax.get_ylim()
            assert width / (x1 - x0) == pytest.approx(height / (y1 - y0), rel=1e-3)
