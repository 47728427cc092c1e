"""Scenario sweeps: solve many variants of one instance, locally, on processes or on Dask.

`sweep(instance, {path: spec, ...})` solves every point of the grid and returns one tidy
pandas table (one row per scenario: the varied values, status, objective, design choices
and key metrics), written as parquet and CSV to ``results/<instance>/sweeps/<name>/``.

Speed. Building the candidate designs (every configuration at every size, evaluated
exactly) is most of a solve. When every varied path is a limit or a requirement
(`REUSABLE_PATHS`) and the halls stay the base's (`shares_candidates`), the candidates
are built once, for the largest limits of the sweep, and each scenario applies its own
limits to them (`models.design.candidates.with_limits`) before the exact pruning and
the MILP, which is what `solve(candidates_of=...)` does. The MILP itself is rebuilt per
scenario: pruning to the scenario's limits changes the ladders (the model's structure),
and the pruned MILP solves in well under a second, so a persistent model with mutable
limit parameters or a warm start would save little.
The evaluators that built the shared candidates are kept with them (their caches of
exact throughput, goodput and spares depend on the workload, catalog and reliability
inputs, never on limits), so each scenario's exact refinement reuses earlier work.

Execution. The shared candidates are built once per sweep, in parts over groups of
configurations (`shared_parts`): each worker builds one part and keeps it, with the
evaluators that built it (warm for its scenarios), and the coordinator builds the parts
left over (on a machine with a core to spare). Every part builder reads all of the perf
model's feasible sets, so each first computes one share of them and takes the others'
(`feasible_share`) before it builds; the coordinator computes half of them while the
workers start, and the workers take their shares as soon as they are up (their tasks
are started from a thread). Each share and part goes to every worker once (on this
machine a file, written by its builder, whose arrays the readers map rather than copy,
solver.mapped_pickle; to a user's Dask cluster a Dask future, moved between workers by
Dask), and each worker merges its own part with the others' when its first
scenario needs them (the same data as one build), keeping the result under
`Shared.key` (solver.sweep_worker). Files go to memory (`scratch_folder`).
Every scenario then refines the candidates near its optimum, and most scenarios need
most of the same exact evaluations, and the perf model's feasible sets under them:
workers on this machine share them through a folder (solver.shared_evaluations), each
computed by one worker, which halved the refinement's CPU per worker on the default
sweep.
Building, pickling and unpickling run with Python's garbage collector paused
(`gc_paused`: it scanned the ~0.7M live objects over and over, 40-65% of that CPU) and a
worker freezes the data out of later collections as soon as it has built its part (the
first collection after the build scanned the part's ~0.34M objects: ~0.16 s) and again
once it has merged the parts. Each part carries its limit columns, which the merge joins
(`merge_design_data`) rather than laying them out again. Scenarios go to workers in
batches of shrinking size (`batches`), one round trip per batch; rows come back as each
batch finishes and are written at once. `--backend processes` and the Dask LocalCluster
fork their workers from a fork server that has only imported what a worker runs
(solver.sweep_worker: clusterplan's solve without pandas, CP-SAT or matplotlib,
~0.45 s of CPU where all of solver.sweeps took ~1.0 s; and, for Dask, distributed), started
while the scenarios are validated (`worker_context`: no import per worker, and no lock
copied from the coordinator's threads; the LocalCluster itself starts in a thread
meanwhile, `started_cluster`); the workers of a user's Dask cluster import it while the
candidates are built. Worker processes reset glibc's malloc
thresholds and Pyomo's output capture lock (`tune_worker_process`); workers on this
machine get one thread each for OpenMP, MKL and OpenBLAS (`WORKER_THREADS`, in the fork
server's environment and `worker_environ`).

Resumability. Each finished scenario is written at once to ``scenarios/<id>.json``
(written to a temporary file, fsync'ed and renamed), by the coordinating process. The id
hashes everything that decides the result (`solver.scenario.scenario_id`: the resolved
instance with its workload and catalog, the values, the time limit, the code version),
so a restarted sweep finds what is done and solves only the rest, and an edited
workload file, catalog figure or solver solves again. A lost Dask worker's tasks are
re-run by the scheduler and nothing finished is lost.

Failures. A scenario that fails for any reason (an error of the tool, a bug, a dead
worker) becomes a row with status 'error' and the reason in `error`; the sweep goes on
and writes its table. Error rows are retried by the next run into the same folder (a
deterministic failure fails again and is recorded again; a transient one, such as a
killed worker, gets its chance). Infeasible and no-solution rows are results and are
kept. A scenario file that is unreadable, empty or not a row of its scenario is named
in a warning, renamed to ``<id>.json.corrupt`` and solved again.

Output folder. It is checked before any work (exit 3 when it is a file, cannot be
created or written); ``--name`` must be a plain folder name (exit 2). One sweep at a
time writes a folder: the coordinator holds an flock on ``.sweep.lock`` (released by the
kernel when the process ends, even on kill -9), and a second sweep into the same folder
exits 3 at once naming the folder, instead of both writing ``table.parquet``. Tables,
plots and scenario files are written to a temporary file and renamed into place.
Exit codes specific to sweeps: 2 for flag errors (a malformed Dask address, more
scenarios than --max-scenarios), 5 when the Dask scheduler does not answer within
SCHEDULER_TIMEOUT_S (no result within the limits).
"""

from __future__ import annotations

