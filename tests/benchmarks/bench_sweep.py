"""Benchmark: the 100-scenario sweep of the default instance (10 power x 10 budget levels)
on every back-end, in one run; and the validation of a 10,000-scenario grid (ids
included), which every back-end runs serially before it starts (`validation_seconds`).

Rows: local (one process), processes (2 workers), Dask LocalCluster with 1 and 2 worker
processes, and a Dask cluster of separate OS processes (`dask scheduler` and two
`dask worker` processes, started here as subprocesses, as they would be on several
machines) driven through the CLI exactly as a user would:
``clusterplan sweep ... --backend dask --scheduler tcp://127.0.0.1:PORT``; and
local-pair, two local sweeps side by side, each in a process of its own: what the 2
cores give this work with no parallel overhead at all (two processes side by side run
each other slower: shared caches, memory and the host's scheduling of the vCPUs). Its
speed-up is 2 x local wall / its wall (the slower of the two), the most a 2-worker
back-end could reach on this machine.
Each row is a fresh sweep into its own folder (nothing resumed), in a process of its own
that has imported clusterplan (`ROW_PROCESS`: nothing carried over from other rows, as
with a user's `clusterplan sweep`; in one process, a processes row after the local row
took ~0.7 s longer); its wall time includes starting the back-end (process pool,
LocalCluster) but not the external cluster, which is up before the sweep starts, as a
user's cluster is; the CLI row includes starting the CLI process itself. Speed-up =
local wall / wall. The tables must be identical across back-ends (status, objective,
design); the benchmark says so or fails. CPU s is the CPU time of every process of the
row (the coordinator, workers, fork server, Dask scheduler and nannies), sampled every
second by this process: on a loaded machine wall times follow the load, CPU times much
less.

With --repeat N the rows run N rounds, interleaved (local, processes-2, ..., local,
...), and the medians are reported with every round's figures: this VM's speed drifts
by 10-20% over minutes, so one round compares a local run and a parallel run made at
different speeds; each round's speed-up is against that round's local run.

Run: python tests/benchmarks/bench_sweep.py [--only local,processes-2,...] [--scenarios 100]
     [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import psutil

from solver import sweeps
from solver.loading import DEFAULT_INSTANCE
from solver.scenario import full_document, grid, make_scenarios, resolve_axes

ROOT = Path(__file__).resolve().parents[2]
VARY = {"limits.it_power_mw": "100:190:10", "limits.budget_usd": "4e9:8.5e9:10"}
COMPARED = ["id", "status", "objective", "gpu", "gpus", "nodes", "spare_nodes", "switch",
            "tiers", "pods", "capex_usd", "effective_tokens_per_s"]
ROWS = ("local", "processes-2", "dask-1", "dask-2", "dask-external-2", "local-pair")


def vary(scenarios: int) -> dict[str, str]:
    """VARY (100 scenarios), or a square grid over the same ranges of about `scenarios`
    (fewer for a quick run; more to see how the speed-up grows with the scenarios per
    worker, as the fixed part weighs less)."""
    if scenarios == 100:
        return VARY
    n = max(1, round(scenarios ** 0.5))
    return {"limits.it_power_mw": f"100:190:{n}", "limits.budget_usd": f"4e9:8.5e9:{n}"}


class CpuMeter:
    """CPU seconds [user + system] of this process and all its descendants since `start`,
    the descendants sampled every `every` seconds (a process's last moments before it
    ends are missed: under a second per process)."""

    def __init__(self, every: float = 1.0):
        self.every, self.seen, self.base = every, {}, {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.stop.wait(self.every):
            self.snapshot()

    def snapshot(self) -> dict[int, float]:
        me = psutil.Process()
        for proc in [me, *me.children(recursive=True)]:
            try:
                t = proc.cpu_times()
                self.seen[proc.pid] = t.user + t.system
            except psutil.Error:
                pass
        return dict(self.seen)

    def start(self) -> None:
        self.base = self.snapshot()

    def seconds(self) -> float:
        now = self.snapshot()
        return sum(cpu - self.base.get(pid, 0.0) for pid, cpu in now.items())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def external_cluster(workers: int, env: dict[str, str]) -> tuple[str, list[subprocess.Popen]]:
    """`dask scheduler` and `workers` single-threaded `dask worker` processes on loopback,
    with Dask's housekeeping turned down and clusterplan preloaded, as the README says;
    returns the scheduler address once every worker has registered."""
    from dask.distributed import Client

    address = f"tcp://127.0.0.1:{free_port()}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL,
             "env": env | sweeps.dask_environ()}  # as the README tells a user
    procs = [subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port",
                               address.rsplit(":", 1)[1], "--no-dashboard"], **quiet)]
    procs += [subprocess.Popen(["dask", "worker", address, "--nworkers", "1", "--nthreads",
                                "1", "--no-dashboard", "--preload", "solver.sweep_worker"], **quiet)
              for _ in range(workers)]
    deadline = time.monotonic() + 120
    while True:
        try:
            with Client(address, timeout=5) as client:
                client.wait_for_workers(workers, timeout=max(1, deadline - time.monotonic()))
            return address, procs
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def run_cli(address: str, grid: dict[str, str], out: Path, env: dict[str, str]) -> pd.DataFrame:
    """The sweep through the CLI, as a user runs it against a cluster."""
    args = [sys.executable, "-c", "from solver.cli import main; main()", "sweep",
            str(DEFAULT_INSTANCE), "--backend", "dask", "--scheduler", address,
            "--out", str(out), "--json", "--quiet"]
    for path, spec in grid.items():
        args += ["--vary", f"{path}={spec}"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"CLI sweep failed ({done.returncode}): {done.stderr[-2000:]}")
    return pd.read_parquet(json.loads(done.stdout)["table"])


def differences(table: pd.DataFrame, reference: pd.DataFrame) -> str:
    """Where `table` differs from `reference` in COMPARED: the columns and the first row."""
    if len(table) != len(reference):
        return f"{len(table)} rows against {len(reference)}"
    mine, theirs = table[COMPARED], reference[COMPARED]
    unequal = ~((mine == theirs) | (mine.isna() & theirs.isna()))
    columns = [c for c in COMPARED if unequal[c].any()] or ["(dtypes)"]
    first = unequal.any(axis=1).idxmax()
    return (f"differs in {', '.join(columns)}; first at scenario {mine.at[first, 'id']}: "
            f"{mine.loc[first].to_dict()} against {theirs.loc[first].to_dict()}")


ROW_PROCESS = """
import json, sys, time
from solver import sweep
from solver.loading import DEFAULT_INSTANCE
grid, out, backend, workers = json.loads(sys.argv[1])
print("imported", flush=True)
if sys.stdin.readline() != "go\\n":  # the benchmark has gone
    sys.exit(1)
