"""Hall geometry of a design: nodes per rack, the block (scalable unit) shape, block slots
and network positions of every hall, and the longest routed length between zones.

Conservative figures keep every model decision physically valid: a leaf switch is sized
at its switch power plus every port carrying the most power-hungry medium at the link
speed; the model's length of a link between two zones is the largest routed length
between their positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from models.design.candidates import RACK_UNITS, node_power_w
from models.design.inputs import Inputs
from models.placement.geometry import Position, Routing, block_leaf_offsets, routed_length_m

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


def nodes_per_rack(inputs: Inputs, parts: FabricParts, hall: Hall) -> int:
    """``min(max_nodes_per_rack, ⌊42 U / node U⌋, ⌊rack kW / node kW⌋)``; 0 when the hall
    cannot cool the system (liquid-cooled systems need a liquid hall). A rack-scale
    system (NVL72: a 48U node) is its own rack: one per position."""
    g = parts.gpu
    if g.liquid_cooled and hall.cooling != "liquid":
        return 0
    node_w = node_power_w(parts)
    by_height = 1 if g.node_rack_units >= RACK_UNITS else RACK_UNITS // g.node_rack_units
    return max(0, min(g.max_nodes_per_rack, by_height,
                      math.floor(hall.rack_power_kw * 1e3 / node_w + 1e-9)))


def hall_geometry(building: str, hall: Hall, index: int, inputs: Inputs, parts: FabricParts,
                  su_nodes: int, leaves: int, leaf_w: float, net_rows: int) -> HallGeo:
    """Block shape, block slots and network positions of one hall.

    Leaves ride in the block's middle compute rack when its height and power allow, else
    in ``⌈leaves·U/42⌉`` leaf racks in the block's middle. The middle ``net_rows`` rows hold
    network racks; every other row takes ``min(⌊P/width⌋, ⌊row kW / block kW⌋)`` blocks."""
    npr = nodes_per_rack(inputs, parts, hall)
    sw = parts.switch
    if npr == 0:
        return HallGeo(building, hall, index, 0, 0, 0, 0, (), (), ())
    compute = math.ceil(su_nodes / npr)
    mid_nodes = min(npr, su_nodes - ((compute - 1) // 2) * npr)
    fits_inside = (mid_nodes * parts.gpu.node_rack_units + leaves * sw.rack_units <= RACK_UNITS
                   and mid_nodes * node_power_w(parts) + leaves * leaf_w
                   <= hall.rack_power_kw * 1e3)
    leaf_racks = 0 if fits_inside else math.ceil(leaves * sw.rack_units / RACK_UNITS)
    width = compute + leaf_racks
    block_w = su_nodes * node_power_w(parts) + leaves * leaf_w
    net_rows = min(net_rows, hall.rows)
    first = (hall.rows - net_rows) // 2
    rows_net = tuple(range(first, first + net_rows))
    per_row = min(hall.positions_per_row // width, math.floor(hall.row_cap_kw * 1e3 / block_w))
    slots = tuple((r, i * width) for r in range(hall.rows) if r not in rows_net
                  for i in range(max(0, per_row)))
    center = (hall.positions_per_row - 1) / 2
    net = sorted((abs(p - center), p, r) for r in rows_net
                  for p in range(hall.positions_per_row))
    geo = HallGeo(building, hall, index, npr, width, compute, leaf_racks, rows_net, slots, ())
    return HallGeo(building, hall, index, npr, width, compute, leaf_racks, rows_net, slots,
                   tuple(geo.position(r, p) for _, p, r in net))


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
