"""The facility from parts: electrical chain by redundancy level, cooling by technology,
shell with support space, and the PUE they imply (facility_cost_mode = 'parts').

For redundancy r and cooling t, a design of P_it W critical IT in R racks:
  electrical  E = e_r P_it / 1e6                     [USD]
  cooling     C = c_t P_it / 1e6                     [USD]
  shell       S = s P_it / 1e6 + w a R               [USD]  (site, core shell and plant/
                                                             support space per MW of IT;
                                                             white space a m2 per rack
                                                             fitted out at w USD/m2)
  PUE         = 1 + l_r + o_t + o_other             (electrical losses, cooling energy,
                                                     other loads, fractions of IT)
The plant and support space (electrical rooms, cooling plant, loading, offices) is sized
by the power it serves, not by the racks, so only the data hall's white space shrinks
when denser cooling puts fewer racks on the floor.
Cooling t also sets the rack power density: every hall position takes cooling_max_rack_kw_t
(solver.prepare.cooled_halls), so the one space model (models.space) puts more nodes in a
rack, and fewer racks on the floor, under denser cooling; R is its count.
The 'per-mw' shortcut: build_usd_per_mw x P_it / 1e6 and the catalog's pue, split into
electrical, cooling and shell by the sourced shares build_shares (they sum to 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SHORTCUT = "per-mw"
"""Redundancy and cooling label of a design costed by the $/MW shortcut."""
BUILD_PARTS = ("electrical", "cooling", "shell")
"""The facility's parts, in FacilityCost's order (the shortcut's build_shares keys)."""


RACK_CATEGORIES = ("rack", "rack-support")
"""BOM categories of the racks the shell houses (compute and network, support)."""
LIQUID = "dlc"
"""The cooling technology that cools a rack by liquid (liquid-cooled systems need it)."""


def hall_cooling(cooling: str) -> str:
    """How a hall with ``cooling`` cools its racks: 'liquid' under direct liquid cooling,
    else 'air' (a rear-door heat exchanger cools the rack's exhaust air)."""
    return "liquid" if cooling == LIQUID else "air"


@dataclass(frozen=True)
class FacilityCost:
    redundancy: str
    cooling: str
    electrical_usd: float
    cooling_usd: float
    shell_usd: float
    pue: float
    site_availability: float | None
    """None in the shortcut mode (not modelled)."""

    @property
    def capex_usd(self) -> float:
        return self.electrical_usd + self.cooling_usd + self.shell_usd

    def summary(self) -> dict[str, Any]:
        return {"redundancy": self.redundancy, "cooling": self.cooling, "pue": self.pue,
                "site_availability": self.site_availability,
                "electrical_usd": self.electrical_usd, "cooling_usd": self.cooling_usd,
                "shell_usd": self.shell_usd, "capex_usd": self.capex_usd}


def pue(fac: Any, redundancy: str, cooling: str) -> float:
    if cooling == SHORTCUT:
        return fac.pue
    return (1.0 + fac.electrical_loss_fraction[redundancy]
            + fac.cooling_overhead_fraction[cooling] + fac.other_overhead_fraction)


def facility_cost(fac: Any, redundancy: str, cooling: str, it_w: float,
                  racks: float) -> FacilityCost:
    """Electrical, cooling and shell cost and PUE of `it_w` W of critical IT in `racks`
    racks (module docstring)."""
    mw = it_w / 1e6
    if cooling == SHORTCUT:
        build = fac.build_usd_per_mw * mw
        return FacilityCost(SHORTCUT, SHORTCUT, *(build * fac.build_shares[part]
                                                  for part in BUILD_PARTS),
                            fac.pue, None)
    return FacilityCost(
        redundancy, cooling, fac.electrical_usd_per_mw[redundancy] * mw,
        fac.cooling_usd_per_mw[cooling] * mw,
        fac.shell_usd_per_mw * mw
        + fac.white_space_usd_per_m2 * fac.white_space_m2_per_rack * racks,
        pue(fac, redundancy, cooling), fac.site_availability[redundancy])