start = time.perf_counter()
table = sweep(DEFAULT_INSTANCE, grid, out=out, backend=backend, workers=workers)
print(json.dumps([time.perf_counter() - start, table.attrs["table"]]), flush=True)
sys.stdin.readline()
"""
"""One row's sweep in a process of its own, as a user's `clusterplan sweep` runs: it
imports clusterplan, says so, waits for the go (ends at the end of its input), sweeps,
prints the sweep's wall seconds and its table's path, and waits for the end of its input
(so that its CPU is read while it runs)."""


def run_row(row: str, grid: dict[str, str], out: Path, env: dict[str, str],
            meter: CpuMeter) -> tuple[pd.DataFrame, float, float]:
    """One fresh sweep on the back-end `row`, in a new process (nothing kept from other
    rows: caches, heap, fork server): its table, wall seconds and CPU seconds. The wall
    and CPU start after the process has imported clusterplan."""
    if row == "dask-external-2":
        address, procs = external_cluster(2, env)
        try:
            meter.start()
            start = time.perf_counter()
            table = run_cli(address, grid, out, env)
            return table, time.perf_counter() - start, meter.seconds()
        finally:
            for p in reversed(procs):
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
    if row == "local-pair":
        tables, walls, cpu = sweep_processes(2, "local", 1, grid, out, env, meter)
        return tables[0], max(walls), cpu
    backend, _, workers = row.partition("-")
    tables, walls, cpu = sweep_processes(1, backend, int(workers or 1), grid, out, env, meter)
    return tables[0], walls[0], cpu


def sweep_processes(count: int, backend: str, workers: int, grid: dict[str, str], out: Path,
                    env: dict[str, str], meter: CpuMeter
                    ) -> tuple[list[pd.DataFrame], list[float], float]:
    """`count` sweeps side by side, each in a `ROW_PROCESS` of its own, started together
    once all have imported clusterplan: their tables, wall seconds and the CPU seconds
    of all."""
    args = [json.dumps([grid, str(out / str(i)), backend, workers]) for i in range(count)]
    procs = [subprocess.Popen([sys.executable, "-c", ROW_PROCESS, a], env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE) for a in args]
    try:
        if any(proc.stdout.readline().strip() != "imported" for proc in procs):
            raise RuntimeError(f"{backend}: a sweep process did not start")
        meter.start()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        done = [proc.stdout.readline() for proc in procs]
        cpu = meter.seconds()
    finally:  # end of input lets each go; one that is stuck is killed
        for proc in procs:
            try:
                proc.stdin.close()
                proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
    if any(p.returncode != 0 for p in procs) or not all(done):
        raise RuntimeError(f"{backend}: a sweep process failed")
    results = [json.loads(line) for line in done]
    return [pd.read_parquet(t) for _, t in results], [w for w, _ in results], cpu


VALIDATED = {"limits.it_power_mw": "100:190:100", "limits.budget_usd": "4e9:8.5e9:100"}
"""The grid whose validation is timed: 10,000 scenarios."""


def validation_seconds() -> tuple[int, float]:
    """Scenarios of VALIDATED and the seconds `make_scenarios` takes to validate them and
    compute their ids (serial, in the coordinator, before any back-end starts)."""
    base = sweeps.load_base(DEFAULT_INSTANCE)
    assignments = grid(resolve_axes(full_document(base.instance), VALIDATED, 10_000))
    start = time.perf_counter()
    scenarios = make_scenarios(base.doc, base.instance, assignments, base.source,
                               {"time_limit_s": 60.0})
    return len(scenarios), time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(ROWS), help="comma-separated rows")
    ap.add_argument("--scenarios", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of every row, interleaved (this VM's speed drifts by "
                         "~10-20%% over minutes); medians are reported")
    args = ap.parse_args()
    rows = [r for r in args.only.split(",") if r]
    grid = vary(args.scenarios)
    env = os.environ | {"PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    walls: dict[str, list[float]] = {row: [] for row in rows}
    cpus: dict[str, list[float]] = {row: [] for row in rows}
    same: dict[str, bool] = dict.fromkeys(rows, True)
    reference = None
    # bytecode compiled first, as `pip install` does: with PYTHONDONTWRITEBYTECODE set
    # (as on this machine) a fork server would compile solver/ and models/ on every row
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "solver"),
                    str(ROOT / "models")], check=True)
    meter = CpuMeter()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.repeat):
            for row in rows:
                table, wall, cpu = run_row(row, grid, Path(tmp) / f"{row}-{round_}", env,
                                           meter)
                walls[row].append(wall)
                cpus[row].append(cpu)
                reference = table if reference is None else reference
                if not table[COMPARED].equals(reference[COMPARED]):
                    same[row] = False
                    print(f"{row}, round {round_ + 1}: {differences(table, reference)}")
    n = len(reference)
    first = rows[0]
    print(f"{n}-scenario sweep of {DEFAULT_INSTANCE.name}, {os.cpu_count()} cores, "
          f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"{args.repeat} interleaved round(s), medians")
    print(f"{'back-end':<18}{'wall s':>9}{'speed-up':>10}{'CPU s':>8}  "
          f"{'walls s (speed-ups) by round':<40} same rows as {first}")
    for row in rows:
        wall = statistics.median(walls[row])
        sweeps_done = 2 if row == "local-pair" else 1  # sweeps finished in `wall`
        speed = (f"{sweeps_done * statistics.median(walls['local']) / wall:.2f}x"
                 if "local" in walls else "-")
        rounds = ", ".join(
            f"{w:.1f}" + (f" ({sweeps_done * walls['local'][i] / w:.2f}x)"
                          if "local" in walls else "")
            for i, w in enumerate(walls[row]))
        print(f"{row:<18}{wall:>9.1f}{speed:>10}{statistics.median(cpus[row]):>8.1f}  "
              f"{rounds:<40} {same[row]}")
    count, seconds = validation_seconds()
    print(f"validating a {count:,}-scenario grid (ids included): {seconds:.1f} s, "
          f"{seconds / count * 1e3:.2f} ms per scenario")
    if not all(same.values()):
        raise SystemExit("back-ends disagree")


if __name__ == "__main__":
    main()
