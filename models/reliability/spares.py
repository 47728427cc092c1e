"""Hot spares: how many nodes to keep so that enough healthy nodes are at hand.

Each node alternates between up (exponential, rate lambda) and in repair (mean r
hours), so in steady state it is in repair with probability
p = lambda*r / (1 + lambda*r). With N training nodes and s hot spares, the job can run
when at most s of the N + s nodes are in repair:

    A(s) = P(Binomial(N + s, p) <= s)

``spares_needed`` is the smallest s with A(s) >= target.
"""

from __future__ import annotations

from math import log, log1p

import numpy as np


def repair_probability(rate_per_h: float, repair_h: float) -> float:
    """p: steady-state probability that one node is in repair."""
    if rate_per_h < 0 or repair_h < 0:
        raise ValueError("need rate_per_h >= 0 and repair_h >= 0")
    x = rate_per_h * repair_h
    return x / (1.0 + x)


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) <= k), summed in log space (no underflow at large n*p)."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    j = np.arange(k + 1, dtype=float)
    steps = np.log(n - j[:-1]) - np.log(j[:-1] + 1.0) + (log(p) - log1p(-p))
    log_pmf = n * log1p(-p) + np.concatenate(([0.0], np.cumsum(steps)))
    top = log_pmf.max()
    return float(min(1.0, np.exp(top) * np.exp(log_pmf - top).sum()))


def binomial_cdfs(ks: list[int], n: int, p: float) -> list[float]:
    """[binomial_cdf(k, n, p) for k in ks], the log-pmf summed once up to the largest k
    (each k's sum is then taken over its prefix exactly as binomial_cdf takes it, so
    the values are the same to the bit)."""
    inside = [k for k in ks if 0 <= k < n]
    if not inside or p <= 0.0 or p >= 1.0:
        return [binomial_cdf(k, n, p) for k in ks]
    j = np.arange(max(inside) + 1, dtype=float)
    steps = np.log(n - j[:-1]) - np.log(j[:-1] + 1.0) + (log(p) - log1p(-p))
    log_pmf = n * log1p(-p) + np.concatenate(([0.0], np.cumsum(steps)))

    def cdf(k: int) -> float:
        if not 0 <= k < n:
            return binomial_cdf(k, n, p)
        head = log_pmf[:k + 1]
        top = head.max()
        return float(min(1.0, np.exp(top) * np.exp(head - top).sum()))
    return [cdf(k) for k in ks]


def spare_availability(nodes: int, spares: int, node_failure_rate_per_h: float,
                       repair_h: float) -> float:
    """A(s) = P(at most `spares` of the nodes + spares nodes are in repair)."""
    if nodes <= 0 or spares < 0:
        raise ValueError("need nodes > 0 and spares >= 0")
    p = repair_probability(node_failure_rate_per_h, repair_h)
    return binomial_cdf(spares, nodes + spares, p)


def spares_needed(nodes: int, node_failure_rate_per_h: float, repair_h: float,
                  target: float, at_least: int = 0) -> int:
    """Smallest s with A(s) >= target (A grows with s: doubling, then bisection).

    `at_least`: a lower bound on the answer, e.g. the answer for fewer nodes (A falls
    as nodes grow, so the answer does not). The search then gallops up from it; a hint
    that is not a lower bound (A(at_least - 1) >= target) is ignored, so the answer is
    the same with or without it."""
    if not 0.0 < target < 1.0:
        raise ValueError(f"target must lie in (0, 1) (got {target})")

    def enough(s: int) -> bool:
        return spare_availability(nodes, s, node_failure_rate_per_h, repair_h) >= target

    lo = max(at_least, 1) - 1  # the search keeps: not enough at lo, or lo == 0 unchecked
    if lo > 0 and enough(lo):
        lo = 0
    if lo == 0 and enough(0):
        return 0
    step = 1
    hi = lo + step
    while not enough(hi):
        lo, step = hi, 2 * step
        hi = lo + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
