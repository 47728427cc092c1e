"""Data of the phased build-out MILP: periods, fabric plans and their candidate ladders.

A *plan* is one configuration of models.design (GPU system, fabric option, layout, media,
recovery) at one switch-tier count: the fabric is planned for its final size, and the
cluster grows along the plan's ladder by adding scalable units, leaves, spines and pods
(the tier count never changes, so nothing is torn out). Each rung is a candidate of the
single-period model (models.design.candidates), evaluated exactly or with bounds.

A candidate bought in period t costs its equipment capex with the GPU system's node
price of period t: capex_t(k) = capex(k) + (price_t - price_base) * nodes_total(k),
since the node line is the only priced part that changes between periods.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.design.data import Candidate, DesignData
from models.design.prune import GOODPUT_TOL

SECONDS_PER_DAY = 86400.0


@dataclass(frozen=True)
class PeriodData:
    name: str
    start: str
    """ISO date the period starts."""
    days: float
    """Length of the period [days]."""
    discount: float
    """Weight of tokens trained and money spent in the period, (1 + r)^-years."""
    building_w: dict[str, float]
    """Critical IT power energised per building [W]."""
    it_power_cap_w: float
    """Campus critical IT power in the period: min(limits.it_power_mw, sum of buildings)."""
    budget_usd: float
    """Capital that may be spent in the period [USD]."""
    purchasable: frozenset[str]
    """GPU systems that may be bought in the period."""
    node_price_usd: dict[str, float]
    """Node price of each GPU system in the period [USD]."""
    demand_tokens: float
    """Effective tokens to have trained by the period's end, cumulatively (0: none)."""

    @property
    def seconds(self) -> float:
        return self.days * SECONDS_PER_DAY


@dataclass(frozen=True)
class Plan:
    key: str
    """'<configuration>#t<tiers>'."""
    config: str
    gpu: str
    tiers: int
    ladder: tuple[Candidate, ...]
    """Rungs in ascending size."""


@dataclass(frozen=True)
class PhasedData:
    design: DesignData
    """Configurations, facility figures, campus limits (the single-period model's data)."""
    plans: tuple[Plan, ...]
    periods: tuple[PeriodData, ...]
    base_node_price_usd: dict[str, float]
    """Node price the candidates' BOMs carry, per GPU system [USD]."""
    budget_total_usd: float
    """limits.budget_usd: all periods' spend together [USD]."""


def plans_of(design: DesignData) -> tuple[Plan, ...]:
    """Every configuration's ladder split by switch-tier count, sorted by key; configurations
    whose facility misses the site availability target (a constant per configuration)
    are left out."""
    by_key: dict[str, list[Candidate]] = {}
    for k in design.candidates:
        if k.site_availability < design.min_site_availability:
            continue
        by_key.setdefault(f"{k.config}#t{k.tiers}", []).append(k)
    return tuple(Plan(key, ladder[0].config, design.configs[ladder[0].config].gpu,
                      ladder[0].tiers, tuple(sorted(ladder, key=lambda k: k.nodes)))
                 for key, ladder in sorted(by_key.items()))


def node_quantity(k: Candidate) -> int:
    """Nodes bought for candidate k (training + spare)."""
    return k.nodes + k.spare_nodes


def capex_in(data: PhasedData, period: PeriodData, plan: Plan, k: Candidate) -> float:
    """Equipment capex of candidate k at the period's node price [USD]."""
    delta = period.node_price_usd[plan.gpu] - data.base_node_price_usd[plan.gpu]
    return k.equipment_capex_usd + delta * node_quantity(k)


def optimistic_tokens_per_s(k: Candidate) -> float:
    """Effective tokens/s of k, or an upper bound when k is not evaluated exactly
    (throughput upper bound x interpolated goodput x (1 + GOODPUT_TOL), as
    models.design.prune.to_refine bounds it)."""
    if k.exact:
        return k.effective_tokens_per_s
    return k.tokens_per_s_upper * k.goodput * (1 + GOODPUT_TOL)


def with_candidates(data: PhasedData, exact: dict[str, Candidate]) -> PhasedData:
    """`data` with the candidates named in `exact` (by Candidate.key) replaced."""
    plans = tuple(Plan(p.key, p.config, p.gpu, p.tiers,
                       tuple(exact.get(k.key, k) for k in p.ladder)) for p in data.plans)
    return PhasedData(data.design, plans, data.periods, data.base_node_price_usd,
                      data.budget_total_usd)