import fcntl
import json
import math
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import re
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from models.design.candidates import config_groups
from models.design.limits import shared_paths
from solver.deadline import MAX_TIME_LIMIT_S
from solver.errors import InvalidInstance, NoSolution, UsageError
from solver.forked import gc_paused, process_alive
from solver.interruption import reraise_interruption
from solver.loading import (
    DEFAULT_INSTANCE,
    instance_from_dict,
    read_document,
    read_instance_document,
)
from solver.outputs import (
    check_out_location,
    default_out_dir,
    write_file_atomically,
)
from solver.prepare import prepare, site_halls
from solver.scenario import (
    Scenario,
    document_sha256,
    full_document,
    grid,
    make_scenarios,
    resolve_axes,
    resolved_instance_sha256,
)
from solver.schema import Instance
from solver.schema.site import Hall
from solver.shared_evaluations import make_folder
from solver.sweep_worker import (
    METRIC_COLUMNS,
    SOLVED,
    Kept,
    Shared,
    Task,
    build_part,
    failure_reason,
    feasible_share,
    part_of_candidates,
    share_of_feasible_sets,
    shared_candidates,
    solve_batch,
    solve_task,
    task_row,
    tune_worker_process,
    watch_coordinator,
)

BACKENDS = ("local", "processes", "dask")
REUSABLE_PATHS = re.compile("^(" + "|".join(
    re.escape(p).replace(re.escape("[*]"), r"\[[^\]]+\]") for p in shared_paths()) + ")$")
"""Paths whose scenarios share candidate designs: the limits and requirements that
models.design.limits marks shared."""
STATUSES = (*SOLVED, "infeasible", "no_solution", "error")
RETRIED = ("error",)
"""Statuses solved again when a sweep is re-run into the same folder."""
MAX_SCENARIOS = 10_000
"""Largest sweep that starts without an explicit --max-scenarios."""
MAX_WORKERS = 256
SCHEDULER_TIMEOUT_S = 10.0
"""Seconds to wait for a Dask scheduler to answer before giving up (exit 5)."""
LOCK_NAME = ".sweep.lock"
_ADDRESS = re.compile(r"^(?:(?:tcp|tls|ws|wss|ucx)://)?"
                      r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})$")


T = TypeVar("T")


def resolved_sha256(doc: dict[str, Any], source: str) -> str:
    """Hash of the instance `doc` resolves to (workload file and catalog read)."""
    return resolved_instance_sha256(instance_from_dict(doc, source))

def local_parts(workers: int) -> int:
    """Parts to build the shared candidates in with `workers` worker processes on this
    machine: one per worker and one for the coordinator, at most one per core (more
    parts than cores only repeat the evaluations that parts share; the workers' parts
    come first, `shared_parts`)."""
    return max(1, min(workers + 1, os.cpu_count() or 1))


@dataclass(frozen=True)
class PartWorkers:
    """How `shared_parts` runs its tasks on a back-end's workers."""

    count: int
    start: Callable[..., Any]
    """start(i, task, *args): task(*args) on worker i (another when it is lost); a
    future."""
    ready: Callable[[Any], Any]
    """Waits for a future of `start` and raises its error; what a later task takes as an
    argument for its result (a process pool: the result; Dask: the future itself, whose
    result Dask moves between workers)."""
    offer: Callable[[bytes | str], Any]
    """A pickle of this process (`_handed`) as such an argument."""
    result: Callable[[Any], bytes | str]
    """The result of a future of `start` in this process (`_handed`'s pickle or path)."""
    folder: str | None = None
    """Where the pickles go as files (process workers on this machine, `_handed`); None:
    as bytes."""
    slow_start: bool = False
    """`start` waits for the workers to be up (a process pool: for its fork server to
    import clusterplan, `worker_context`; a LocalCluster still starting,
    `started_cluster`): this process computes half of the feasible sets meanwhile, and
    the workers the other half."""

def shared_parts(shared: Shared, parts: int, workers: PartWorkers) -> list[Any]:
    """The candidate designs of `shared` in `parts` parts, in `config_groups` order
    (models.design.candidates: merged, equal to one build), as `workers` hand them to
    later tasks (`PartWorkers.ready` and `offer`: pickles, their files or Dask futures).
    The first `workers.count` parts are built by workers, which keep them; this process
    builds the rest meanwhile. Every part builder reads the perf model's feasible sets
    at every grid point (on the default instance 91 sets, ~1.0 s of CPU): first each
    builder computes one share of them (`feasible_share`; this process half of them
    when the workers are slow to start, `PartWorkers.slow_start`), then builds its part
    given the others' shares (`build_part`). The workers' tasks are started from a
    thread, which waits for them to be up while this process computes its shares
    (`_meanwhile`).
    Nothing is merged here: each worker merges the parts when its first scenario needs
    them (`_received`)."""
    with gc_paused():
        inputs = prepare(instance_from_dict(shared.doc, shared.source))
        groups = [tuple(p.key for p in g) for g in config_groups(inputs, parts)]
        count, theirs = len(groups), min(workers.count, len(groups))
        sharing = max(count, 2 * theirs) if workers.slow_start else count
        mine = Kept.made_for(inputs)

        def path(name: str) -> str | None:
            return str(Path(workers.folder) / name) if workers.folder else None
        shares: list[Any] = []  # as the workers take them
        known: list[bytes | str] = []  # as this process does (its own are in `mine`)
        if sharing > 1:
            started, own = _meanwhile(
                [partial(workers.start, i, feasible_share, shared, i, sharing,
                         path(f"feasible-{i}.pickle")) for i in range(theirs)],
                lambda: [workers.offer(share_of_feasible_sets(mine, inputs, i, sharing,
                                                       path(f"feasible-{i}.pickle")))
                         for i in range(theirs, sharing)])
            shares = [workers.ready(f) for f in started] + own
            known = [workers.result(f) for f in started] if count > theirs else []
        started = [workers.start(i, build_part, shared, i, groups[i], shares,
                                 path(f"candidates-{i}.pickle")) for i in range(theirs)]
        own = [workers.offer(part_of_candidates(mine, inputs, i, groups[i], known,
                                         path(f"candidates-{i}.pickle")))
               for i in range(theirs, count)]
        given = [workers.ready(f) for f in started] + own
        if workers.folder:  # every builder has read the shares' files (~160 MB in all)
            for share in shares:
                Path(share).unlink(missing_ok=True)
        return given


