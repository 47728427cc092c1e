"""Hall geometry of a design: positions of the block slots and network racks of every
hall (their counts and the block shape come from the space model, models.space, which
the design stage shares), and the longest routed length between zones (the model's
length of a link between two zones is the largest routed length between their positions).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from models.design.inputs import Inputs
from models.placement.geometry import Position, Routing, block_leaf_offsets, routed_length_m
from models.space import HallSpace, blocks_per_row

Hall = Any
"""A hall of the site (solver.schema.site.Hall): rows, positions, pitches, power, cooling."""
FabricParts = Any
"""GPU system, switch, NIC, link speed and radix (solver.fabric_inputs.FabricParts)."""


@dataclass(frozen=True)
class HallGeo:
    """A hall with its building, positions, and the block/network layout rules."""

    building: str
    hall: Hall
    index: int
    nodes_per_rack: int
    width: int
    """Positions of one block (compute racks + leaf racks)."""
    compute_racks: int
    leaf_racks: int
    network_rows: tuple[int, ...]
    block_slots: tuple[tuple[int, int], ...]
    """(row, first position) of every block slot."""
    network_positions: tuple[Position, ...]
    """Network positions in fill order (alternating rows: spread over busways)."""

    @property
    def key(self) -> str:
        return f"{self.building}/{self.hall.name}"

    def position(self, row: int, slot: int) -> Position:
        x0, y0 = self.hall.origin_m
        return Position(self.building, self.hall.name, row, slot,
                        x0 + slot * self.hall.rack_pitch_m, y0 + row * self.hall.row_pitch_m)

    def leaf_positions(self, start_row: int, start: int) -> list[Position]:
        return [self.position(start_row, start + o)
                for o in block_leaf_offsets(self.width, self.leaf_racks)]


def hall_geometry(index: int, space: HallSpace) -> HallGeo:
    """Block slots and network positions of one hall from its space model
    (models.space): the middle ``network_rows`` rows hold network racks; every other row
    takes ``models.space.blocks_per_row`` blocks."""
    hall, shape, building = space.hall, space.shape, space.building
    if shape is None:
        return HallGeo(building, hall, index, 0, 0, 0, 0, (), (), ())
    first = (hall.rows - space.network_rows) // 2
    rows_net = tuple(range(first, first + space.network_rows))
    per_row = blocks_per_row(hall, shape)
    slots = tuple((r, i * shape.width) for r in range(hall.rows) if r not in rows_net
                  for i in range(per_row))
    center = (hall.positions_per_row - 1) / 2
    net = sorted((abs(p - center), p, r) for r in rows_net
                 for p in range(hall.positions_per_row))
    geo = HallGeo(building, hall, index, shape.nodes_per_rack, shape.width,
                  shape.compute_racks, shape.leaf_racks, rows_net, slots, ())
    return dataclasses.replace(geo, network_positions=tuple(geo.position(r, p)
                                                            for _, p, r in net))


def routing(geo: HallGeo, inputs: Inputs) -> Routing:
    h = geo.hall
    return Routing(h.drop_m, h.slack_m, h.in_rack_m, inputs.site.cable_lengths.between_buildings_m)


def max_length(a: list[Position], b: list[Position], r: Routing) -> float:
    """Largest routed length between any position of ``a`` and any of ``b`` (bounding
    boxes: Manhattan distance is maximised at box corners)."""
    if not a or not b:
        return 0.0
    if a[0].building != b[0].building:
        return routed_length_m(a[0], b[0], r)
    xs_a, ys_a = [p.x_m for p in a], [p.y_m for p in a]
    xs_b, ys_b = [p.x_m for p in b], [p.y_m for p in b]
    dx = max(max(xs_a) - min(xs_b), max(xs_b) - min(xs_a))
    dy = max(max(ys_a) - min(ys_b), max(ys_b) - min(ys_a))
    return max(dx, 0) + max(dy, 0) + 2 * r.drop_m + r.slack_m
