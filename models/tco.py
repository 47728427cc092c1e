"""Full cost of ownership per year, per GPU-hour and per million effective tokens.

Capital is annualised with the capital recovery factor at cost of capital r over n years,
  CRF(r, n) = r (1 + r)^n / ((1 + r)^n - 1)      (1 / n when r = 0),
equipment over the TCO horizon (its depreciation years), the facility over its own life.
  annual = CRF(r, n_eq) E + CRF(r, n_fac) F + energy + s E + w G + h P_it[MW]
with E equipment and F facility capex [USD], energy the electricity of a year [USD],
s support/maintenance per year as a fraction of equipment, w software per GPU-year, G
GPUs bought (spares included), h operations staff per MW-year.
  usd_per_gpu_hour = annual / (G x 8760)
  usd_per_million_tokens = annual / (T_eff x 3600 x 8760) x 1e6    (T_eff effective tokens/s)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

HOURS_PER_YEAR = 8760.0


def capital_recovery_factor(rate: float, years: float) -> float:
    """Share of a capital sum paid each year to repay it with interest over `years`."""
    if rate == 0:
        return 1.0 / years
    growth = (1.0 + rate) ** years
    return rate * growth / (growth - 1.0)


@dataclass(frozen=True)
class AnnualCost:
    equipment_capital_usd: float
    facility_capital_usd: float
    energy_usd: float
    support_usd: float
    software_usd: float
    staff_usd: float
    gpus: int
    effective_tokens_per_s: float

    @property
    def total_usd(self) -> float:
        return (self.equipment_capital_usd + self.facility_capital_usd + self.energy_usd
                + self.support_usd + self.software_usd + self.staff_usd)

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.total_usd / (self.gpus * HOURS_PER_YEAR)

    @property
    def usd_per_million_tokens(self) -> float:
        if self.effective_tokens_per_s <= 0:
            return float("inf")
        return self.total_usd / (self.effective_tokens_per_s * 3600 * HOURS_PER_YEAR) * 1e6

    def summary(self) -> dict[str, Any]:
        return {"usd_per_gpu_hour": self.usd_per_gpu_hour,
                "usd_per_million_tokens": self.usd_per_million_tokens,
                "annual_cost_usd": self.total_usd,
                "annual_cost_breakdown_usd": {
                    "equipment_capital": self.equipment_capital_usd,
                    "facility_capital": self.facility_capital_usd,
                    "energy": self.energy_usd, "support": self.support_usd,
                    "software": self.software_usd, "staff": self.staff_usd}}


def annual_cost(fac: Any, years: int, equipment_usd: float, facility_usd: float,
                energy_usd_per_year: float, gpus: int, it_w: float,
                effective_tokens_per_s: float) -> AnnualCost:
    """The year's cost of a design (module docstring); `fac` carries cost_of_capital,
    facility_life_years, support_fraction_per_year, software_usd_per_gpu_year and
    staff_usd_per_mw_year."""
    r = fac.cost_of_capital
    return AnnualCost(
        equipment_capital_usd=capital_recovery_factor(r, years) * equipment_usd,
        facility_capital_usd=capital_recovery_factor(r, fac.facility_life_years) * facility_usd,
        energy_usd=energy_usd_per_year,
        support_usd=fac.support_fraction_per_year * equipment_usd,
        software_usd=fac.software_usd_per_gpu_year * gpus,
        staff_usd=fac.staff_usd_per_mw_year * it_w / 1e6,
        gpus=gpus, effective_tokens_per_s=effective_tokens_per_s)