def _meanwhile(starts: list[Callable[[], T]], work: Callable[[], list[Any]]
               ) -> tuple[list[T], list[Any]]:
    """The results of `starts`, called one after the other in a thread (starting tasks on
    workers that may still be starting up), and of `work()`, run here meanwhile. When
    `work` fails (an error, Ctrl-C) the starts not yet made are skipped and its error is
    raised at once, without waiting for the start under way."""
    stop = threading.Event()
    starter = ThreadPoolExecutor(1, thread_name_prefix="clusterplan-start")
    starting = starter.submit(lambda: [start() for start in starts if not stop.is_set()])
    try:
        done = work()
    except BaseException:
        stop.set()
        starter.shutdown(wait=False, cancel_futures=True)
        raise
    try:
        return starting.result(), done
    finally:
        starter.shutdown()


# --- sharing candidates --------------------------------------------------------------

def shares_candidates(scenario: Scenario, base_halls: tuple[tuple[str, Hall], ...]) -> bool:
    """Whether `scenario` can solve on candidates built for the base document: it varies
    only limits and requirements (`REUSABLE_PATHS`) and has the base's halls
    (`base_halls`, solver.prepare.site_halls). A building that lists no halls has them
    derived from its power (solver.schema.site.default_halls), and the candidates read
    the halls (block slots per hall, pods per hall, rack power), so a building's power is
    only a limit while its halls stay as they are."""
    return (all(REUSABLE_PATHS.match(p) for p in scenario.values)
            and site_halls(scenario.instance) == base_halls)


def shared_document(base_doc: dict[str, Any], scenarios: list[Scenario]) -> dict | None:
    """The base document with the largest limits of `scenarios` (those that share
    candidates, `shares_candidates`); None when there are none.

    Candidate ladders are cut only by it_power_mw, budget_usd and max_gpus, so the
    largest of each over the scenarios gives candidates that contain every scenario's."""
    if not scenarios:
        return None
    lims = [s.instance.limits for s in scenarios]
    doc = json.loads(json.dumps(base_doc))
    limits = doc.setdefault("limits", {})
    limits["it_power_mw"] = max(lim.it_power_mw for lim in lims)
    limits["budget_usd"] = max(lim.budget_usd for lim in lims)
    caps = [lim.max_gpus for lim in lims]
    if None in caps:
        limits.pop("max_gpus", None)
    else:
        limits["max_gpus"] = max(caps)
    limits["min_gpus"] = min(lim.min_gpus for lim in lims)
    return doc


# --- results on disk -----------------------------------------------------------------

def default_sweep_dir(instance_name: str, name: str) -> Path:
    return default_out_dir(instance_name) / "sweeps" / name


def default_sweep_name(axes_paths: list[str], assignments: list[dict[str, Any]]) -> str:
    """e.g. 'it_power_mw-budget_usd-1a2b3c4d': the varied fields and a hash of the grid."""
    tails = [re.split(r"[.\]]", p)[-1] or p for p in axes_paths] or ["base"]
    digest = document_sha256({"values": assignments})[:8]
    return "-".join(tails)[:60] + f"-{digest}"


