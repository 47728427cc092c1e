"""Closed-form goodput: the useful fraction of wall-clock time (Daly's model).

With exponential interruptions of mean M, a checkpoint every tau seconds of compute
that stalls the job delta seconds, and a restart R after each interruption (restarts
may themselves be interrupted), Daly (2006) gives the expected wall time per unit of
useful work, hence

    goodput = tau / (M * exp(R/M) * (exp((tau + delta)/M) - 1)).

With several failure classes i (rate share w_i, restart R_i), the renewal argument
behind Daly's formula gives, while enough healthy nodes are at hand,

    goodput_run = tau * q / (M * (exp((tau + delta)/M) - 1)),  q = sum_i w_i exp(-R_i/M).

The job can run only while at most s nodes are out (in repair, or behind a failed
leaf): the steady-state availability A of that count (``job_availability``; failures
keep coming while the job waits, so a wait is not a fixed delay), and
goodput_unplanned = A * goodput_run.

Planned stops (maintenance, rate lambda_p) requested while the job runs are taken at
the end of the checkpoint in progress (no lost work, no extra checkpoint) and restart
without detection or swap (R_p), so

    goodput = goodput_unplanned / (1 + (1 - e^{-lambda_p T}) / T * p_s * M (1 - e^{-R_p/M})),

T = tau + delta: requests within one period make one stop, (1 - e^{-lambda_p T}) / T
stops per hour up; p_s = (M/T)(1 - e^{-T/M}) the chance that no failure comes first in
the rest of the period (the request uniform in it; a failure first absorbs the stop).
The job is up a share f_up = 1 / g of the wall time, g = sum_i w_i e^{R_i/M} (Daly:
each failure costs M (e^{R_i/M} - 1) of restarts, themselves interrupted, per M up),
not 1 - R/M; one stop costs C_p = M (1 - e^{-R_p/M}) g: the planned restart until it
ends or a failure strikes, then (probability 1 - e^{-R_p/M}) a failure's restarts,
M (g - 1). So f_up C_p = M (1 - e^{-R_p/M}) (~ R_p when R_p << M), as the simulator
counts it.
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
    node_rate,
    scaled_rates,
)
from models.reliability.spares import (
    binomial_cdfs,
    repair_probability,
    spare_availability,
    spares_needed,
)


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


def choose_spares(inputs: ReliabilityInputs, rates: ReliabilityRates, at_least: int = 0
                  ) -> int:
    """The given spares, else the fewest meeting the availability target for node
    failures (spares_needed over node_repair_h; `at_least`: a hint, see there)."""
    if inputs.spare_nodes is not None:
        return inputs.spare_nodes
    return spares_needed(inputs.nodes, node_failure_rate(inputs, rates), rates.node_repair_h,
                         inputs.availability_target, at_least)


def class_restart_s(inputs: ReliabilityInputs, rates: ReliabilityRates,
                    c: FailureClass) -> float:
    """R_i: the restart after a failure of class c [s] (spare swap when it loses nodes,
    timeout detection when it hangs, a storage rollback when it corrupts the in-memory
    copies)."""
    return restart_s(inputs, rates, swap_spare=c.needs_spare, hang=c.hang,
                     corrupted=c.corrupts_copies)


def _restart_kind(c: FailureClass) -> tuple[bool, bool, bool]:
    """What class_restart_s reads of a class."""
    return c.needs_spare, c.hang, c.corrupts_copies


def job_availability(inputs: ReliabilityInputs, rates: ReliabilityRates, spares: int,
                     classes: list[FailureClass] | None = None) -> float:
    """A: steady-state probability that at most `spares` nodes are out, so the job can run.

    Node failures put single nodes in repair: Binomial(N + s, p) of them (spares); a class
    that takes b > 1 nodes out at once (a leaf switch) has Poisson(rate x out_h) events
    in progress, each holding b nodes (M/G/inf, insensitive to the repair-time law):
    A = sum_y P(Y = y) P(X <= s - b y). `classes`: failure_classes(inputs, rates), if
    already known."""
    classes = failure_classes(inputs, rates) if classes is None else classes
    lam = node_rate(classes, inputs.nodes)
    n = inputs.nodes
    dist = {0: 1.0}  # nodes held out by multi-node events -> probability
    for c in classes:
        if c.nodes_lost <= 1:
            continue
        mean = c.rate_per_h * c.out_h
        pmf = [exp(-mean)]
        while len(pmf) * c.nodes_lost <= spares:
            pmf.append(pmf[-1] * mean / len(pmf))
        dist = {k + y * c.nodes_lost: p * q for k, p in dist.items()
                for y, q in enumerate(pmf) if k + y * c.nodes_lost <= spares}
    cdfs = binomial_cdfs([spares - k for k in dist], n + spares,
                         repair_probability(lam, rates.node_repair_h))
    return sum(p * cdf for p, cdf in zip(dist.values(), cdfs, strict=True))


def _exp(x: float) -> float:
    """e^x capped at e^700 (beyond it goodput is 0 to double precision, not an overflow)."""
    return exp(min(x, 700.0))


def goodput_value(inputs: ReliabilityInputs, rates: ReliabilityRates, spares: int,
                  classes: list[FailureClass] | None = None) -> tuple[float, float, float]:
    """(goodput, delta, tau) of a design with `spares` hot spares (`classes`:
    failure_classes(inputs, rates), if already known)."""
    classes = failure_classes(inputs, rates) if classes is None else classes
    mtbf_s = 3600.0 / sum(c.rate_per_h for c in classes)
    delta = checkpoint_write_s(inputs, rates)
    r = restart_s(inputs, rates)
    tau = daly_interval(delta, mtbf_s, r)
    total = sum(c.rate_per_h for c in classes)
    restarts: dict[tuple, float] = {}  # R_i depends on the class's three flags only
    for c in classes:
        if _restart_kind(c) not in restarts:
            restarts[_restart_kind(c)] = class_restart_s(inputs, rates, c)
    q = sum(c.rate_per_h / total * _exp(-restarts[_restart_kind(c)] / mtbf_s)
            for c in classes)
    unplanned = tau * q / (mtbf_s * (_exp((tau + delta) / mtbf_s) - 1.0))
    period = tau + delta
    survives = mtbf_s / period * -expm1(-period / mtbf_s)
    stops_per_s = -expm1(-rates.planned.per_h / 3600.0 * period) / period
    r_p = restart_s(inputs, rates, planned=True)
    planned = stops_per_s * survives * mtbf_s * -expm1(-r_p / mtbf_s)
    return (job_availability(inputs, rates, spares, classes) * unplanned / (1.0 + planned),
            delta, tau)


def goodput(inputs: ReliabilityInputs, rates: ReliabilityRates, band: bool = True
            ) -> ReliabilityResult:
    """Interruption rate and its band, checkpoint interval, restart and its parts, spares,
    goodput and (``band``) its band, and the failure taxonomy of a design. Without
    ``band`` its ``goodput_band`` is None: the band takes two more evaluations of the
    model (the rates at each end of the interruption band), two thirds of a call."""
    classes = failure_classes(inputs, rates)
    per_h = sum(c.rate_per_h for c in classes)
    spares = choose_spares(inputs, rates)
    value, delta, tau = goodput_value(inputs, rates, spares, classes)
    band_h = interruption_band_per_h(inputs, rates, classes)
    ends = None
    if band:
        fixed = replace(inputs, spare_nodes=spares)
        ends = [goodput_value(fixed, scaled_rates(rates, max(b / per_h, 1e-6)), spares)[0]
                for b in band_h]
    availability = spare_availability(inputs.nodes, spares, node_rate(classes, inputs.nodes),
                                      rates.node_repair_h)
    parts = restart_breakdown_s(inputs, rates)
    return ReliabilityResult(
        interruptions_per_day=24.0 * per_h, mtbf_hours=1.0 / per_h, checkpoint_write_s=delta,
        checkpoint_interval_s=tau, restart_s=sum(parts.values()), goodput=value,
        spare_nodes=spares, availability_target=inputs.availability_target,
        availability=availability,
        breakdown=dict(sorted((c.name, 24.0 * c.rate_per_h) for c in classes)),
        interruptions_per_day_band=(24.0 * band_h[0], 24.0 * band_h[1]),
        goodput_band=(min(ends), max(ends)) if ends else None, restart_breakdown_s=parts,
        recovery=inputs.recovery, profile=rates.profile,
        planned_per_day=24.0 * rates.planned.per_h,
        classes=[_class_row(c) for c in classes])


def _class_row(c: FailureClass) -> dict[str, Any]:
    """One taxonomy row: interruptions per day and their band, blast radius, units."""
    return {"class": c.name, "units": c.units, "unit": c.unit, "blast": c.blast,
            "stops_share": c.stops_share, "per_day": 24.0 * c.rate_per_h,
            "per_day_band": (24.0 * c.low_per_h, 24.0 * c.high_per_h),
            "nodes_lost": c.nodes_lost, "needs_spare": c.needs_spare}
