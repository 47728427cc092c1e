"""Power and cost of a design from its parts.

IT power  P_it = (sum_i q_i * p_i) * (1 + f_ns)          [W]
  q_i quantity and p_i unit power of each server/fabric part, f_ns the non-server IT
  fraction (storage, front-end, management).
Facility  P_fac = P_it * PUE;  energy E = P_fac * 8760 h   [W, Wh/yr]
Capex     C = sum_i q_i * c_i + build_usd_per_mw * P_it[MW]
Opex/yr   O = E[kWh] * price_usd_per_kwh
TCO       C + years * O
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

HOURS_PER_YEAR = 8760.0


class FacilityLike(Protocol):
    pue: float
    build_usd_per_mw: float
    electricity_usd_per_kwh: float
    non_server_it_fraction: float


@dataclass(frozen=True)
class BomLine:
    """One line of the bill of materials: `quantity` units of `item`."""

    item: str
    category: str
    quantity: float
    unit_cost_usd: float
    unit_power_w: float = 0.0

    @property
    def cost_usd(self) -> float:
        return self.quantity * self.unit_cost_usd

    @property
    def power_w(self) -> float:
        return self.quantity * self.unit_power_w


@dataclass(frozen=True)
class PowerCost:
    equipment_power_w: float
    """Servers, NICs, switches and optics [W]."""
    it_power_w: float
    facility_power_w: float
    annual_energy_kwh: float
    equipment_capex_usd: float
    facility_capex_usd: float
    annual_opex_usd: float
    years: int

    @property
    def capex_usd(self) -> float:
        return self.equipment_capex_usd + self.facility_capex_usd

    @property
    def tco_usd(self) -> float:
        return self.capex_usd + self.years * self.annual_opex_usd


def it_power_w(equipment_power_w: float, facility: FacilityLike) -> float:
    """Critical IT power: equipment plus the non-server IT share [W]."""
    return equipment_power_w * (1.0 + facility.non_server_it_fraction)


def facility_capex_usd(it_w: float, facility: FacilityLike) -> float:
    """Facility build cost, proportional to critical IT [USD]."""
    return facility.build_usd_per_mw * it_w / 1e6


def annual_opex_usd(it_w: float, facility: FacilityLike) -> float:
    """Electricity cost of one year at full load through PUE [USD/yr]."""
    return energy_cost_usd(it_w, facility.pue, facility.electricity_usd_per_kwh)


def energy_cost_usd(it_w: float, pue: float, usd_per_kwh: float) -> float:
    """E[kWh] x price for one year of `it_w` W through `pue` [USD/yr]."""
    return it_w * pue * HOURS_PER_YEAR / 1e3 * usd_per_kwh


def power_cost(lines: list[BomLine], facility: FacilityLike, years: int,
               built: Any = None) -> PowerCost:
    """Roll a bill of materials up into power, energy, capex, opex and TCO; `built` (a
    models.facility.FacilityCost) gives the facility's capex and PUE when it was built
    from parts, else `facility`'s $/MW and PUE apply."""
    equipment_w = sum(line.power_w for line in lines)
    it_w = it_power_w(equipment_w, facility)
    pue = built.pue if built is not None else facility.pue
    return PowerCost(
        equipment_power_w=equipment_w,
        it_power_w=it_w,
        facility_power_w=it_w * pue,
        annual_energy_kwh=it_w * pue * HOURS_PER_YEAR / 1e3,
        equipment_capex_usd=sum(line.cost_usd for line in lines),
        facility_capex_usd=(built.capex_usd if built is not None
                            else facility_capex_usd(it_w, facility)),
        annual_opex_usd=energy_cost_usd(it_w, pue, facility.electricity_usd_per_kwh),
        years=years,
    )
