"""Monte-Carlo simulation of a training run with failures, checkpoints, spares, repairs.

Vectorised over runs (numpy), seeded. Events arrive as superposed Poisson processes:

* the interrupting classes of ``rates.failure_classes`` (node, leaf switch, fabric);
* failures of idle hot spares, rate s * lambda_node thinned by the share of spares that
  are healthy; they interrupt nothing but occupy a repair slot;
* planned stops (maintenance): one arriving while the job computes is taken at the end
  of the checkpoint in progress (operators drain at a checkpoint), then a planned
  restart R_p follows; an interruption before that boundary loses the partial period
  as usual and absorbs the stop; one arriving during a restart or wait is done in that
  downtime.

Each run keeps the return times of its nodes in repair. After an interruption the job
restarts once at most s nodes are in repair (it waits for the earliest returns
otherwise); the restart takes the class's R_i (detection, by timeout for hangs, + swap
+ init + reload; no swap after a failure that loses no node). Then it computes tau
seconds and stalls delta seconds per checkpoint; work since the last checkpoint is
lost at the next interruption. Failures keep arriving during restarts and waits, as in
Daly's model. The policy (tau, delta, R,
spares) is the closed form's, so the two estimate the same quantity.

goodput of a run = committed compute / wall clock over ``days``.
"""

from __future__ import annotations

from math import sqrt

import numpy as np

from models.reliability.checkpoint import checkpoint_write_s, daly_interval, restart_s
from models.reliability.design import ReliabilityInputs
from models.reliability.goodput import choose_spares, class_restart_s
from models.reliability.rates import ReliabilityRates, failure_classes, node_failure_rate

Z95 = 1.959963984540054


class _RepairBuffer:
    """Return times [s] of nodes in repair, one row per run; a slot is free when its
    return time has passed. Grows when a row runs out of free slots."""

    def __init__(self, runs: int, cap: int):
        self.ret = np.full((runs, max(cap, 1)), -np.inf)

    def in_repair(self, rows: np.ndarray, t: np.ndarray) -> np.ndarray:
        return (self.ret[rows] > t[:, None]).sum(axis=1)

    def add(self, rows: np.ndarray, t: np.ndarray, k: int, until: np.ndarray) -> None:
        """Put k nodes of each row in repair until `until`."""
        if rows.size == 0:
            return
        while True:
            sub = self.ret[rows]
            if k == 1:
                slots = sub.argmin(axis=1)[:, None]
            else:
                slots = np.argpartition(sub, k - 1, axis=1)[:, :k]
            if (np.take_along_axis(sub, slots, axis=1) <= t[:, None]).all():
                break
            self.ret = np.concatenate(
                [self.ret, np.full((self.ret.shape[0], max(k, self.ret.shape[1])), -np.inf)],
                axis=1)
        np.put_along_axis(sub, slots, np.broadcast_to(until[:, None], slots.shape), axis=1)
        self.ret[rows] = sub

    def ready_at(self, rows: np.ndarray, t: np.ndarray, spares: int) -> np.ndarray:
        """Earliest time at which at most `spares` nodes of each row are in repair."""
        out = t.copy()
        count = self.in_repair(rows, t)
        late = np.flatnonzero(count > spares)
        if late.size:
            pending = np.sort(np.where(self.ret[rows[late]] > t[late, None],
                                       self.ret[rows[late]], np.inf), axis=1)
            out[late] = pending[np.arange(late.size), count[late] - spares - 1]
        return out


