"""floorplan.png (solver.floorplan): the colour bar's scale and the titles' layout, checked
on the drawn figure (a spy on savefig keeps it)."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def space_bound_figure(tmp_path_factory):
    """tiny/space-bound placed and drawn: one deep hall (a ~15 in tall figure), all 24
    compute racks at 43.307 kW. The figure as saved, drawn."""
    result = solve(load_instance(INSTANCES_DIR / "tiny" / "space-bound.toml"), place=True)
    kw = {round(r.power_w / 1e3, 6) for r in result.placement.racks if r.role == "compute"}
    assert kw == {43.307}
    saved: list[Figure] = []
    original = Figure.savefig

    def spy(fig, *args, **kwargs):
        saved.append(fig)
        return original(fig, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Figure, "savefig", spy)
        floorplan_png(result.placement, tmp_path_factory.mktemp("plan") / "floorplan.png")
    (fig,) = saved
    FigureCanvasAgg(fig).draw()  # pyplot closed it: a canvas to lay it out again
    return fig


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
