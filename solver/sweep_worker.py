"""What a sweep's worker processes run (solver.sweeps coordinates them): one scenario
into its table row (`solve_task`, `solve_batch`), the shared candidates' feasible sets
and parts (`feasible_share`, `build_part`), and what each worker keeps between tasks
(`Kept`).

This module, and all it imports, leaves out what a worker never uses: pandas and
pyarrow (tables are the coordinator's), CP-SAT's placement and job mapping (a scenario
is solved without details, SolveOptions.details), matplotlib. The fork server that
process workers and a LocalCluster's Dask workers are forked from imports this module
(solver.sweeps.WORKER_PRELOAD): ~0.45 s of CPU and ~75 MB, where solver.sweeps took
~1.0 s and ~155 MB, on the way to every worker's first task (a phased build-out's
scenario still imports pandas, solver.phased); `tests/test_sweep.py` checks that a
worker never imports them.
"""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import os
import pickle
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyomo.common import dependencies as pyomo_dependencies

from models.design.candidates import build_design_data, merge_design_data
from models.design.data import DesignData
from models.design.evaluate import Evaluators, default_evaluators
from models.design.inputs import Inputs
from solver import mapped_pickle
from solver.api import feasible_share as api_feasible_share
from solver.api import solve
from solver.backends import SolveOptions
from solver.deadline import Deadline, time_limit_in
from solver.errors import ClusterplanError
from solver.forked import gc_paused, process_alive
from solver.interruption import reraise_interruption
from solver.loading import instance_from_dict
from solver.prepare import prepare
from solver.shared_evaluations import SharedEvaluations

METRIC_COLUMNS = ("status", "objective", "objective_name", "gpu", "gpus", "nodes",
                  "spare_nodes", "switch", "tiers", "pods", "rail_optimized", "nic_attachment",
                  "it_mw", "facility_mw", "capex_usd", "tco_usd", "usd_per_gpu_hour",
                  "usd_per_million_tokens", "tokens_per_s",
                  "effective_tokens_per_s", "goodput", "mfu", "binding", "verified",
                  "solve_s", "error")
SOLVED = ("optimal", "feasible")
SCENARIO_LIMIT_FLAG = "--time-limit (per scenario)"


@dataclass(frozen=True)
class Shared:
    """The instance whose candidate designs a sweep's scenarios share: the base document
    with the largest limits of those scenarios (`shared_document`), its source, and `key`,
    the hash of what it resolves to (`resolved_sha256`, computed by the coordinator: a
    long-lived worker must not reuse candidates after the workload or catalog files
    change)."""

    doc: dict[str, Any]
    source: str
    key: str


@dataclass(frozen=True)
class Task:
    """What a worker needs to solve one scenario (picklable, no Instance objects)."""

    id: str
    values: dict[str, Any]
    doc: dict[str, Any]
    source: str
    time_limit_s: float
    shared_key: str | None = None
    """`Shared.key` when the scenario uses the shared candidates, else None."""


@dataclass
class Kept:
    """What a process keeps for the sweep of one `Shared.key`: evaluators (their caches of
    exact throughput, goodput and spares depend on the workload, catalog and reliability
    inputs, never on limits, so every scenario re-uses them when it refines its
    candidates) and, once built or received, the shared candidate designs."""

    evaluators: Evaluators
    memo: SharedEvaluations
    """The evaluators' memo: shared with the sweep's other workers on this machine once
    the scenarios start (`SharedParts.evaluations`)."""
    data: DesignData | None = None
    parts: dict[int, DesignData] = dataclasses.field(default_factory=dict)
    """The parts of the shared candidates this process built (`build_part`), by their
    index in `config_groups` order: kept, so only the other parts are sent to it."""
    shares: set[int] = dataclasses.field(default_factory=set)
    """The shares of the perf model's feasible sets in `evaluators` (`feasible_share`),
    by index: computed here or received."""

    @classmethod
    def made_for(cls, inputs: Inputs) -> Kept:
        """Fresh evaluators of `inputs` with their memo, not shared yet."""
        memo = SharedEvaluations()
        return cls(default_evaluators(inputs, memo), memo)


_CACHE: dict[str, Kept] = {}
_CACHE_LOCK = threading.Lock()


