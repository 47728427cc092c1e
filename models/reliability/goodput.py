"""Closed-form goodput: the useful fraction of wall-clock time (Daly's model).

With exponential interruptions of mean M, a checkpoint every tau seconds of compute
that stalls the job delta seconds, and a restart R after each interruption (restarts
may themselves be interrupted), Daly (2006) gives the expected wall time per unit of
useful work, hence

    goodput = tau / (M * exp(R/M) * (exp((tau + delta)/M) - 1)).

With several failure classes i (rate share w_i, restart R_i) and a wait W_i for
healthy nodes before the restart (a fixed delay that further failures do not reset),
the renewal argument behind Daly's formula gives

    goodput = tau * q / ((M + W) * (exp((tau + delta)/M) - 1)),
    q = sum_i w_i exp(-R_i/M),  W = sum_i w_i P(spares short)_i * W_i.

A node failure short of spares finds s + 1 nodes in repair and waits for the first
to return (about r / (s + 2), residual repair times being uniform); a leaf failure
waits for the switch replacement.

Planned stops (maintenance, rate lambda_p) requested while the job runs are taken at
the end of the checkpoint in progress (no lost work, no extra checkpoint) and restart
without detection or swap (R_p), so

    goodput = goodput_unplanned / (1 + f_up * (1 - e^{-lambda_p T}) / T * p_s * C_p),

T = tau + delta: requests within one period make one stop, (1 - e^{-lambda_p T}) / T
stops per hour up; f_up = 1 - (R + W) / M the share of wall time the job is up;
p_s = (M/T)(1 - e^{-T/M}) the chance that no failure comes first in the rest of the
period (the request uniform in it; a failure first absorbs the stop); and
C_p = M (1 - e^{-R_p/M}) e^{R/M} the downtime of one stop: the planned restart until it
ends or a failure strikes, then (probability 1 - e^{-R_p/M}) a failure restart, which
itself takes M (e^{R/M} - 1) with failures restarting it (Daly); C_p ~ R_p when R << M.
The band: every rate scaled so that Lambda sits at its band's ends
(rates.interruption_band_per_h), spares held at the central choice.
"""

from __future__ import annotations

from dataclasses import replace
from math import exp, expm1
from typing import Any

from models.reliability.checkpoint import (
    checkpoint_write_s,
    daly_interval,
    restart_breakdown_s,
    restart_s,
)
from models.reliability.design import ReliabilityInputs, ReliabilityResult
from models.reliability.rates import (
    FailureClass,
    ReliabilityRates,
    failure_classes,
    interruption_band_per_h,
    node_failure_rate,
    scaled_rates,
)
from models.reliability.spares import spare_availability, spares_needed


def goodput_fraction(tau_s: float, delta_s: float, mtbf_s: float, restart_s: float) -> float:
    """Daly's goodput for one restart time: tau / (M e^{R/M} (e^{(tau+delta)/M} - 1))."""
    if tau_s <= 0 or delta_s < 0 or mtbf_s <= 0 or restart_s < 0:
        raise ValueError("need tau_s > 0, delta_s >= 0, mtbf_s > 0, restart_s >= 0")
    return tau_s / (mtbf_s * exp(restart_s / mtbf_s) * (exp((tau_s + delta_s) / mtbf_s) - 1.0))


def lost_work_s(segment_s: float, mtbf_s: float) -> float:
    """Expected work lost to one failure [s]: ``M − T/(e^{T/M} − 1)``, the mean time into a
    checkpoint segment of ``T = tau + delta`` seconds at which an exponential failure of
    mean ``M`` strikes (Daly; about T/2 for T << M)."""
    return mtbf_s - segment_s / expm1(segment_s / mtbf_s)


def choose_spares(inputs: ReliabilityInputs, rates: ReliabilityRates) -> int:
    """The given spares, else the fewest meeting the availability target for node
    failures (spares_needed over node_repair_h)."""
    if inputs.spare_nodes is not None:
        return inputs.spare_nodes
    return spares_needed(inputs.nodes, node_failure_rate(inputs, rates), rates.node_repair_h,
                         inputs.availability_target)