def write_output(path: Path, write: Callable[[Path], None]) -> Path:
    """`write_file_atomically`; a write that fails (a full disk, no permission) is an
    output-location problem (exit 3) naming the file, not an internal error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_file_atomically(path, write)
    except OSError as exc:
        raise InvalidInstance([f"{path}: cannot write: {exc.strerror or exc}"],
                              "--out") from None


def write_json_durably(path: Path, document: Any) -> None:
    """Write to a temporary file beside `path`, fsync, rename: never half a file."""
    text = json.dumps(document, default=str)
    write_output(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_table(folder: Path, table: pd.DataFrame, stem: str = "table") -> Path:
    """parquet + CSV, each written whole or not at all; returns the parquet path."""
    parquet = folder / f"{stem}.parquet"
    write_output(parquet, lambda tmp: table.to_parquet(tmp, index=False))
    write_output(folder / f"{stem}.csv", lambda tmp: table.to_csv(tmp, index=False))
    return parquet


def _row_problem(row: Any, scenario: Scenario) -> str | None:
    """Why a scenario file is not a finished row of `scenario`, or None."""
    if not isinstance(row, dict) or not row:
        return "not a scenario row (empty or not a JSON object)"
    if row.get("id") != scenario.id:
        return f"its id is {row.get('id')!r}, not {scenario.id}"
    if row.get("status") not in STATUSES:
        return f"status {row.get('status')!r} is not one of {', '.join(STATUSES)}"
    missing = [c for c in (*scenario.values, *METRIC_COLUMNS) if c not in row]
    if missing:
        return f"columns missing: {', '.join(missing)}"
    if any(row[p] != v for p, v in scenario.values.items()):
        return "its values are not the scenario's"
    objective = row["objective"]
    if row["status"] in SOLVED and (isinstance(objective, bool)
                                    or not isinstance(objective, int | float)
                                    or not math.isfinite(objective)):
        return f"solved without a finite objective ({objective!r})"
    return None


@dataclass(frozen=True)
class Resumed:
    rows: dict[str, dict[str, Any]]
    """Finished rows by scenario id."""
    retried: int
    """Error rows found, to be solved again."""
    warnings: list[str]
    """One per scenario file set aside."""


def finished_rows(folder: Path, scenarios: list[Scenario]) -> Resumed:
    """Rows of `scenarios` already written under folder/scenarios/. A file that is not
    a valid row of its scenario is renamed to *.json.corrupt and named in a warning."""
    rows, warnings, retried = {}, [], 0
    for scenario in scenarios:
        path = folder / "scenarios" / f"{scenario.id}.json"
        if not path.exists():
            continue
        try:
            row = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            problem = f"unreadable ({type(exc).__name__}: {exc})"
        else:
            problem = _row_problem(row, scenario)
        if problem is None:
            if row["status"] in RETRIED:
                retried += 1
            else:
                rows[scenario.id] = row
            continue
        aside = path.with_name(path.name + ".corrupt")
        try:
            os.replace(path, aside)
        except OSError as exc:
            raise InvalidInstance([f"{path}: cannot set the corrupt file aside: {exc}"],
                                  "--out") from None
        warnings.append(f"{path}: {problem}; set aside as {aside.name} and solved again")
    return Resumed(rows, retried, warnings)


def _remove_temporary_files(folder: Path) -> None:
    """Temporary files left by a writer that was killed (only with the lock held)."""
    for tmp in [*folder.glob(".tmp-*"), *(folder / "scenarios").glob(".tmp-*")]:
        if tmp.is_file():
            tmp.unlink(missing_ok=True)


# --- the output folder ---------------------------------------------------------------

def check_sweep_name(name: str) -> str:
    """A sweep name is one plain folder name inside the results folder (exit 2)."""
    if (not isinstance(name, str) or not name.strip() or name in (".", "..")
            or any(sep in name for sep in ("/", "\\", os.sep))
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in name)):
        raise UsageError(f"--name: a plain folder name inside the results folder, without "
                         f"'/', '\\', control characters, '.' or '..' (got {name!r})")
    return name


_HELD: set[Path] = set()
"""Folders whose lock this process holds (an analysis holds it around its sweep)."""


@contextmanager
def folder_lock(folder: Path) -> Iterator[Path]:
    """Create `folder` and hold an exclusive flock on its LOCK_NAME for the duration; a
    second sweep into the folder fails at once (exit 3) naming the folder and the process
    that holds it. Re-entrant within one process."""
    key = folder.resolve()
    if key in _HELD:
        yield folder
        return
    check_out_location(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise InvalidInstance([f"{folder}: cannot be created or written: "
                               f"{exc.strerror or exc}"], "--out") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "unknown"
            raise InvalidInstance([f"{folder}: another sweep (process {owner}) is writing "
                                   "into this folder; wait for it to end or give another "
                                   "--out or --name"], "--out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        _HELD.add(key)
        try:
            yield folder
        finally:
            _HELD.discard(key)
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


def sweep_folder(instance_name: str, name: str, out: str | Path | None) -> Path:
    """The output folder of a sweep, its name and location checked (nothing created)."""
    check_sweep_name(name)
    folder = Path(out) if out is not None else default_sweep_dir(instance_name, name)
    check_out_location(folder)
    return folder


def check_run_options(backend: str, workers: int, scheduler: str | None,
                      time_limit_s: float) -> None:
    """Flag errors (exit 2), before any work."""
    if backend not in BACKENDS:
        raise UsageError(f"--backend: one of {', '.join(BACKENDS)} (got {backend!r})")
    if scheduler is not None:
        if backend != "dask":
            raise UsageError("--scheduler: only with --backend dask")
        port = _ADDRESS.match(scheduler) if isinstance(scheduler, str) else None
        if port is None or not 1 <= int(port.group(1)) <= 65535:
            raise UsageError(f"--scheduler: {scheduler!r} is not a scheduler address such "
                             "as tcp://10.0.0.5:8786 or 10.0.0.5:8786")
    if isinstance(workers, bool) or not isinstance(workers, int) \
            or not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers: a whole number from 1 to {MAX_WORKERS} (got {workers!r})")
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float) \
            or not 0 < time_limit_s <= MAX_TIME_LIMIT_S:
        raise UsageError(f"--time-limit: a positive number of seconds, at most "
                         f"{MAX_TIME_LIMIT_S:g} (got {time_limit_s!r})")


def check_scenario_count(count: int, max_scenarios: int) -> None:
    if count > max_scenarios:
        raise UsageError(f"--max-scenarios: this sweep has {count:,} scenarios, more than the "
                         f"limit of {max_scenarios:,}; pass --max-scenarios {count} to run it")


# --- back-ends -----------------------------------------------------------------------

def _run_local(tasks: list[Task], workers: int, scheduler: str | None,
               shared: Shared | None, cluster: Callable[[], Any] | None = None
               ) -> Iterator[dict[str, Any]]:
    data, failed, tasks = _with_shared(tasks, shared, lambda: shared_candidates(shared))
    yield from failed
    for task in tasks:
        yield solve_task(task, data)


BATCHES_PER_WORKER = 4
"""Each batch holds about 1/(this x workers) of the scenarios still to hand out."""
MAX_BATCH = 8
"""Most scenarios in one batch (rows come back, and are written, a batch at a time)."""


def batches(tasks: list[Task], workers: int) -> list[list[Task]]:
    """`tasks` in consecutive batches of shrinking size (guided scheduling): each holds
    ⌈remaining / (workers x BATCHES_PER_WORKER)⌉ tasks, at most MAX_BATCH, so small
    scenarios cost one round trip (and one scheduler task) per batch, not each, and the
    last batches are single scenarios: workers finish within about one scenario of each
    other (equal batches of 8 left one worker idle for up to 8 scenarios at the end)."""
    cut, start = [], 0
    while start < len(tasks):
        remaining = len(tasks) - start
        size = max(1, min(MAX_BATCH, math.ceil(remaining / (workers * BATCHES_PER_WORKER))))
        cut.append(tasks[start:start + size])
        start += size
    return cut


def _lost(batch: list[Task], exc: BaseException) -> list[dict[str, Any]]:
    """Error rows of a batch whose worker was lost."""
    return [task_row(task, {"status": "error",
                            "error": f"worker lost: {failure_reason(exc)}"}, None)
            for task in batch]


def _rows_or_errors(result: Callable[[], list[dict[str, Any]]], batch: list[Task]
                    ) -> list[dict[str, Any]]:
    """A worker's rows, or error rows for the whole batch when the worker itself was lost."""
    try:
        return result()
    except Exception as exc:  # noqa: BLE001 - a dead worker fails its scenarios only
        reraise_interruption(exc)
        return _lost(batch, exc)


