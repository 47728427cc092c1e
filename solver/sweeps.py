"""Scenario sweeps: solve many variants of one instance, locally, on processes or on Dask.

`sweep(instance, {path: spec, ...})` solves every point of the grid and returns one tidy
pandas table (one row per scenario: the varied values, status, objective, design choices
and key metrics), written as parquet and CSV to ``results/<instance>/sweeps/<name>/``.

Speed. Building the candidate designs (every configuration at every size, evaluated
exactly) is most of a solve. When every varied path is a limit or a requirement
(`REUSABLE_PATHS`), the candidates are built once, for the largest limits of the sweep,
and each scenario applies its own limits to them (`models.design.candidates.with_limits`)
before the exact pruning and the MILP, which is what `solve(candidates_of=...)` does. The
MILP itself is rebuilt per scenario: pruning to the scenario's limits changes the
ladders (the model's structure), and the pruned MILP solves in well under a second, so a
persistent model with mutable limit parameters or a warm start would save little.
On processes or Dask each worker builds the shared candidates once and caches them.

Resumability. Each finished scenario is written at once to ``scenarios/<id>.json``
(written to a temporary file, fsync'ed and renamed), by the coordinating process. The id
hashes the base document and the scenario's values, so a restarted sweep of the same
instance and grid finds what is done and solves only the rest; a lost Dask worker's
tasks are re-run by the scheduler and nothing finished is lost.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from models.design.candidates import build_design_data
from models.design.evaluate import default_evaluators
from solver.api import solve
from solver.backends import SolveOptions
from solver.errors import ClusterplanError, UsageError
from solver.loading import (
    DEFAULT_INSTANCE,
    instance_from_dict,
    read_document,
    read_instance_document,
)
from solver.outputs import default_out_dir
from solver.prepare import prepare
from solver.scenario import (
    Scenario,
    document_sha256,
    full_document,
    grid,
    make_scenarios,
    resolve_axes,
)
from solver.schema import Instance

BACKENDS = ("local", "processes", "dask")
REUSABLE_PATHS = re.compile(
    r"^(limits\.(it_power_mw|budget_usd|max_gpus|min_gpus|deadline_days)"
    r"|objective\.required_tokens_per_s"
    r"|site\.buildings\[[^\]]+\]\.(it_power_mw|max_racks))$")
"""Paths whose scenarios share candidate designs: limits and requirements only."""
METRIC_COLUMNS = ("status", "objective", "objective_name", "gpu", "gpus", "nodes",
                  "spare_nodes", "switch", "tiers", "pods", "rail_optimized", "nic_attachment",
                  "it_mw", "facility_mw", "capex_usd", "tco_usd", "tokens_per_s",
                  "effective_tokens_per_s", "goodput", "mfu", "binding", "verified",
                  "solve_s", "error")
SOLVED = ("optimal", "feasible")


@dataclass(frozen=True)
class Task:
    """What a worker needs to solve one scenario (picklable, no Instance objects)."""

    id: str
    values: dict[str, Any]
    doc: dict[str, Any]
    source: str
    time_limit_s: float
    shared_doc: dict[str, Any] | None
    """Document of the largest limits when candidates are shared, else None."""


# --- workers -------------------------------------------------------------------------

_CACHE: dict[str, Any] = {}
_CACHE_LOCK = threading.Lock()


def _shared_candidates(doc: dict[str, Any], source: str):
    """Candidate designs of `doc`, built once per worker process (threads share them)."""
    key = document_sha256(doc)
    with _CACHE_LOCK:
        if key not in _CACHE:
            inst = instance_from_dict(doc, source)
            _CACHE.clear()
            inputs = prepare(inst)
            _CACHE[key] = build_design_data(inputs, default_evaluators(inputs))[0]
        return _CACHE[key]


def solve_task(task: Task) -> dict[str, Any]:
    """Solve one scenario into its table row. Errors become a row with status 'error'."""
    start = time.perf_counter()
    row: dict[str, Any] = {"id": task.id, **task.values}
    try:
        inst = instance_from_dict(task.doc, task.source)
        cands = (_shared_candidates(task.shared_doc, task.source)
                 if task.shared_doc is not None else None)
        result = solve(inst, place=False, options=SolveOptions(task.time_limit_s, threads=1),
                       candidates_of=cands)
        row |= summary_row(result.status, result.summary)
    except ClusterplanError as exc:
        row |= {"status": "error", "error": str(exc)}
    row["solve_s"] = time.perf_counter() - start
    return {c: row.get(c) for c in ("id", *task.values, *METRIC_COLUMNS)}


def summary_row(status: str, s: dict[str, Any]) -> dict[str, Any]:
    """The table columns of one solve summary."""
    if status not in SOLVED:
        return {"status": status, "error": "; ".join(s.get("diagnosis", [])) or None}
    d, p, c, t = s["design"], s["power"], s["cost"], s["throughput"]
    return {
        "status": status, "objective": s["objective"]["value"],
        "objective_name": s["objective"]["name"], "gpu": d["gpu"], "gpus": d["gpus"],
        "nodes": d["nodes"], "spare_nodes": d["spare_nodes"], "switch": d["switch"],
        "tiers": d["tiers"], "pods": d["pods"], "rail_optimized": d["rail_optimized"],
        "nic_attachment": d["nic_attachment"], "it_mw": p["it_mw"],
        "facility_mw": p["facility_mw"], "capex_usd": c["capex_usd"], "tco_usd": c["tco_usd"],
        "tokens_per_s": t["tokens_per_s"], "effective_tokens_per_s": t["effective_tokens_per_s"],
        "goodput": t["goodput"], "mfu": t["mfu"],
        "binding": ",".join(b["name"] for b in s["binding"] if b["binding"]),
        "verified": s["verified"],
    }


# --- sharing candidates --------------------------------------------------------------

def shared_document(base_doc: dict[str, Any], scenarios: list[Scenario]) -> dict | None:
    """The base document with the largest limits of `scenarios` (those whose varied paths
    are all limits or requirements, `REUSABLE_PATHS`); None when there are none.

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


