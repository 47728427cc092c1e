"""Floor-plan schema of a site: buildings -> halls -> rows -> rack positions.

A hall is a rectangle of ``rows`` parallel rows of ``positions_per_row`` rack positions.
Coordinates are metres in the building's frame: position ``p`` of row ``r`` of a hall
stands at ``x = origin_m[0] + p * rack_pitch_m``, ``y = origin_m[1] + r * row_pitch_m``.
Cables run in overhead trays: the routed length between two racks of one building is
``|dx| + |dy| + 2 * drop_m + slack_m`` (Manhattan along the trays, a vertical drop at each
end, a service loop); inside one rack it is ``in_rack_m``; between buildings it is the
site's ``cable_lengths.between_buildings_m`` plus the drops and slack
(``models.placement.geometry.routed_length_m``).

Power: each position takes at most ``rack_power_kw``; a row's busway at most
``row_power_kw``; the hall at most ``power_kw``. Cooling caps rack density: an air-cooled
hall cannot take more than :data:`AIR_COOLED_MAX_RACK_KW` per rack, and liquid-cooled
systems (NVL72) need a liquid-cooled hall.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import model_validator

from solver.schema.catalog import NonNegativeFloat, PositiveFloat, PositiveInt, Slug, StrictModel

AIR_COOLED_MAX_RACK_KW = 50.0
"""Highest rack power air cooling removes [kW]. Assumption by clusterplan after SemiAnalysis
(https://semianalysis.substack.com/p/100000-h100-clusters-power-network): air-cooled H100
racks run at ~40 kW; rear-door heat exchangers stretch air to ~50 kW, beyond that
direct-to-chip liquid cooling is needed (GB200 NVL72 ~130 kW)."""

DEFAULT_HALL_MW = 25.0
"""Largest hall generated when a building lists no halls [MW] (assumption by clusterplan:
large AI data halls are 10-30 MW)."""
DEFAULT_POSITIONS_PER_ROW = 24
"""Rack positions per row of a generated hall (assumption by clusterplan: ~14 m rows)."""
DEFAULT_SPACE_HEADROOM = 1.4
"""Generated halls have this many positions per rack the hall's power can feed at full
rack power: room for partly filled racks, network racks and aisles (assumption)."""
HALL_GAP_M = 10.0
"""Corridor between generated halls of a building [m] (assumption by clusterplan)."""


class Hall(StrictModel):
    name: Slug
    rows: PositiveInt
    positions_per_row: PositiveInt
    rack_power_kw: PositiveFloat
    """Power one rack position can take [kW]."""
    row_power_kw: PositiveFloat | None = None
    """Busway capacity of one row [kW]; default: every position at rack_power_kw."""
    power_kw: PositiveFloat | None = None
    """Critical IT power of the hall [kW]; default: every row at row_power_kw."""
    cooling: Literal["air", "liquid"] = "air"
    rack_pitch_m: PositiveFloat = 0.6
    """Centre-to-centre distance of neighbouring positions in a row (600 mm racks) [m]."""
    row_pitch_m: PositiveFloat = 3.0
    """Centre-to-centre distance of neighbouring rows (1.2 m rack + hot/cold aisles) [m]."""
    origin_m: tuple[NonNegativeFloat, NonNegativeFloat] = (0.0, 0.0)
    """Position 0 of row 0 in the building's frame [m]."""
    drop_m: NonNegativeFloat = 0.75
    """Vertical run from a port to the cable tray, per link end [m]."""
    slack_m: NonNegativeFloat = 0.5
    """Service loop per link [m]."""
    in_rack_m: PositiveFloat = 1.5
    """Routed length of a link between two ports of one rack [m]."""

    @model_validator(mode="after")
    def _cooling_caps_density(self) -> Hall:
        if self.cooling == "air" and self.rack_power_kw > AIR_COOLED_MAX_RACK_KW:
            raise ValueError(f"hall {self.name}: rack_power_kw {self.rack_power_kw:g} exceeds "
                             f"what air cooling removes ({AIR_COOLED_MAX_RACK_KW:g} kW); "
                             "set cooling = 'liquid'")
        return self

    @property
    def row_cap_kw(self) -> float:
        return self.row_power_kw or self.positions_per_row * self.rack_power_kw

    @property
    def hall_cap_kw(self) -> float:
        return self.power_kw or self.rows * self.row_cap_kw


def default_halls(it_power_mw: float, rack_power_kw: float) -> list[Hall]:
    """Halls for a building that lists none: ``⌈MW / 25⌉`` equal halls, each with
    ``⌈1.4 · hall_kw / rack_kw⌉`` positions in rows of 24 plus one row for network racks,
    stacked along y with a 10 m corridor; liquid cooling above the air limit."""
    count = math.ceil(it_power_mw / DEFAULT_HALL_MW - 1e-9)
    hall_kw = it_power_mw * 1e3 / count
    positions = math.ceil(DEFAULT_SPACE_HEADROOM * hall_kw / rack_power_kw)
    rows = math.ceil(positions / DEFAULT_POSITIONS_PER_ROW) + 1
    cooling = "air" if rack_power_kw <= AIR_COOLED_MAX_RACK_KW else "liquid"
    halls = []
    for i in range(count):
        y0 = i * ((rows - 1) * Hall.model_fields["row_pitch_m"].default + HALL_GAP_M)
        halls.append(Hall(name=f"hall-{i + 1}", rows=rows,
                          positions_per_row=DEFAULT_POSITIONS_PER_ROW,
                          rack_power_kw=rack_power_kw, power_kw=hall_kw, cooling=cooling,
                          origin_m=(0.0, y0)))
    return halls


def unique_hall_names(halls: list[Hall]) -> list[str]:
    """Duplicate hall names of one building (empty when all are unique)."""
    names = [h.name for h in halls]
    return sorted({n for n in names if names.count(n) > 1})