def _with_shared(tasks: list[Task], shared: Shared | None, build: Callable[[], T]
                 ) -> tuple[T | None, list[dict[str, Any]], list[Task]]:
    """The shared candidates (`build()`), when some task uses them; when building them
    fails, error rows of those tasks (with the reason; the next run retries them). Also
    the tasks left to solve."""
    if shared is None or all(t.shared_key is None for t in tasks):
        return None, [], tasks
    try:
        return build(), [], tasks
    except Exception as exc:  # noqa: BLE001 - the scenarios that needed them fail, no more
        reraise_interruption(exc)
        reason = f"building the shared candidates failed: {failure_reason(exc)}"
        return None, [task_row(t, {"status": "error", "error": reason}, None)
                      for t in tasks if t.shared_key is not None], \
            [t for t in tasks if t.shared_key is None]


WORKER_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
"""One thread each for the numeric libraries in a worker process (the workers take the
cores; the libraries' own threads would only compete with them)."""
INTERRUPTS_MODULE = "solver.worker_interrupts"
"""Imported last by the fork server: it unblocks Ctrl-C there (see the module)."""
WORKER_PRELOAD = ("solver.sweep_worker", INTERRUPTS_MODULE)
"""Modules the fork server of process workers imports once (all that a worker runs,
solver.sweep_worker)."""
DASK_WORKER_PRELOAD = ("distributed", *WORKER_PRELOAD)
"""The fork server's modules when it serves a LocalCluster's Dask workers too."""


def worker_context(preload: tuple[str, ...] = WORKER_PRELOAD
                   ) -> multiprocessing.context.BaseContext:
    """Worker processes (the process pool's, and a LocalCluster's Dask workers) are forked
    from a fork server that has imported `preload` and done nothing else: a worker starts
    with clusterplan's solve and Pyomo (and Dask's distributed) loaded (a spawned worker
    spent ~2.5 s of CPU importing all of clusterplan), and it inherits no lock that another
    thread held (a worker forked from the coordinator copied Pyomo's output capture lock
    while another thread held it, and hung). The server's environment adds
    WORKER_THREADS (read by OpenBLAS as the server imports numpy). The server starts in
    the background at the first call (run_scenarios calls this before it validates the
    scenarios) and serves every later pool of this process, with the modules of that
    first call. It starts with SIGINT blocked, so Ctrl-C does not break its imports
    (INTERRUPTS_MODULE, imported last, unblocks it); a Ctrl-C meanwhile reaches this
    process as usual, once this thread unblocks it or at once in another thread."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    saved = {k: os.environ.get(k) for k in WORKER_THREADS}
    os.environ.update(WORKER_THREADS)  # the server's environment, read as it starts
    multiprocessing.resource_tracker.ensure_running()  # first: its start unblocks SIGINT
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key)
            else:
                os.environ[key] = value
    return context


def _run_processes(tasks: list[Task], workers: int, scheduler: str | None,
                   shared: Shared | None, cluster: Callable[[], Any] | None = None
                   ) -> Iterator[dict[str, Any]]:
    """A process pool of batches; a worker that dies fails its scenarios (status 'error').
    The shared candidates are built in parts, one by each worker and one by the
    coordinator when a core is left (`shared_parts`), and given to the workers once, as
    a file per part (written by its builder) that each reads when its first batch needs
    it."""
    if not tasks:
        return
    size = min(workers, len(batches(tasks, workers)))
    with ProcessPoolExecutor(max_workers=size, mp_context=worker_context(),
                             initializer=watch_coordinator,
                             initargs=(os.getpid(),)) as pool, \
            scratch_folder() as tmp:
        futures: dict[Any, list[Task]] = {}
        try:
            paths, failed, tasks = _with_shared(tasks, shared, lambda: shared_parts(
                shared, local_parts(size), PartWorkers(
                    size, lambda i, task, *args: pool.submit(task, *args),
                    lambda future: future.result(), lambda path: path,
                    lambda future: future.result(), tmp, slow_start=True)))
            yield from failed
            evaluations = make_folder(tmp) if size > 1 else None
            for batch in batches(tasks, workers):
                try:
                    futures[pool.submit(solve_batch, batch, shared, paths or [],
                                        evaluations)] = batch
                except BrokenProcessPool as exc:
                    yield from _lost(batch, exc)
            for fut in as_completed(futures):
                yield from _rows_or_errors(fut.result, futures[fut])
        except BaseException:  # Ctrl-C, SIGTERM, an error: stop now, not after the solves
            _stop_workers(pool)
            raise
        finally:
            for fut in futures:
                fut.cancel()


SCRATCH = "/dev/shm"
SCRATCH_FREE_BYTES = 2 * 2**30
"""A sweep's temporary files (the shared candidates' parts, the perf model's feasible
sets, ~180 MB on the default instance, and the shared exact evaluations) go to SCRATCH,
memory-backed, when it has this much free; else to the system's temporary folder (on
this VM's disk a 54 MB write took 0.14 to 0.5 s, in /dev/shm 0.03 to 0.06 s)."""
SCRATCH_PREFIX = "clusterplan-sweep-"