def simulate(inputs: ReliabilityInputs, rates: ReliabilityRates, days: float, runs: int,
             seed: int) -> tuple[float, float, float]:
    """Goodput over `runs` simulated runs of `days`: (mean, ci_low, ci_high), 95% CI
    of the mean (normal approximation)."""
    if days <= 0 or runs < 2:
        raise ValueError("need days > 0 and runs >= 2")
    rng = np.random.default_rng(seed)
    horizon = days * 86400.0
    classes = failure_classes(inputs, rates)
    spares = choose_spares(inputs, rates)
    lam_node = node_failure_rate(inputs, rates)
    delta = checkpoint_write_s(inputs, rates)
    r_planned = restart_s(inputs, rates, planned=True)
    mtbf_s = 3600.0 / sum(c.rate_per_h for c in classes)
    tau = daly_interval(delta, mtbf_s, restart_s(inputs, rates))

    # Event types: the interrupting classes, idle-spare failures, planned stops.
    ev_rate = np.array([c.rate_per_h for c in classes]
                       + [spares * lam_node, rates.planned.per_h]) / 3600.0
    total = ev_rate.sum()
    cum = np.cumsum(ev_rate) / total
    restart = np.array([class_restart_s(inputs, rates, c) for c in classes])
    lost = [c.nodes_lost for c in classes]
    out_s = [3600.0 * c.out_h for c in classes]
    spare_type, planned_type = len(classes), len(classes) + 1

    in_repair_mean = (inputs.nodes + spares) * lam_node * rates.node_repair_h
    buf = _RepairBuffer(runs, spares + int(4 * in_repair_mean) + 2 * max(lost) + 16)
    t = np.zeros(runs)
    seg_start = np.zeros(runs)
    seg_r = np.zeros(runs)
    work = np.zeros(runs)
    live = np.arange(runs)
    period = tau + delta

    def chunk_work(end: np.ndarray, rows: np.ndarray) -> np.ndarray:
        e = end - seg_start[rows] - seg_r[rows]
        return np.where(e > 0, np.floor(np.maximum(e, 0.0) / period) * tau, 0.0)

    stop_at = np.full(runs, np.inf)  # checkpoint boundary of a pending planned stop

    while live.size:
        t_new = t[live] + rng.exponential(1.0 / total, live.size)
        kind = np.searchsorted(cum, rng.random(live.size), side="right")
        kind = np.minimum(kind, planned_type)
        # A pending planned stop whose boundary came first: its last period is committed.
        reached = stop_at[live] <= np.minimum(t_new, horizon)
        work[live[reached]] += tau
        stop_at[live[reached]] = np.inf
        done = t_new >= horizon
        if done.any():
            rows = live[done]
            work[rows] += chunk_work(np.full(rows.size, horizon), rows)
        keep = ~done
        live, t_new, kind = live[keep], t_new[keep], kind[keep]
        t[live] = t_new
        # Idle-spare failures: thinned by the share of spares that are healthy.
        is_spare = kind == spare_type
        if is_spare.any() and spares > 0:
            rows, tt = live[is_spare], t_new[is_spare]
            healthy = np.maximum(spares - buf.in_repair(rows, tt), 0)
            hit = rng.random(rows.size) < healthy / spares
            buf.add(rows[hit], tt[hit], 1, tt[hit] + 3600.0 * rates.node_repair_h)
        is_planned = kind == planned_type
        if is_planned.any():
            rows, tt = live[is_planned], t_new[is_planned]
            up = tt > seg_start[rows] + seg_r[rows]
            rows, tt = rows[up], tt[up]
            work[rows] += chunk_work(tt, rows)
            e = tt - seg_start[rows] - seg_r[rows]
            stop_at[rows] = seg_start[rows] + seg_r[rows] + (np.floor(e / period) + 1) * period
            seg_start[rows] = stop_at[rows]
            seg_r[rows] = r_planned
        interrupted = ~is_spare & ~is_planned
        if not interrupted.any():
            continue
        rows, tt, kk = live[interrupted], t_new[interrupted], kind[interrupted]
        work[rows] += chunk_work(tt, rows)
        stop_at[rows] = np.inf  # the partial period before a pending planned stop is lost
        for i in sorted(set(kk.tolist())):
            sel = kk == i
            if lost[i]:
                buf.add(rows[sel], tt[sel], lost[i], tt[sel] + out_s[i])
        seg_start[rows] = buf.ready_at(rows, tt, spares)
        seg_r[rows] = restart[kk]

    g = work / horizon
    mean = float(g.mean())
    half = Z95 * float(g.std(ddof=1)) / sqrt(runs)
    return mean, mean - half, mean + half