def restart_terms(inputs: ReliabilityInputs, rates: ReliabilityRates, spares: int,
                  mtbf_s: float) -> tuple[float, float]:
    """(q, W): q = sum_i w_i exp(-R_i / M) over failure classes (restarts must survive
    without a new failure); W = sum_i w_i P(no spare)_i * wait_i, the mean wait for
    healthy nodes per interruption [s] (a fixed delay that failures do not reset)."""
    classes = failure_classes(inputs, rates)
    total = sum(c.rate_per_h for c in classes)
    lam = node_failure_rate(inputs, rates)
    r_swap = restart_s(inputs, rates, swap_spare=True)
    r_fabric = restart_s(inputs, rates, swap_spare=False)
    q = wait = 0.0
    for c in classes:
        w = c.rate_per_h / total
        if not c.needs_spare:
            q += w * exp(-r_fabric / mtbf_s)
            continue
        q += w * exp(-r_swap / mtbf_s)
        room = spares - c.nodes_lost  # spares left for other repairs after this failure
        p_ok = 0.0 if room < 0 else spare_availability(inputs.nodes, room, lam,
                                                        rates.node_repair_h)
        wait_s = 3600.0 * (rates.node_repair_h / (spares + 2.0) if c.nodes_lost == 1
                           else c.out_h)
        wait += w * (1.0 - p_ok) * wait_s
    return q, wait


def goodput_value(inputs: ReliabilityInputs, rates: ReliabilityRates, spares: int
                  ) -> tuple[float, float, float]:
    """(goodput, delta, tau) of a design with `spares` hot spares."""
    classes = failure_classes(inputs, rates)
    mtbf_s = 3600.0 / sum(c.rate_per_h for c in classes)
    delta = checkpoint_write_s(inputs, rates)
    tau = daly_interval(delta, mtbf_s, restart_s(inputs, rates))
    q, wait = restart_terms(inputs, rates, spares, mtbf_s)
    unplanned = tau * q / ((mtbf_s + wait) * (exp((tau + delta) / mtbf_s) - 1.0))
    r = restart_s(inputs, rates)
    up = max(0.0, 1.0 - (r + wait) / mtbf_s)
    period = tau + delta
    survives = mtbf_s / period * -expm1(-period / mtbf_s)
    stops_per_s = -expm1(-rates.planned.per_h / 3600.0 * period) / period
    r_p = restart_s(inputs, rates, planned=True)
    downtime = mtbf_s * -expm1(-r_p / mtbf_s) * exp(r / mtbf_s)
    planned = stops_per_s * up * survives * downtime
    return unplanned / (1.0 + planned), delta, tau


def goodput(inputs: ReliabilityInputs, rates: ReliabilityRates) -> ReliabilityResult:
    """Interruption rate and its band, checkpoint interval, restart and its parts, spares,
    goodput and its band, and the failure taxonomy of a design."""
    classes = failure_classes(inputs, rates)
    per_h = sum(c.rate_per_h for c in classes)
    spares = choose_spares(inputs, rates)
    value, delta, tau = goodput_value(inputs, rates, spares)
    band_h = interruption_band_per_h(inputs, rates)
    fixed = replace(inputs, spare_nodes=spares)
    ends = [goodput_value(fixed, scaled_rates(rates, max(b / per_h, 1e-6)), spares)[0]
            for b in band_h]
    availability = spare_availability(inputs.nodes, spares, node_failure_rate(inputs, rates),
                                      rates.node_repair_h)
    parts = restart_breakdown_s(inputs, rates)
    return ReliabilityResult(
        interruptions_per_day=24.0 * per_h, mtbf_hours=1.0 / per_h, checkpoint_write_s=delta,
        checkpoint_interval_s=tau, restart_s=sum(parts.values()), goodput=value,
        spare_nodes=spares, availability_target=inputs.availability_target,
        availability=availability,
        breakdown=dict(sorted((c.name, 24.0 * c.rate_per_h) for c in classes)),
        interruptions_per_day_band=(24.0 * band_h[0], 24.0 * band_h[1]),
        goodput_band=(min(ends), max(ends)), restart_breakdown_s=parts,
        recovery=inputs.recovery, profile=rates.profile,
        planned_per_day=24.0 * rates.planned.per_h,
        classes=[_class_row(c) for c in classes])


def _class_row(c: FailureClass) -> dict[str, Any]:
    """One taxonomy row: interruptions per day and their band, blast radius, units."""
    return {"class": c.name, "units": c.units, "unit": c.unit, "blast": c.blast,
            "stops_share": c.stops_share, "per_day": 24.0 * c.rate_per_h,
            "per_day_band": (24.0 * c.low_per_h, 24.0 * c.high_per_h),
            "nodes_lost": c.nodes_lost, "needs_spare": c.needs_spare}