def scratch_folder() -> tempfile.TemporaryDirectory:
    """A temporary folder for one sweep's files, named after this process, in SCRATCH
    when it is a writable folder with SCRATCH_FREE_BYTES free, else in the system's
    temporary folder. Folders left there by sweeps whose process has ended (killed:
    memory-backed files live until they are removed) are removed first. Removing the
    folder never raises: a stopped sweep's Dask worker may still be writing an
    evaluation into it (the error replaced the sweep's own, Ctrl-C's included); what
    is left is removed by the first sweep after this process has ended."""
    parent = None
    try:
        stats = os.statvfs(SCRATCH)
        if stats.f_bavail * stats.f_frsize >= SCRATCH_FREE_BYTES \
                and os.access(SCRATCH, os.W_OK):
            parent = SCRATCH
    except OSError:
        pass
    for left in Path(parent or tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        owner = left.name.removeprefix(SCRATCH_PREFIX).split("-", 1)[0]
        if owner.isdigit() and not process_alive(int(owner)):
            shutil.rmtree(left, ignore_errors=True)
    return tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=parent,
                                       ignore_cleanup_errors=True)


def worker_environ() -> dict[str, Any]:
    """Environment of LocalCluster worker processes: Dask's own (one thread each for
    OpenMP, MKL and OpenBLAS, WORKER_THREADS) without MALLOC_TRIM_THRESHOLD_ (see
    tune_worker_process). The libraries the fork server loaded took their thread counts
    from its own environment, which has WORKER_THREADS too (`worker_context`)."""
    import dask

    environ = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    return {k: v for k, v in environ.items() if k != "MALLOC_TRIM_THRESHOLD_"} | WORKER_THREADS


DASK_HOUSEKEEPING = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s"}
"""Dask's periodic housekeeping, turned down for a LocalCluster (scheduler, nannies and
workers; the README gives the same as environment variables for a user's cluster,
`dask_environ`). Idle, a default one-worker LocalCluster spent 1.55 s of CPU per 20 s,
8% of a core that the scenarios need (a statistical profiler sampling every 10 ms,
event-loop health ticks every 20 ms, a memory monitor every 100 ms); with these, 0.2 s."""


