"""Benchmark: the 100-scenario sweep of the default instance (10 power x 10 budget levels)
on every back-end, in one run.

Rows: local (one process), processes (2 workers), Dask LocalCluster with 1 and 2 worker
processes, and a Dask cluster of separate OS processes (`dask scheduler` and two
`dask worker` processes, started here as subprocesses, as they would be on several
machines) driven through the CLI exactly as a user would:
``clusterplan sweep ... --backend dask --scheduler tcp://127.0.0.1:PORT``.
Each row is a fresh sweep into its own folder (nothing resumed); its wall time includes
starting the back-end (process pool, LocalCluster) but not the external cluster, which
is up before the sweep starts, as a user's cluster is; the CLI row includes starting the
CLI process itself. Speed-up = local wall / wall. The tables must be identical across
back-ends (status, objective, design); the benchmark says so or fails.
CPU s is the CPU time of every process of the row (the coordinator, workers, fork server,
Dask scheduler and nannies), sampled every second (sampling every 0.2 s cost the
coordinator, which solves the local row, ~5% of its CPU): on a loaded machine wall
times follow the load, CPU times much less.

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

from solver import sweep, sweeps
from solver.loading import DEFAULT_INSTANCE

ROOT = Path(__file__).resolve().parents[2]
VARY = {"limits.it_power_mw": "100:190:10", "limits.budget_usd": "4e9:8.5e9:10"}
COMPARED = ["id", "status", "objective", "gpu", "gpus", "nodes", "spare_nodes", "switch",
            "tiers", "pods", "capex_usd", "effective_tokens_per_s"]
ROWS = ("local", "processes-2", "dask-1", "dask-2", "dask-external-2")


def vary(scenarios: int) -> dict[str, str]:
    """VARY, or a smaller square grid for a quick run."""
    if scenarios >= 100:
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


def stop_fork_server() -> None:
    """End this process's fork server (solver.sweeps.worker_context), if it runs: the next
    row starts its own, preloaded for its back-end, as a CLI process would (Python has no
    public call for this; without it a Dask row after the processes row would fork its
    workers from a server that has not imported distributed)."""
    import multiprocessing.forkserver

    stop = getattr(multiprocessing.forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()


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
                                "1", "--no-dashboard", "--preload", "solver.sweeps"], **quiet)
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


def run_row(row: str, grid: dict[str, str], out: Path, env: dict[str, str],
            meter: CpuMeter) -> tuple[pd.DataFrame, float, float]:
    """One fresh sweep on the back-end `row`: its table, wall seconds and CPU seconds."""
    sweeps._CACHE.clear()  # each row starts cold, as a new CLI process does,
    stop_fork_server()  # with a fork server of its back-end's modules
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
    backend, _, workers = row.partition("-")
    meter.start()
    start = time.perf_counter()
    table = sweep(DEFAULT_INSTANCE, grid, out=out, backend=backend, workers=int(workers or 1))
    return table, time.perf_counter() - start, meter.seconds()


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
                same[row] &= table[COMPARED].equals(reference[COMPARED])
    n = len(reference)
    first = rows[0]
    print(f"{n}-scenario sweep of {DEFAULT_INSTANCE.name}, {os.cpu_count()} cores, "
          f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end, "
          f"{args.repeat} interleaved round(s), medians")
    print(f"{'back-end':<18}{'wall s':>9}{'speed-up':>10}{'CPU s':>8}  "
          f"{'walls s (speed-ups) by round':<40} same rows as {first}")
    for row in rows:
        wall = statistics.median(walls[row])
        speed = f"{statistics.median(walls['local']) / wall:.2f}x" if "local" in walls else "-"
        rounds = ", ".join(
            f"{w:.1f}" + (f" ({walls['local'][i] / w:.2f}x)" if "local" in walls else "")
            for i, w in enumerate(walls[row]))
        print(f"{row:<18}{wall:>9.1f}{speed:>10}{statistics.median(cpus[row]):>8.1f}  "
              f"{rounds:<40} {same[row]}")
    if not all(same.values()):
        raise SystemExit("back-ends disagree")


if __name__ == "__main__":
    main()
