"""Switch and inter-switch link counts of a non-blocking folded Clos (fat tree).

A stand-in for the fabric model when the reliability command runs on its own: the
design MILP passes its own counts in ReliabilityInputs.

With switch radix k and E endpoints, L tiers suffice when E <= 2 (k/2)^L (L = 1:
E <= k). Each of the lower L-1 tiers has ceil(E / (k/2)) switches, the top tier
ceil(E / k); each of the L-1 tier boundaries carries E links (non-blocking).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil


@dataclass(frozen=True)
class ClosCounts:
    tiers: int
    switches: int
    inter_switch_links: int


def nonblocking_clos(endpoints: int, radix: int) -> ClosCounts:
    """Tiers, switches and inter-switch links of a non-blocking fat tree."""
    if endpoints <= 0 or radix < 2:
        raise ValueError("need endpoints > 0 and radix >= 2")
    if endpoints <= radix:
        return ClosCounts(1, 1, 0)
    half = radix // 2
    tiers = 2
    while 2 * half ** tiers < endpoints:
        tiers += 1
    switches = (tiers - 1) * ceil(endpoints / half) + ceil(endpoints / radix)
    return ClosCounts(tiers, switches, (tiers - 1) * endpoints)
