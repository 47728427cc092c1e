"""Floor geometry: rack positions, routed cable lengths and the block slots of a hall.

A hall (``HallLike``) is ``rows`` rows of ``positions_per_row`` positions; position ``p`` of
row ``r`` is at ``(x0 + p·pitch, y0 + r·row_pitch)`` metres in its building's frame.
Routed length of a link between racks ``a`` and ``b`` [m]:

* same rack: ``in_rack_m``;
* same building: ``|xa − xb| + |ya − yb| + 2·drop + slack`` (Manhattan along overhead
  trays, a vertical drop at each end, a service loop);
* different buildings: ``between_buildings_m + 2·drop + slack``.

A *block* is one scalable unit: ``compute`` racks with its leaf switches, laid out in
``width`` consecutive positions of one row with its leaf rack(s) in the middle. For any
cost that does not decrease with length, the middle leaf position is optimal: the sorted
distances from the middle position to the others are pointwise no larger than from any
other position of the segment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class HallLike(Protocol):
    name: str
    rows: int
    positions_per_row: int
    rack_pitch_m: float
    row_pitch_m: float
    origin_m: tuple[float, float]
    drop_m: float
    slack_m: float
    in_rack_m: float


@dataclass(frozen=True, order=True)
class Position:
    building: str
    hall: str
    row: int
    slot: int
    """Position within the row (0-based)."""
    x_m: float
    y_m: float



@dataclass(frozen=True)
class Routing:
    """Cable routing figures shared by a pair of racks (the first rack's hall's)."""

    drop_m: float
    slack_m: float
    in_rack_m: float
    between_buildings_m: float


def routed_length_m(a: Position, b: Position, r: Routing) -> float:
    """Routed cable length between the racks at ``a`` and ``b`` [m] (module doc)."""
    if a == b:
        return r.in_rack_m
    ends = 2 * r.drop_m + r.slack_m
    if a.building != b.building:
        return r.between_buildings_m + ends
    return abs(a.x_m - b.x_m) + abs(a.y_m - b.y_m) + ends


def block_leaf_offsets(width: int, leaf_racks: int) -> tuple[int, ...]:
    """Offsets (in the block's ``width`` positions) of its leaf racks: the middle ones.

    With ``leaf_racks = 0`` the leaves ride in the middle compute rack."""
    if leaf_racks == 0:
        return ((width - 1) // 2,)
    start = (width - leaf_racks) // 2
    return tuple(range(start, start + leaf_racks))
