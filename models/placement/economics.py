"""Economics of one link over the instance's years: capex, energy and failures.

Cost of a medium per link [USD] (:func:`lifetime_cost_usd`): capex
``2·price_per_end/lpm + fiber_per_link`` + energy ``2·power_per_end/lpm [W] · 8760 h ·
years · electricity [USD/kWh] / 1000 · PUE`` + failures ``λ·8760·years · (part + s·(L − r)·c)``
(:func:`failure_cost_usd`: the reliability model's per-link rate λ, replacement part, the
share s of failures that stop the job, the training hours L an interruption loses and the
cluster's cost rate c [USD/h]; 0 without the reliability model's figures). The cheapest
medium whose reach covers a link's routed length (ties: capex, id) builds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from models.design.inputs import Inputs
from models.fabric import link_price_usd
from models.power_cost import HOURS_PER_YEAR, annual_opex_usd
from models.reliability import ReliabilityRates
from models.reliability.goodput import lost_work_s
from models.reliability.rates import link_failure_rate

COST_UNITS_PER_USD = 100
"""The CP-SAT objective counts cents."""

Medium = Any
"""A catalog medium (solver.schema.Medium): kind, reach_m, price_usd_per_end,
power_w_per_end, links_per_module, fiber_usd_per_link, is_transceiver, id."""


def lost_hours_per_interruption(reliability: dict[str, Any]) -> float | None:
    """Training time one interruption costs [h]: the restart (detection, hot-spare swap,
    job start-up, checkpoint reload) plus the work lost since the last checkpoint
    (``models.reliability.goodput.lost_work_s`` of the segment ``τ + δ`` and the MTBF).
    ``reliability``: the goodput model's figures of the design (restart_s,
    checkpoint_interval_s, checkpoint_write_s, mtbf_hours); None when they are absent."""
    keys = ("restart_s", "checkpoint_interval_s", "checkpoint_write_s", "mtbf_hours")
    if not all(k in reliability for k in keys):
        return None
    segment = reliability["checkpoint_interval_s"] + reliability["checkpoint_write_s"]
    lost = lost_work_s(segment, reliability["mtbf_hours"] * 3600.0)
    return (reliability["restart_s"] + lost) / 3600.0


def cost_usd_per_hour(tco_usd: float, years: int) -> float:
    """Capex amortised over the years plus energy, per hour [USD/h]: TCO / (years · 8760)."""
    return tco_usd / (years * HOURS_PER_YEAR)


@dataclass(frozen=True)
class FailurePricing:
    """What a link failure costs the design being placed.

    rates: the goodput model's failure rates (the reliability catalog times the instance's
        what-if multipliers, ``solver.prepare.Inputs.rates``).
    lost_hours_per_interruption: training time a node-link interruption costs [h].
    cost_usd_per_hour: the cluster's cost of ownership per hour [USD/h].
    recovery: the design's recovery mode (its spare swap is what a restart in place saves).
    """

    rates: ReliabilityRates
    lost_hours_per_interruption: float
    cost_usd_per_hour: float
    recovery: str = "storage"


@dataclass(frozen=True)
class MediaPricing:
    """Prices one link over the instance's years; ``failure`` None: no failure term
    (``note`` says why, or what the term assumes)."""

    inputs: Inputs
    failure: FailurePricing | None
    note: str


def media_pricing(inputs: Inputs, design: Any, parts: Any) -> MediaPricing:
    """The failure term needs the reliability model (``objective.reliability_model =
    'model'``) and the design's lost hours per interruption and cost rate."""
    if inputs.objective.reliability_model != "model":
        return MediaPricing(inputs, None, "no failure cost: the instance prices failures as a "
                            "fixed overhead (objective.reliability_model = 'overhead')")
    missing = [name for name in ("lost_hours_per_interruption", "cost_usd_per_hour")
               if getattr(design, name) is None]
    if missing:
        return MediaPricing(inputs, None, f"no failure cost: the design carries no "
                            f"{' or '.join(missing)}")
    rates = inputs.rates[parts.gpu.generation]
    hours, rate = design.lost_hours_per_interruption, design.cost_usd_per_hour
    return MediaPricing(inputs, FailurePricing(rates, hours, rate, design.recovery), (
        f"failure cost: every link fails at its medium's catalog rate (failure_rate_"
        f"multipliers applied) over {inputs.years} years; each failure costs a replacement "
        f"part (the failed transceiver, or the whole cable assembly) and, when it stops the "
        f"job, {hours:.3f} h of training (restart plus the work since the last checkpoint) "
        f"at the cluster's ${rate:,.0f}/h cost of ownership (TCO over the years). A node "
        f"link failure always stops the job; a switch-to-switch link failure stops it "
        f"{rates.fabric_interrupt_fraction:.0%} of the time (the fabric routes around the "
        f"rest) and restarts without a spare swap"))