def _kept(key: str, inputs: Callable[[], Inputs]) -> Kept:
    """This process's `Kept` of `key` (one sweep at a time: another key replaces it)."""
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE.clear()
            _CACHE[key] = Kept.made_for(inputs())
        return _CACHE[key]


def dumps(data: Any) -> bytes:
    """What crosses between processes: the shared candidates as pickle bytes, pickled
    and unpickled by clusterplan (`loads`) with the collector paused, not by the
    back-end's own serialisation (Dask unpickles in a thread with it running)."""
    with gc_paused():
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)


def loads(payload: bytes) -> Any:
    with gc_paused():
        return pickle.loads(payload)


def _handed(data: Any, path: str | None) -> bytes | str:
    """`data` as it goes to other processes: pickled (`dumps`), or written to `path` (a
    file that process workers on this machine map, solver.mapped_pickle), then the
    path."""
    if path is None:
        return dumps(data)
    mapped_pickle.write(path, data)
    return path


def _taken(given: bytes | str) -> Any:
    """The data `_handed` gave: unpickled, or read from its file."""
    return loads(given) if isinstance(given, bytes) else mapped_pickle.read(given)


def _part(inputs: Inputs, evaluators: Evaluators, configs: tuple[str, ...]) -> DesignData:
    """The candidate designs of the configurations `configs` (keys) of `inputs`, with
    their limit columns (merge_design_data joins them)."""
    part = dataclasses.replace(inputs, configs=tuple(inputs.config(k) for k in configs))
    return build_design_data(part, evaluators)[0]


def feasible_share(shared: Shared, index: int, count: int, path: str | None = None
                   ) -> bytes | str:
    """A worker task: share `index` of `count` of the perf model's feasible sets of
    `shared` (solver.api.feasible_share), kept in the evaluators the worker keeps; for
    the other part builders, pickled (`dumps`) or in the file `path` (`_handed`)."""
    tune_worker_process()
    with gc_paused():
        inputs = prepare(instance_from_dict(shared.doc, shared.source))
        return share_of_feasible_sets(_kept(shared.key, lambda: inputs), inputs, index, count, path)


def share_of_feasible_sets(kept: Kept, inputs: Inputs, index: int, count: int,
                    path: str | None) -> bytes | str:
    kept.shares.add(index)
    return _handed(api_feasible_share(inputs, kept.evaluators, index, count), path)


def build_part(shared: Shared, index: int, configs: tuple[str, ...],
               shares: list[bytes | str] | tuple[()] = (), path: str | None = None
               ) -> bytes | str:
    """A worker task: part `index` of the shared candidates, the candidate designs of the
    configurations `configs` (keys) of `shared`, built with the evaluators the worker
    keeps for its scenarios (warm for these configurations), given the feasible sets'
    `shares` it has not computed (`feasible_share`), and kept by the worker
    (`Kept.parts`, frozen out of the collector); for the other workers, pickled or in
    the file `path` (`_handed`)."""
    tune_worker_process()
    with gc_paused():
        inputs = prepare(instance_from_dict(shared.doc, shared.source))
        handed = part_of_candidates(_kept(shared.key, lambda: inputs), inputs, index, configs,
                             shares, path)
    gc.freeze()  # the part lives as long as the worker: out of every later collection
    return handed


def part_of_candidates(kept: Kept, inputs: Inputs, index: int, configs: tuple[str, ...],
                shares: list[bytes | str] | tuple[()], path: str | None) -> bytes | str:
    for i, share in enumerate(shares):
        if i not in kept.shares:
            if sets := _taken(share):
                kept.evaluators.throughput.add_feasible(sets)
            kept.shares.add(i)
    kept.parts[index] = _part(inputs, kept.evaluators, configs)
    return _handed(kept.parts[index], path)



def shared_candidates(shared: Shared) -> DesignData:
    """The candidate designs of `shared`, built once per process (`_kept`), with the
    collector paused (`gc_paused`)."""
    with gc_paused():
        inputs = prepare(instance_from_dict(shared.doc, shared.source))
        kept = _kept(shared.key, lambda: inputs)
        if kept.data is None:
            kept.data = build_design_data(inputs, kept.evaluators)[0]
        return kept.data