def write_json_durably(path: Path, document: Any) -> None:
    """Write to a temporary file beside `path`, fsync, rename: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(document, fh, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def finished_rows(folder: Path, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Rows of the scenarios in `ids` already written under folder/scenarios/."""
    out = {}
    for sid in ids:
        path = folder / "scenarios" / f"{sid}.json"
        if path.exists():
            try:
                out[sid] = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                continue  # never happens with durable writes; re-solve to be safe
    return out


def write_table(folder: Path, table: pd.DataFrame, stem: str = "table") -> Path:
    """parquet + CSV; returns the parquet path."""
    folder.mkdir(parents=True, exist_ok=True)
    parquet = folder / f"{stem}.parquet"
    table.to_parquet(parquet, index=False)
    table.to_csv(folder / f"{stem}.csv", index=False)
    return parquet


# --- back-ends -----------------------------------------------------------------------

def _run_local(tasks: list[Task], workers: int, scheduler: str | None
               ) -> Iterator[dict[str, Any]]:
    for task in tasks:
        yield solve_task(task)


def _run_processes(tasks: list[Task], workers: int, scheduler: str | None
                   ) -> Iterator[dict[str, Any]]:
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(solve_task, t) for t in tasks]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            for fut in futures:
                fut.cancel()


def _run_dask(tasks: list[Task], workers: int, scheduler: str | None
              ) -> Iterator[dict[str, Any]]:
    """On a dask.distributed cluster: `scheduler` address, or a LocalCluster on loopback
    with `workers` single-threaded worker processes. Tasks are retried once when a
    worker is lost. Workers must be processes with one thread: Pyomo captures solver
    output by swapping the process's file descriptors, so concurrent solves in threads
    of one process hang."""
    from dask.distributed import Client, LocalCluster
    from dask.distributed import as_completed as dask_completed

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
    client = Client(cluster if cluster is not None else scheduler)
    try:
        futures = [client.submit(solve_task, t, key=f"scenario-{t.id}", pure=False, retries=1)
                   for t in tasks]
        try:
            for fut in dask_completed(futures):
                yield fut.result()
        finally:
            client.cancel(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


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
                  on_result: Callable[[dict[str, Any]], None] | None = None
                  ) -> pd.DataFrame:
    """Solve the scenarios `assignments` ({path: value} each) of `base`; see `sweep`."""
    if backend not in BACKENDS:
        raise UsageError(f"--backend: unknown back-end '{backend}' (known: {', '.join(BACKENDS)})")
    start = time.perf_counter()
    scenarios = make_scenarios(base.doc, base.instance, assignments, base.source)
    paths = list(dict.fromkeys(p for a in assignments for p in a))
    name = name or default_sweep_name(paths, assignments)
    folder = Path(out) if out is not None else default_sweep_dir(base.instance.name, name)
    done = finished_rows(folder, [s.id for s in scenarios])
    reusable = [s for s in scenarios if all(REUSABLE_PATHS.match(p) for p in s.values)]
    shared = shared_document(base.doc, reusable) if share_candidates else None
    reusable_ids = {s.id for s in reusable}
    todo = [Task(s.id, s.values, s.doc, base.source, time_limit_s,
                 shared if s.id in reusable_ids else None)
            for s in scenarios if s.id not in done]
    rows = dict(done)
    with _progress(progress, len(scenarios), len(done)) as advance:
        for row in RUNNERS[backend](todo, workers, scheduler):
            write_json_durably(folder / "scenarios" / f"{row['id']}.json", row)
            rows[row["id"]] = row
            advance()
            if on_result is not None:
                on_result(row)
    table = pd.DataFrame([rows[s.id] for s in scenarios],
                         columns=["id", *paths, *METRIC_COLUMNS])
    parquet = write_table(folder, table)
    runtime = time.perf_counter() - start
    meta = {"name": name, "instance": base.instance.name, "source": base.source,
            "scenarios": len(scenarios), "solved": int(table["status"].isin(SOLVED).sum()),
            "failed": int((~table["status"].isin(SOLVED)).sum()), "solved_now": len(todo),
            "reused": len(done), "table": str(parquet), "csv": str(parquet.with_suffix(".csv")),
            "folder": str(folder), "runtime_s": round(runtime, 3), "backend": backend,
            "shared_candidates": sum(t.shared_doc is not None for t in todo), "paths": paths}
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
          on_result: Callable[[dict[str, Any]], None] | None = None) -> pd.DataFrame:
    """Solve the grid of `vary` ({path: spec}) over `instance`; one row per scenario.

    spec: 'lo:hi:n', 'a,b,c', '±p%:n' or a list of values (solver.scenario). The table is
    written to `out` (default results/<instance>/sweeps/<name>/table.{parquet,csv}); its
    `.attrs` hold the run's figures (scenarios, solved, failed, table, runtime_s, backend,
    solved_now, reused). Finished scenarios already in that folder are not solved again.
    `on_result(row)` is called after each scenario is written (raise to stop the sweep).
    Bad paths or values raise InvalidInstance before anything is solved.
    """
    base = load_base(instance)
    axes = resolve_axes(full_document(base.instance), vary or {})
    return run_scenarios(base, grid(axes), name=name, out=out, backend=backend,
                         workers=workers, scheduler=scheduler, time_limit_s=time_limit_s,
                         share_candidates=share_candidates, progress=progress,
                         on_result=on_result)


def read_sweep_file(path: Path) -> dict[str, Any]:
    """A sweep file (TOML): instance (relative to the file), name, backend, workers,
    time_limit_s and a [vary] table {path: spec or list}."""
    from solver.errors import InvalidInstance

    doc = read_document(path)
    known = {"instance", "name", "backend", "workers", "time_limit_s", "vary", "description"}
    problems = [f"{path}: {k}: unknown field" for k in sorted(set(doc) - known)]
    if not isinstance(doc.get("vary"), dict) or not doc["vary"]:
        problems.append(f"{path}: vary: a table of path = spec is required")
    if problems:
        raise InvalidInstance(problems, str(path))
    if "instance" in doc:
        doc["instance"] = str((path.parent / doc["instance"]).resolve())
    return doc