def failure_cost_usd(m: Medium, tier: int, pricing: MediaPricing) -> float:
    """Expected cost of the failures of one link of ``m`` over the instance's years [USD]:
    ``λ·8760·years · (part + s·(L − r)·c)``, 0 without a failure pricing.

    part: the failed end's transceiver (the mean of the link's two ends), or a cable
    assembly (DAC, ACC, AEC, AOC) replaced whole (models.fabric.link_price_usd). Node
    links (``tier`` 1): the failure stops the job (s = 1, r = 0: the restart L includes
    the hot-spare swap).
    Switch-to-switch links: the fabric routes around it, and only the share
    s = fabric_interrupt_fraction of failures stops the job, restarting without a spare
    swap (r = the design's recovery mode's replace_s) — the goodput model's failure
    classes."""
    f = pricing.failure
    if f is None:
        return 0.0
    failures = link_failure_rate(m.kind, f.rates) * HOURS_PER_YEAR * pricing.inputs.years
    ends = link_price_usd(m, tier) - m.fiber_usd_per_link
    part = ends / 2 if m.is_transceiver else ends
    swap_h = f.rates.replace_s(f.recovery) / 3600.0
    share, saved_h = (1.0, 0.0) if tier == 1 else (f.rates.fabric_interrupt_fraction, swap_h)
    return failures * (part + share * (f.lost_hours_per_interruption - saved_h)
                       * f.cost_usd_per_hour)


def lifetime_cost_usd(m: Medium, tier: int, pricing: MediaPricing) -> float:
    """Capex, energy and failures over the instance's years of one link of tier ``tier``
    (1 = node-leaf) built with ``m`` [USD]."""
    inputs = pricing.inputs
    fac = inputs.facility
    capex = link_price_usd(m, tier)
    watts = 2 * m.power_w_per_end / m.links_per_module
    energy = inputs.years * annual_opex_usd(watts, fac)
    return capex + energy + failure_cost_usd(m, tier, pricing)


def cheapest_medium(media: list[Medium], length_m: float, tier: int,
                    pricing: MediaPricing) -> Medium | None:
    """Cheapest medium (lifetime cost, then capex, then id) whose reach covers ``length_m``."""
    return first_reaching(media_by_cost(media, tier, pricing), length_m)


def media_by_cost(media: list[Medium], tier: int, pricing: MediaPricing) -> list[Medium]:
    """``media`` cheapest first for a link of tier ``tier``: lifetime cost, then capex,
    then id (a total order: the first that reaches a length is :func:`cheapest_medium`)."""
    return sorted(media, key=lambda m: (lifetime_cost_usd(m, tier, pricing),
                                        link_price_usd(m, tier), m.id))


def first_reaching(ranked: list[Medium], length_m: float) -> Medium | None:
    """The first of ``ranked`` whose reach covers ``length_m``, None when none does."""
    return next((m for m in ranked if m.reach_m >= length_m - 1e-9), None)


def link_cost_units(media: list[Medium], length_m: float, tier: int,
                    pricing: MediaPricing) -> int | None:
    m = cheapest_medium(media, length_m, tier, pricing)
    return None if m is None else round(lifetime_cost_usd(m, tier, pricing) * COST_UNITS_PER_USD)