def dask_environ() -> dict[str, str]:
    """DASK_HOUSEKEEPING as the environment variables Dask reads at start."""
    return {"DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value)
            for key, value in DASK_HOUSEKEEPING.items()}


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """End a pool's worker processes at once (the executor's own shutdown waits for the
    running scenarios to finish); the pool then fails its futures as broken. No future
    may be cancelled before: Python 3.11's pool raises on failing a cancelled one."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.terminate()
    pool.shutdown(wait=True)


def local_cluster(workers: int) -> Any:
    """A Dask LocalCluster on loopback of `workers` single-threaded worker processes,
    forked from the fork server that run_scenarios has started (`worker_context`,
    DASK_WORKER_PRELOAD; not here: this runs in a thread, and the server's start sets
    the process's environment), with Dask's housekeeping turned down
    (DASK_HOUSEKEEPING). Its workers ignore Ctrl-C (solver.worker_interrupts), and its
    scheduler, which runs in this process, does not install Dask's garbage-collection
    diagnosis (`_no_gc_diagnosis`)."""
    import dask
    from dask.distributed import LocalCluster

    with dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environ(),
                          "distributed.worker.multiprocessing-method": "forkserver",
                          "distributed.worker.preload": [INTERRUPTS_MODULE],
                          **DASK_HOUSEKEEPING}), _no_gc_diagnosis():
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            host="127.0.0.1", dashboard_address=None)


@contextmanager
def _no_gc_diagnosis() -> Iterator[None]:
    """A Dask scheduler started in the block does not install its garbage-collection
    diagnosis, a Python callback of every collection: a Ctrl-C that came during one was
    raised in the callback, which Python reports and drops ("Exception ignored in
    GCDiagnosis._gc_callback"), and the sweep ran on to its end. (The scheduler turns it
    on as it starts, `distributed.scheduler.enable_gc_diagnosis`.)"""
    import distributed.scheduler

    enable = distributed.scheduler.enable_gc_diagnosis
    distributed.scheduler.enable_gc_diagnosis = lambda: None
    try:
        yield
    finally:
        distributed.scheduler.enable_gc_diagnosis = enable


@contextmanager
def started_cluster(backend: str, workers: int, scheduler: str | None
                    ) -> Iterator[Callable[[], Any] | None]:
    """For `--backend dask` without a scheduler, a `local_cluster` started in a thread
    while this one validates the scenarios (its workers wait ~1 s for the fork server's
    import): the block gets the call that waits for it (None for other back-ends). The
    cluster is closed when the block ends, however it ends."""
    if backend != "dask" or scheduler is not None:
        yield None
        return
    with ThreadPoolExecutor(1, thread_name_prefix="clusterplan-cluster") as starter:
        started = starter.submit(local_cluster, workers)
        try:
            yield started.result
        finally:
            if started.exception() is None:
                started.result().close()


def _run_dask(tasks: list[Task], workers: int, scheduler: str | None,
              shared: Shared | None, cluster: Callable[[], Any] | None = None
              ) -> Iterator[dict[str, Any]]:
    """On a dask.distributed cluster: `scheduler` address, or the LocalCluster that
    `cluster()` gives (`started_cluster`). Batches of scenarios are the tasks.
    The shared candidates are built in parts, one by each worker (pinned to it by
    address) and the rest by the coordinator (`shared_parts`); each worker keeps its own
    part. On a LocalCluster the parts go to the other workers as files (as with process
    workers), and this process computes its share of the feasible sets while the
    cluster is still starting; on a user's cluster, whose workers may be on other
    machines, a part goes as a future's result that Dask moves to the other workers
    once (the coordinator's are scattered). Later batches find them there. Tasks are
    retried once when a worker is lost, then fail their scenarios. Workers must be
    processes with one thread: Pyomo captures solver output by swapping the process's
    file descriptors, so concurrent solves in threads of one process hang. A scheduler
    that does not answer within SCHEDULER_TIMEOUT_S is NoSolution (exit 5)."""
    if not tasks:
        return
    from dask.distributed import as_completed as dask_completed

    client = _DaskClient(cluster, scheduler)
    if cluster is None:  # a user's cluster: its workers are counted, and imported, now
        client.connect()
    tmp = scratch_folder()
    futures: dict[Any, list[Task]] = {}
    try:
        size = workers if cluster is not None else len(client.addresses)
        count = local_parts(size) if cluster is not None else size + 1
        parts, failed, tasks = _with_shared(tasks, shared, lambda: shared_parts(
            shared, count, PartWorkers(
                size, client.pinned, *(BY_FILE if cluster is not None else _by_dask(client)),
                folder=tmp.name if cluster is not None else None,
                slow_start=cluster is not None)))
        yield from failed
        evaluations = make_folder(tmp.name) if size > 1 else None
        futures = {client.connect().submit(solve_batch, b, shared, parts or [], evaluations,
                                           key=f"scenarios-{b[0].id}-{len(b)}", pure=False,
                                           retries=1): b
                   for b in batches(tasks, max(size, 1))}
        for fut in dask_completed(list(futures)):
            yield from _rows_or_errors(fut.result, futures[fut])
    finally:
        client.close(futures)
        tmp.cleanup()


class _DaskClient:
    """The Dask client of a sweep, connected at first use (`connect`): to the
    LocalCluster of `cluster()` (which waits for it to start) or to `scheduler`."""

    def __init__(self, cluster: Callable[[], Any] | None, scheduler: str | None):
        self.cluster, self.scheduler = cluster, scheduler
        self.client: Any = None
        self.addresses: list[str] = []
        self.warm: list[Any] = []

    def connect(self) -> Any:
        """The client; connecting to a user's scheduler that does not answer within
        SCHEDULER_TIMEOUT_S is NoSolution (exit 5). Each worker of a user's cluster
        imports clusterplan at once, while the candidates are being built, not when its
        first batch arrives (LocalCluster workers are forked with it imported)."""
        if self.client is not None:
            return self.client
        from dask.distributed import Client

        if self.cluster is not None:
            self.client = Client(self.cluster(), timeout=SCHEDULER_TIMEOUT_S)
        else:
            try:
                self.client = Client(self.scheduler, timeout=SCHEDULER_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - refused, timed out, not speaking Dask
                raise NoSolution(f"--scheduler: could not reach a Dask scheduler at "
                                 f"{self.scheduler} (waited at most "
                                 f"{SCHEDULER_TIMEOUT_S:g} s): {type(exc).__name__}: "
                                 f"{exc}") from None
        self.addresses = sorted(self.client.scheduler_info().get("workers", {}))
        if self.cluster is None:
            self.warm = [self.client.submit(tune_worker_process, pure=False, workers=[a])
                         for a in self.addresses]
        return self.client

    def pinned(self, i: int, task: Callable, *args: Any) -> Any:
        """`PartWorkers.start`: task(*args) on worker i, on another when it is lost."""
        client = self.connect()
        return client.submit(task, *args, pure=False, retries=1,
                             workers=self.addresses[i:i + 1] or None,
                             allow_other_workers=True)

    def close(self, futures: Any) -> None:
        """Cancel `futures` and the warming tasks, then close the client."""
        if self.client is not None:
            self.client.cancel([*futures, *self.warm])
            self.client.close()


def _result(future: Any) -> Any:
    return future.result()


BY_FILE = (_result, lambda given: given, _result)
"""`PartWorkers.ready`, `offer` and `result` when the pickles go as files (workers on
this machine): a finished task's path, the path itself, the path."""


def _by_dask(client: _DaskClient) -> tuple[Callable, Callable, Callable]:
    """`PartWorkers.ready`, `offer` and `result` when Dask moves the pickles: the
    finished future (left on its worker), the pickle scattered, the pickle."""
    return (_finished, lambda payload: client.connect().scatter(payload, hash=False),
            _result)


def _finished(future: Any) -> Any:
    """A Dask future once it has finished (its error raised here), left on its worker."""
    if (error := future.exception()) is not None:
        raise error
    return future


RUNNERS: dict[str, Callable[..., Iterator[dict[str, Any]]]] = {
    "local": _run_local, "processes": _run_processes, "dask": _run_dask}


# --- the engine ----------------------------------------------------------------------

@dataclass(frozen=True)
class Base:
    doc: dict[str, Any]
    instance: Instance
    source: str


def load_base(instance: str | Path | Instance | dict | None) -> Base:
    """A path, a parsed document, or None (the default instance); an Instance object is
    turned back into its full document (its whole catalog then reads as overrides)."""
    if isinstance(instance, Instance):
        return Base(full_document(instance), instance, instance.name)
    if isinstance(instance, dict):
        return Base(instance, instance_from_dict(instance), "instance")
    path = Path(instance) if instance is not None else DEFAULT_INSTANCE
    doc = read_instance_document(path)
    return Base(doc, instance_from_dict(doc, str(path)), str(path))


def run_scenarios(base: Base, assignments: list[dict[str, Any]], *, name: str | None = None,
                  out: str | Path | None = None, backend: str = "local", workers: int = 2,
                  scheduler: str | None = None, time_limit_s: float = 60.0,
                  share_candidates: bool = True, progress: bool = False,
                  max_scenarios: int = MAX_SCENARIOS,
                  on_result: Callable[[dict[str, Any]], None] | None = None
                  ) -> pd.DataFrame:
    """Solve the scenarios `assignments` ({path: value} each) of `base`; see `sweep`.

    Flags and the output folder are checked first (exit 2 / 3), then every scenario is
    validated (exit 3), then the folder is locked and the scenarios not yet done are
    solved."""
    start = time.perf_counter()
    check_run_options(backend, workers, scheduler, time_limit_s)
    check_scenario_count(len(assignments), max_scenarios)
    if backend == "processes" or (backend == "dask" and scheduler is None):
        # the fork server imports clusterplan while the scenarios are validated
        worker_context(WORKER_PRELOAD if backend == "processes" else DASK_WORKER_PRELOAD)
    paths = list(dict.fromkeys(p for a in assignments for p in a))
    name = name if name is not None else default_sweep_name(paths, assignments)
    folder = sweep_folder(base.instance.name, name, out)
    with started_cluster(backend, workers, scheduler) as cluster:
        scenarios = make_scenarios(base.doc, base.instance, assignments, base.source,
                                   {"time_limit_s": float(time_limit_s)})
        halls = site_halls(base.instance)
        reusable = [s for s in scenarios if shares_candidates(s, halls)]
        shared_doc = shared_document(base.doc, reusable) if share_candidates else None
        shared = (Shared(shared_doc, base.source, resolved_sha256(shared_doc, base.source))
                  if shared_doc is not None else None)
        reusable_ids = {s.id for s in reusable} if shared is not None else set()
        with folder_lock(folder):
            _remove_temporary_files(folder)
            resumed = finished_rows(folder, scenarios)
            todo = {s.id: Task(s.id, s.values, s.doc, base.source, time_limit_s,
                               shared.key if s.id in reusable_ids else None)
                    for s in scenarios if s.id not in resumed.rows}
            rows = dict(resumed.rows)
            with _progress(progress, len(scenarios), len(resumed.rows)) as advance:
                for row in RUNNERS[backend](list(todo.values()), workers, scheduler, shared,
                                            cluster):
                    write_json_durably(folder / "scenarios" / f"{row['id']}.json", row)
                    rows[row["id"]] = row
                    advance()
                    if on_result is not None:
                        on_result(row)
            table = pd.DataFrame([rows[s.id] for s in scenarios],
                                 columns=["id", *paths, *METRIC_COLUMNS])
            parquet = write_table(folder, table)
            meta = {"name": name, "instance": base.instance.name, "source": base.source,
                    "scenarios": len(scenarios),
                    "solved": int(table["status"].isin(SOLVED).sum()),
                    "failed": int((~table["status"].isin(SOLVED)).sum()),
                    "errors": int(table["status"].eq("error").sum()),
                    "solved_now": len(todo), "reused": len(resumed.rows),
                    "retried": resumed.retried, "warnings": resumed.warnings,
                    "table": str(parquet), "csv": str(parquet.with_suffix(".csv")),
                    "folder": str(folder), "runtime_s": round(time.perf_counter() - start, 3),
                    "backend": backend,
                    "shared_candidates": sum(t.shared_key is not None for t in todo.values()),
                    "paths": paths}
            write_json_durably(folder / "sweep.json", meta)
    table.attrs.update(meta)
    return table


class _progress:
    """A rich progress bar with ETA on stderr, or nothing."""

    def __init__(self, enabled: bool, total: int, done: int):
        self.enabled, self.total, self.done = enabled, total, done
        self.bar = None

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from solver.cli_common import stderr
        self.bar = Progress("[progress.description]{task.description}", BarColumn(),
                            MofNCompleteColumn(), TimeElapsedColumn(), "eta",
                            TimeRemainingColumn(), console=stderr, transient=False)
        self.bar.start()
        task = self.bar.add_task("scenarios", total=self.total, completed=self.done)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def sweep(instance: str | Path | Instance | dict | None = None,
          vary: dict[str, Any] | None = None, *, name: str | None = None,
          out: str | Path | None = None, backend: str = "local", workers: int = 2,
          scheduler: str | None = None, time_limit_s: float = 60.0,
          share_candidates: bool = True, progress: bool = False,
          max_scenarios: int = MAX_SCENARIOS,
          on_result: Callable[[dict[str, Any]], None] | None = None) -> pd.DataFrame:
    """Solve the grid of `vary` ({path: spec}) over `instance`; one row per scenario.

    spec: 'lo:hi:n', 'a,b,c', '±p%:n' or a list of values (solver.scenario). The table is
    written to `out` (default results/<instance>/sweeps/<name>/table.{parquet,csv}); its
    `.attrs` hold the run's figures (scenarios, solved, failed, table, runtime_s, backend,
    solved_now, reused, retried, warnings). Finished scenarios already in that folder are
    not solved again (see the module docstring for failed and corrupt ones).
    `on_result(row)` is called after each scenario is written (raise to stop the sweep).
    Bad paths or values raise InvalidInstance before anything is solved; a grid of more
    than `max_scenarios` scenarios raises UsageError before it is generated.
    """
    base = load_base(instance)
    axes = resolve_axes(full_document(base.instance), vary or {}, max_scenarios)
    check_scenario_count(math.prod(len(v) for v in axes.values()), max_scenarios)
    return run_scenarios(base, grid(axes), name=name, out=out, backend=backend,
                         workers=workers, scheduler=scheduler, time_limit_s=time_limit_s,
                         share_candidates=share_candidates, progress=progress,
                         max_scenarios=max_scenarios, on_result=on_result)


def read_sweep_file(path: Path) -> dict[str, Any]:
    """A sweep file (TOML): instance (relative to the file), name, backend, workers,
    time_limit_s and a [vary] table {path: spec or list}. Wrong types are reported
    with their field (exit 3); the values are checked like the flags they stand for."""
    doc = read_document(path)
    types = {"instance": str, "name": str, "backend": str, "workers": int,
             "time_limit_s": int | float, "description": str}
    problems = [f"{path}: {k}: unknown field" for k in sorted(set(doc) - {*types, "vary"})]
    problems += [f"{path}: {k}: must be {'a number' if k == 'time_limit_s' else t.__name__}"
                 f" (got {doc[k]!r})" for k, t in types.items()
                 if k in doc and (not isinstance(doc[k], t) or isinstance(doc[k], bool))]
    if not isinstance(doc.get("vary"), dict) or not doc["vary"]:
        problems.append(f"{path}: vary: a table of path = spec is required")
    if problems:
        raise InvalidInstance(problems, str(path))
    if "instance" in doc:
        doc["instance"] = str((path.parent / doc["instance"]).resolve())
    return doc