@dataclass(frozen=True)
class SharedParts:
    """The shared candidates as a worker is given them: the `Shared` they were built for
    and their parts in `config_groups` order, each pickled (Dask) or the path of its
    pickle (processes); and the folder of the exact evaluations the workers share
    (solver.shared_evaluations; None, or not seen by a worker: none)."""

    shared: Shared
    parts: tuple[bytes | str, ...]
    evaluations: str | None = None


def _received(given: DesignData | SharedParts) -> DesignData:
    """The shared candidates from what a worker is given: the data itself (local), or
    its parts, merged (`merge_design_data`; the parts this worker built are its own,
    `Kept.parts`, the others unpickled). The merged data is then frozen out of the
    collector (`gc.freeze`): it lives as long as the worker, and each scenario's
    collections would otherwise scan its ~1M objects again."""
    if isinstance(given, DesignData):
        return given
    shared = given.shared
    with gc_paused():
        inputs = prepare(instance_from_dict(shared.doc, shared.source))
        built = _kept(shared.key, lambda: inputs).parts
        parts = [built[i] if i in built else _taken(part)
                 for i, part in enumerate(given.parts)]
        data = merge_design_data(inputs, parts)
    gc.freeze()
    return data


def solve_task(task: Task, shared: DesignData | SharedParts | None = None
               ) -> dict[str, Any]:
    """Solve one scenario into its table row, on the shared candidate designs when the
    task has a shared key and `shared` gives them (the data or its parts, merged once per
    process, `_received`). Any failure becomes a row with status
    'error' and the reason: one bad scenario never stops a sweep. ``time_limit_s`` is the
    scenario's whole budget (solver.deadline: every stage, the infeasibility diagnosis
    included; the shared candidates are built outside it): a scenario that spends it is a failed row
    (no_solution, or error where Python code was interrupted) naming the limit and the
    stage. The hard stop interrupts Python code only where the scenario runs in a main
    thread (local and process back-ends); Dask's worker threads get the budget at each
    stage and in the solvers' own limits."""
    start = time.perf_counter()
    try:
        inst = instance_from_dict(task.doc, task.source)
        cands = evaluators = None
        if task.shared_key is not None and shared is not None:
            kept = _kept(task.shared_key, lambda: prepare(inst))
            if kept.data is None:
                kept.data = _received(shared)
            if isinstance(shared, SharedParts):
                kept.memo.use(shared.evaluations)
            cands, evaluators = kept.data, kept.evaluators
        deadline = Deadline(task.time_limit_s, SCENARIO_LIMIT_FLAG)
        with deadline.alarm():
            result = solve(inst, place=False, options=SolveOptions(
                task.time_limit_s, threads=1, details=False, deadline=deadline),
                evaluators=evaluators, candidates_of=cands)
        fields = summary_row(result.status, result.summary)
    except Exception as exc:  # noqa: BLE001 - any failure is this scenario's result
        reraise_interruption(exc)
        fields = {"status": "error", "error": failure_reason(exc)}
    return task_row(task, fields, time.perf_counter() - start)


def task_row(task: Task, fields: dict[str, Any], solve_s: float | None) -> dict[str, Any]:
    row = {"id": task.id, **task.values, **fields, "solve_s": solve_s}
    return {c: row.get(c) for c in ("id", *task.values, *METRIC_COLUMNS)}


def failure_reason(exc: BaseException) -> str:
    """Why a scenario failed: a clusterplan error's message (the time limit's also when a
    library wrapped it, `time_limit_in`), or the exception's type and text."""
    exc = time_limit_in(exc) or exc
    text = str(exc)
    return text if isinstance(exc, ClusterplanError) else f"{type(exc).__name__}: {text}"


