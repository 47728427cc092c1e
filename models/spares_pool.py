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

import math
from statistics import NormalDist
from typing import Any

from scipy.special import gammaincc

from models.fabric import MediaLine
from models.power_cost import BomLine


def poisson_stock(mu: float, fill: float) -> int:
    """Smallest s with P(Poisson(mu) <= s) >= fill; P(X <= s) = Q(s + 1, mu), the
    regularised upper incomplete gamma function (stable for large mu). The search starts
    at the Cornish-Fisher estimate ``mu + z sqrt(mu) + (z^2 - 1)/6`` (z the normal
    quantile of ``fill``) and steps to the exact s, usually in one or two steps."""
    if mu <= 0:
        return 0
    z = NormalDist().inv_cdf(min(max(fill, 1e-12), 1 - 1e-12))
    s = max(0, math.floor(mu + z * math.sqrt(mu) + (z * z - 1) / 6))
    while s > 0 and gammaincc(s, mu) >= fill:  # P(X <= s - 1) already enough
        s -= 1
    while gammaincc(s + 1, mu) < fill:
        s += 1
    return s


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

