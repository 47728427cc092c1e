"""Cold-spare parts pool: stock of each part class so that the failures during one
replacement lead time are covered with probability `fill` (Poisson).

For a class of n units failing at lambda per unit-hour and a lead time of L days,
  mu = n lambda 24 L,   stock s = min { s : P(Poisson(mu) <= s) >= fill }.
Classes: GPUs (a spare GPU priced at the node's price per GPU), back-end NIC ports,
transceivers (half the link rate of their medium per module: a link's rate covers both
ends and the fibre) or cable assemblies (the link rate), and back-end switches.
Cold spares draw no power.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from typing import Any

from models.fabric import MediaLine
from models.power_cost import BomLine

_STIRLING = (1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188)
_LN_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _stirling_error(n: int) -> float:
    """ln n! - ((n + 1/2) ln n - n + ln sqrt(2 pi)), n >= 1: its asymptotic series above
    15 (to double precision there), else from lgamma."""
    if n > 15:
        s0, s1, s2, s3, s4 = _STIRLING
        nn = float(n) * n
        return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n
    return math.lgamma(n + 1.0) - (n + 0.5) * math.log(n) + n - _LN_SQRT_2PI


def _deviance(x: int, mu: float) -> float:
    """x ln(x/mu) + mu - x, by its series where x is near mu (no cancellation)."""
    if abs(x - mu) < 0.1 * (x + mu):
        v = (x - mu) / (x + mu)
        total, term, v2, j = (x - mu) * v, 2.0 * x * v, v * v, 1
        while True:
            term *= v2
            more = total + term / (2 * j + 1)
            if more == total:
                return more
            total, j = more, j + 1
    return x * math.log(x / mu) + mu - x


def poisson_pmf(k: int, mu: float) -> float:
    """P(Poisson(mu) = k) in Loader's saddle-point form, exp(-stirling_error(k) -
    deviance(k, mu)) / sqrt(2 pi k), to about double precision for any mu > 0 (no
    cancellation of k ln mu against ln k!)."""
    if k == 0:
        return math.exp(-mu)
    return math.exp(-_stirling_error(k) - _deviance(k, mu)) / math.sqrt(2 * math.pi * k)


def poisson_cdf(s: int, mu: float) -> float:
    """P(Poisson(mu) <= s): below the mean, the terms from s down to 0 (p_{k-1} = p_k k /
    mu, falling); else 1 - the terms above s (p_{k+1} = p_k mu / (k + 1), falling); each
    sum stops when a term no longer changes it."""
    if s < 0:
        return 0.0
    below = s < mu
    k = s if below else s + 1
    p, total = poisson_pmf(k, mu), 0.0
    while p > 0.0:
        if total + p == total:
            break
        total += p
        if below:
            if k == 0:
                break
            p, k = p * k / mu, k - 1
        else:
            k += 1
            p = p * mu / k
    return min(total, 1.0) if below else max(1.0 - total, 0.0)


@functools.lru_cache(maxsize=1 << 14)
def poisson_stock(mu: float, fill: float) -> int:
    """Smallest s with P(Poisson(mu) <= s) >= fill (:func:`poisson_cdf`). The search
    starts at the Cornish-Fisher estimate ``mu + z sqrt(mu) + (z^2 - 1)/6`` (z the normal
    quantile of ``fill``) and steps to the exact s, usually in one or two steps. Kept per
    (mu, fill): a pure function of them, and the candidates of one instance ask for the
    same class sizes (GPUs, NICs, switches of one size) under many media and facility
    options."""
    if mu <= 0:
        return 0
    z = _normal_quantile(min(max(fill, 1e-12), 1 - 1e-12))
    s = max(0, math.floor(mu + z * math.sqrt(mu) + (z * z - 1) / 6))
    cdf = poisson_cdf(s, mu)  # then P(X <= s -/+ 1) by one term each
    while s > 0 and (below := cdf - poisson_pmf(s, mu)) >= fill:  # s - 1 already enough
        s, cdf = s - 1, below
    while cdf < fill:
        s += 1
        cdf += poisson_pmf(s, mu)
    return s


@functools.lru_cache(maxsize=64)
def _normal_quantile(p: float) -> float:
    return NormalDist().inv_cdf(p)


def spare_pool_lines(rates: Any, gpu: Any, nic: Any, switch: Any, total_nodes: int,
                     switches: int, media: list[tuple[MediaLine, float]],
                     lead_time_days: float, fill: float) -> list[BomLine]:
    """Cold-spare BOM lines (category 'spares') of a design (module docstring);
    `rates`: models.reliability.ReliabilityRates; `media`: each link class with its
    medium's fibre price per link [USD]."""
    hours = 24.0 * lead_time_days
    classes = [
        (f"{gpu.id} GPU", total_nodes * gpu.gpus_per_node, rates.gpu.per_h,
         gpu.node_price_usd / gpu.gpus_per_node),
        (f"{nic.id} NIC", total_nodes * gpu.nics_per_node, rates.nic.per_h, nic.price_usd),
        (f"{switch.id} switch", switches, rates.switch.per_h, switch.price_usd),
    ]
    for m, fibre_usd in media:
        link = rates.link.get(m.kind)
        if link is None:
            continue
        if m.transceivers:
            module_usd = (m.capex_usd - m.links * fibre_usd) / m.transceivers
            classes.append((f"{m.medium_id} transceiver ({m.link_class})", m.transceivers,
                            link.per_h / 2, module_usd))
        else:
            classes.append((f"{m.medium_id} cable ({m.link_class})", m.cables, link.per_h,
                            m.capex_usd / m.cables))
    return [BomLine(f"cold spare {name}", "spares",
                    poisson_stock(units * per_h * hours, fill), usd)
            for name, units, per_h, usd in classes if units > 0]