def summary_row(status: str, s: dict[str, Any]) -> dict[str, Any]:
    """The table columns of one solve summary."""
    if status not in SOLVED:
        return {"status": status, "error": "; ".join(s.get("diagnosis", [])) or None}
    if "periods" in s:
        return phased_row(status, s)
    d, p, c, t = s["design"], s["power"], s["cost"], s["throughput"]
    return {
        "status": status, "objective": s["objective"]["value"],
        "objective_name": s["objective"]["name"], "gpu": d["gpu"], "gpus": d["gpus"],
        "nodes": d["nodes"], "spare_nodes": d["spare_nodes"], "switch": d["switch"],
        "tiers": d["tiers"], "pods": d["pods"], "rail_optimized": d["rail_optimized"],
        "nic_attachment": d["nic_attachment"], "it_mw": p["it_mw"],
        "facility_mw": p["facility_mw"], "capex_usd": c["capex_usd"], "tco_usd": c["tco_usd"],
        "usd_per_gpu_hour": c["usd_per_gpu_hour"],
        "usd_per_million_tokens": c["usd_per_million_tokens"],
        "tokens_per_s": t["tokens_per_s"], "effective_tokens_per_s": t["effective_tokens_per_s"],
        "goodput": t["goodput"], "mfu": t["mfu"],
        "binding": ",".join(b["name"] for b in s["binding"] if b["binding"]),
        "verified": s["verified"],
    }


def phased_row(status: str, s: dict[str, Any]) -> dict[str, Any]:
    """The table columns of a phased build-out (solver.phased): the objective, the GPU
    systems operating in the last period, peak IT power, total spend, last-period
    throughput."""
    last = s["periods"][-1]
    operating = [c for c in last["clusters"] if c["gpus_operating"]]
    return {
        "status": status, "objective": s["objective"]["value"],
        "objective_name": s["objective"]["name"],
        "gpu": "+".join(c["gpu"] for c in operating), "gpus": last["gpus_operating"],
        "it_mw": max(p["it_mw"] for p in s["periods"]),
        "capex_usd": s["totals"]["spend_usd"],
        "effective_tokens_per_s": last["effective_tokens_per_s"], "verified": s["verified"],
    }


def solve_batch(batch: list[Task], shared: Shared | None = None,
                parts: list[bytes | str] | tuple[()] = (), evaluations: str | None = None
                ) -> list[dict[str, Any]]:
    """The rows of a batch of scenarios, solved one after the other in a worker, on the
    shared candidates of `shared` given as `parts` (pickles or their paths, see
    `SharedParts`; a list, so that Dask hands over the scattered parts themselves),
    sharing exact evaluations through the folder `evaluations`."""
    tune_worker_process()
    given = (SharedParts(shared, tuple(parts), evaluations)
             if shared is not None and parts else None)
    return [solve_task(task, given) for task in batch]


MALLOC_MMAP_THRESHOLD = 32 * 2**20
MALLOC_TRIM_THRESHOLD = 64 * 2**20
_TUNED: list[bool] = []


def tune_worker_process() -> None:
    """Once per worker process: glibc malloc keeps freed memory up to MALLOC_TRIM_THRESHOLD
    and serves blocks under MALLOC_MMAP_THRESHOLD from its heap, where glibc's adaptive
    thresholds end up in a long-running process. A Dask nanny starts workers with
    MALLOC_TRIM_THRESHOLD_=65536, which also turns the adaptive thresholds off: every numpy
    temporary over 128 KiB was then a fresh mmap, its pages faulted in and unmapped
    again, and a scenario took ~3x its local time, half of it in the kernel. Other C
    libraries (not glibc) are left as they are.

    Also Pyomo's output capture lock: Pyomo makes it at import, a multiprocessing lock,
    which every worker forked from the fork server (`worker_context`: process workers
    and LocalCluster's Dask workers) would share, so a worker ended while holding it (a
    stopped sweep) would hang every later worker. Each worker process gets its own,
    before its first task captures anything."""
    if _TUNED:
        return
    _TUNED.append(True)
    pyomo_dependencies.capture_output_lock = threading.Lock()
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, MALLOC_TRIM_THRESHOLD)
    except (OSError, AttributeError):  # not glibc
        pass


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
"""glibc's mallopt parameter numbers (malloc.h)."""


def watch_coordinator(coordinator: int) -> None:
    """Process-pool initializer: a daemon thread ends the worker as soon as the
    coordinator (pid ``coordinator``) or the fork server it was forked from (which ends
    with the coordinator) is gone, so `kill -9` of a sweep leaves no orphan solving on;
    a worker ignores Ctrl-C (solver.worker_interrupts) and ends on SIGTERM (the
    coordinator's _stop_workers). The check runs every 0.5 s; a solve that holds the GIL
    delays it to its time limit."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    tune_worker_process()
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent and process_alive(coordinator):
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="watch-coordinator", daemon=True).start()

