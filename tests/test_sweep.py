"""Sweeps, tornado, pareto and marginal values on the small instance (assumed MFU and a
fixed overhead, so every scenario solves in well under a second)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from models.design.candidates import build_design_data
from models.design.evaluate import default_evaluators
from solver import load_instance, pareto, solve, sweep, sweep_worker, sweeps, tornado
from solver.analysis import candidate_x, marginal_values, pareto_base
from solver.backends import SolveOptions
from solver.cli import app
from solver.errors import InvalidInstance
from solver.loading import instance_from_dict, read_document
from solver.prepare import prepare
from solver.scenario import full_document, get_path, parse_spec, set_path

SMALL = Path("instances/tiny/sweep-small.toml")
COMPARED = ["status", "objective", "gpus", "switch", "tiers", "it_mw", "capex_usd",
            "effective_tokens_per_s"]


def single_solve(values: dict, instance: Path = SMALL) -> dict:
    """The table row (sweep_worker.summary_row) of a single solve, without placement, of the
    scenario `values` of `instance`."""
    doc = read_document(instance)
    full = full_document(load_instance(instance))
    for path, value in values.items():
        set_path(doc, full, path, value)
    result = solve(instance_from_dict(doc), place=False)
    return sweep_worker.summary_row(result.status, result.summary)


def assert_rows_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a[COMPARED].reset_index(drop=True),
                                  b[COMPARED].reset_index(drop=True), rtol=1e-9)


# --- specs and paths -----------------------------------------------------------------

def test_specs():
    assert parse_spec("p", "50:200:4", 1.0) == [50.0, 100.0, 150.0, 200.0]
    assert parse_spec("p", "1000:2000:3", 7) == [1000, 1500, 2000]
    assert parse_spec("p", "±30%:3", 10.0) == pytest.approx([7.0, 10.0, 13.0])
    assert parse_spec("p", "+-10%:2", 100.0) == pytest.approx([90.0, 110.0])
    assert parse_spec("p", "a,b", "x") == ["a", "b"]
    assert parse_spec("p", "true,false", True) == [True, False]
    with pytest.raises(InvalidInstance, match="p: a relative range needs a numeric base"):
        parse_spec("p", "±10%:3", None)


def test_an_integer_field_takes_whole_numbers_and_each_value_once():
    """Was: 1.5 for an integer field became 2, beside a 2 of the list (two rows of one
    scenario), and a range of 5 points over 1..3 gave 1, 2, 2, 2, 3."""
    assert parse_spec("p", "1:3:5", 7) == [1, 2, 3]
    assert parse_spec("p", "2.0,3", 7) == [2, 3]
    assert parse_spec("p", "4,4,5", 1.0) == [4.0, 5.0]
    assert parse_spec("p", [1, 1.0], 7) == [1]
    for spec in ("1.5,2", [1.5], 2.5):
        with pytest.raises(InvalidInstance, match="p: a whole number"):
            parse_spec("p", spec, 7)
    assert parse_spec("p", "1.5,2", 1.0) == [1.5, 2.0]
    assert parse_spec("p", "1,true", 1.0) == [1.0, True]  # True is not 1
    assert parse_spec("p", [["a"], ["a"], ["b"]], ["x"]) == [["a"], ["b"]]  # a sweep file's


def test_a_path_given_twice_to_vary_is_refused(tmp_path):
    """Was: the last --vary of a path silently replaced the first."""
    result = CliRunner().invoke(app, ["sweep", str(SMALL), "--vary", "limits.it_power_mw=4,5",
                                      "--vary", "limits.it_power_mw=6,7", "--out",
                                      str(tmp_path)])
    assert result.exit_code == 2
    assert "--vary limits.it_power_mw: given twice" in result.output
    assert not list(tmp_path.iterdir())
    result = CliRunner().invoke(app, [
        "sweep", str(SMALL), "--vary", "site.buildings[0].it_power_mw=5,7",
        "--vary", "site.buildings[hall-a].it_power_mw=6", "--out", str(tmp_path)])
    assert result.exit_code == 3
    assert ("site.buildings[hall-a].it_power_mw: the same field as "
            "site.buildings[0].it_power_mw") in result.output
    assert not list(tmp_path.iterdir())


def test_a_time_limit_beyond_the_clock_is_refused(tmp_path):
    """Was: --time-limit 1e10 failed every scenario with an OverflowError row, exit 0."""
    with pytest.raises(sweeps.UsageError, match="--time-limit"):
        sweep(SMALL, {"limits.it_power_mw": "4"}, out=tmp_path, time_limit_s=1e10)
    result = CliRunner().invoke(app, ["sweep", str(SMALL), "--vary", "limits.it_power_mw=4",
                                      "--time-limit", "1e10", "--out", str(tmp_path)])
    assert result.exit_code == 2


def test_paths_resolve_catalog_lists_and_dotted_ids():
    full = full_document(load_instance(SMALL))
    assert get_path(full, "catalog.gpu.h100-sxm.node_price_usd") == 292400.0
    assert get_path(full, "site.buildings[hall-a].it_power_mw") == 8.0
    assert get_path(full, "site.buildings[0].it_power_mw") == 8.0
    doc = read_document(SMALL)
    set_path(doc, full, "catalog.gpu.h100-sxm.node_price_usd", 1.0)
    set_path(doc, full, "site.buildings[hall-a].it_power_mw", 5.0)
    assert doc["catalog"]["gpu"] == {"h100-sxm": {"node_price_usd": 1.0}}
    inst = instance_from_dict(doc)
    assert inst.catalog.gpu["h100-sxm"].node_price_usd == 1.0
    assert inst.site.buildings[0].it_power_mw == 5.0


@pytest.mark.parametrize("vary, named", [
    ({"limits.nope": "1,2"}, "limits.nope"),
    ({"catalog.gpu.h100-sxm.price_usd": "1,2"}, "catalog.gpu.h100-sxm.price_usd"),
    ({"limits.it_power_mw": "-1:5:3"}, "limits.it_power_mw"),
])
def test_bad_vary_is_rejected_before_any_solve(tmp_path, vary, named):
    solved = []
    with pytest.raises(InvalidInstance) as err:
        sweep(SMALL, vary, out=tmp_path, on_result=solved.append)
    assert any(named in p for p in err.value.problems)
    assert solved == [] and not (tmp_path / "scenarios").exists()


# --- sweeps --------------------------------------------------------------------------

def test_sweep_rows_equal_single_solves_and_files(tmp_path):
    vary = {"limits.budget_usd": "1e8:2e8:3", "catalog.gpu.h100-sxm.node_price_usd": "±10%:2"}
    table = sweep(SMALL, vary, out=tmp_path)
    assert len(table) == 6 and table.attrs["solved"] == 6
    expected = pd.DataFrame([single_solve(dict(zip(vary, (b, p), strict=True)))
                             for b, p in zip(table["limits.budget_usd"],
                                             table["catalog.gpu.h100-sxm.node_price_usd"],
                                             strict=True)])
    assert_rows_equal(table, expected)
    assert_rows_equal(pd.read_parquet(tmp_path / "table.parquet"), table)
    assert list(pd.read_csv(tmp_path / "table.csv").columns) == list(table.columns)
    assert len(list((tmp_path / "scenarios").glob("*.json"))) == 6


def test_a_solve_without_details_has_the_same_summary_less_them():
    """SolveOptions.details=False (what a sweep's scenario asks for): no job mapping,
    runner-ups or tables, and every other figure of the summary as a full solve's; a
    placed solve has them anyway."""
    inst = load_instance("instances/llama3-16k.toml")  # the perf model: a job mapping
    full = solve(inst, place=False)
    lean = solve(inst, place=False, options=SolveOptions(details=False))
    assert full.summary["design"]["job_mapping"] and full.summary["runner_ups"]
    assert full.tables and lean.tables == {}
    assert lean.summary["design"]["job_mapping"] is None and lean.summary["runner_ups"] == []

    def figures(summary: dict) -> dict:  # less the details and the timings
        design = {k: v for k, v in summary["design"].items() if k != "job_mapping"}
        return {k: v for k, v in summary.items()
                if k not in ("runner_ups", "runtime_s", "solver")} | {"design": design}
    assert figures(lean.summary) == figures(full.summary)
    assert lean.summary["solver"]["best_bound"] == full.summary["solver"]["best_bound"]
    placed = solve(inst, options=SolveOptions(details=False))
    assert placed.tables and placed.summary["design"]["job_mapping"]


def test_shared_candidates_equal_rebuilt(tmp_path):
    vary = {"limits.it_power_mw": "2:7:4", "limits.max_gpus": "1024,4096"}
    shared = sweep(SMALL, vary, out=tmp_path / "a")
    rebuilt = sweep(SMALL, vary, out=tmp_path / "b", share_candidates=False)
    assert shared.attrs["shared_candidates"] == 8 and rebuilt.attrs["shared_candidates"] == 0
    assert_rows_equal(shared, rebuilt)


def test_sweep_varying_min_gpus_equals_single_solves(tmp_path):
    """limits.min_gpus is shared (models.design.limits): the shared build keeps the
    sizes from the sweep's smallest min_gpus up (models.design.candidates cuts the sizes
    below it), enough for every scenario's solve and report."""
    vary = {"limits.min_gpus": "1024,3000", "limits.budget_usd": "1e8,1.5e8"}
    table = sweep(SMALL, vary, out=tmp_path)
    assert table.attrs["shared_candidates"] == 4
    expected = pd.DataFrame([single_solve(dict(zip(vary, (g, b), strict=True)))
                             for g, b in zip(table["limits.min_gpus"],
                                             table["limits.budget_usd"], strict=True)])
    assert_rows_equal(table, expected)
    solved = table[table["status"] == "optimal"]
    assert len(set(solved["gpus"])) > 1  # min_gpus moves the design


@pytest.mark.parametrize("parts, slow_start", [(3, False), (2, True)])
def test_workers_merge_the_parts_they_built_with_those_sent_into_one_build(
        tmp_path, monkeypatch, parts, slow_start):
    """The process and Dask back-ends (sweeps.shared_parts): workers build the first parts
    and keep them, the coordinator builds the rest, and a worker merges its own parts
    with the pickles of the others (bytes or a file): the same data as one build, also
    for a worker that built none. The perf model's feasible sets are computed once over
    all the part builders (one share each, then exchanged), not once by each; with
    workers slow to start, the coordinator computes half of them (two shares of four)
    while the workers' tasks start from another thread, and builds no part."""
    import gc
    from concurrent.futures import Future

    from models.design import evaluate
    from models.design.candidates import throughput_points
    from solver.loading import INSTANCES_DIR
    from solver.prepare import prepare

    doc = read_document(INSTANCES_DIR / "llama3-16k.toml")
    doc["limits"]["it_power_mw"] = doc["site"]["buildings"][0]["it_power_mw"] = 12.0
    shared = sweeps.Shared(doc, "llama", sweeps.resolved_sha256(doc, "llama"))
    sweep_worker._CACHE.clear()
    whole = sweeps.shared_candidates(shared)
    sweep_worker._CACHE.clear()
    started, computed = [], []

    def start(index, task, *args):
        started.append((index, task.__name__, threading.current_thread().name))
        done = Future()
        done.set_result(task(*args))
        return done

    def by(thread: str) -> list[tuple[str, int]]:
        return sorted((system, gpus) for system, gpus, name in computed if name == thread)

    feasible_candidates = evaluate.feasible_candidates
    monkeypatch.setattr(evaluate, "feasible_candidates", lambda workload, system, gpus: (
        computed.append((system.id, gpus, threading.current_thread().name))
        or feasible_candidates(workload, system, gpus)))
    workers = sweeps.PartWorkers(2, start, lambda future: future.result(), lambda part: part,
                                 lambda future: future.result(), slow_start=slow_start)
    frozen = gc.get_freeze_count()
    given = sweeps.shared_parts(shared, parts, workers)
    points = [(system.id, gpus) for system, gpus in throughput_points(
        prepare(sweeps.instance_from_dict(doc, "llama")))]
    try:
        # each builder computed one share of the feasible sets (the third of three by the
        # coordinator; when the workers are slow to start, the third and fourth of four),
        # the workers' started from another thread, then built its part
        assert sorted((s, g) for s, g, _ in computed) == sorted(points)  # each once
        mine = points[2::4] + points[3::4] if slow_start else points[2::3]
        assert by("MainThread") == sorted(mine)
        assert [s[:2] for s in started] == [(0, "feasible_share"), (1, "feasible_share"),
                                            (0, "build_part"), (1, "build_part")]
        assert {s[2] for s in started[:2]} != {"MainThread"} and len(given) == parts
        kept = sweep_worker._CACHE[shared.key]
        assert set(kept.parts) == {0, 1}  # the "worker"'s
        assert gc.get_freeze_count() > frozen  # it froze them out of the collector
        assert kept.shares == ({0, 1, 2, 3} if slow_start else {0, 1, 2})
        files = [tmp_path / f"part-{i}" for i in range(parts)]
        for file, part in zip(files, given, strict=True):  # as process workers hand them
            sweep_worker._handed(sweep_worker._taken(part), str(file))
        # first worker 0, which keeps its own part only (given b"" for it, which does not
        # unpickle) and reads the others' from their files; then a worker that built no
        # part, given them all as bytes
        kept.parts = {0: kept.parts[0]}
        for taken in [(b"", *map(str, files[1:])), tuple(given)]:
            merged = sweep_worker._received(sweep_worker.SharedParts(shared, taken))
            assert merged == whole
            assert list(merged.configs) == list(whole.configs)
            assert [k.key for k in merged.candidates] == [k.key for k in whole.candidates]
            sweep_worker._CACHE.clear()  # next: a worker that built no part
    finally:
        sweep_worker._CACHE.clear()
        gc.unfreeze()


WORKER_NEVER_IMPORTS = ("pandas", "pyarrow", "ortools", "matplotlib", "solver.sweeps",
                        "solver.placement", "solver.job_mapping", "solver.phased")
WORKER_SCENARIO = """
import json, sys
from pathlib import Path
from solver import sweep_worker
from solver.loading import read_instance_document

doc = read_instance_document(Path({small!r}))
shared = sweep_worker.Shared(doc, "small", "key")
task = sweep_worker.Task("a", {{}}, doc, "small", 60.0, shared.key)
row = sweep_worker.solve_task(task, sweep_worker.shared_candidates(shared))
imported = sorted(m for m in {never!r} if m in sys.modules)
from solver.sweeps import WORKER_PRELOAD
print(json.dumps([row["status"], imported, WORKER_PRELOAD[0]]))
"""


def test_a_sweep_worker_never_imports_the_coordinators_libraries():
    """A worker's fork server imports solver.sweep_worker (WORKER_PRELOAD), and a worker
    solves its scenarios there without details: neither loads pandas, pyarrow, CP-SAT or
    matplotlib (~0.4 s of CPU and ~80 MB per worker). Checked in a fresh interpreter
    that imports what the fork server does and solves a scenario on shared candidates."""
    code = WORKER_SCENARIO.format(small=str(SMALL.resolve()), never=WORKER_NEVER_IMPORTS)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    status, imported, preloaded = json.loads(run.stdout.splitlines()[-1])
    assert (status, imported, preloaded) == ("optimal", [], "solver.sweep_worker")


def test_workers_are_started_meanwhile_and_a_failure_here_stops_at_once():
    """sweeps._meanwhile: the starts run in a thread while the work runs here, results in
    order; when the work fails, its error comes at once (not after the start under way,
    which waits for slow workers) and the starts not yet made are skipped."""
    import time
    from functools import partial

    assert sweeps._meanwhile([partial(int, "1"), partial(int, "2")], lambda: [3]) == (
        [1, 2], [3])
    started, release = [], threading.Event()

    def start(i: int) -> int:
        started.append(i)
        release.wait(10)
        return i

    def work() -> list:
        while not started:  # the first start is under way
            time.sleep(0.001)
        raise RuntimeError("stopped")

    begin = time.monotonic()
    with pytest.raises(RuntimeError, match="stopped"):
        sweeps._meanwhile([partial(start, i) for i in range(3)], work)
    assert time.monotonic() - begin < 5
    release.set()
    while any(t.name.startswith("clusterplan-start") for t in threading.enumerate()):
        time.sleep(0.01)
    assert started == [0]


def test_monotone_in_power_and_budget(tmp_path):
    for path, spec in (("limits.it_power_mw", "1:8:8"), ("limits.budget_usd", "5e7:3e8:8")):
        table = sweep(SMALL, {path: spec}, out=tmp_path / path)
        objective = table["objective"].tolist()
        assert table["status"].eq("optimal").all()
        assert all(b >= a for a, b in zip(objective, objective[1:], strict=False)), objective
        assert objective[-1] > objective[0]


def test_interrupted_sweep_resumes_without_resolving(tmp_path):
    vary = {"limits.budget_usd": "8e7:2e8:6"}
    reference = sweep(SMALL, vary, out=tmp_path / "ref")

    class Stop(Exception):
        pass

    seen = []

    def stop_after_three(row):
        seen.append(row["id"])
        if len(seen) == 3:
            raise Stop

    with pytest.raises(Stop):
        sweep(SMALL, vary, out=tmp_path / "run", on_result=stop_after_three)
    assert len(list((tmp_path / "run" / "scenarios").glob("*.json"))) == 3
    resolved = []
    resumed = sweep(SMALL, vary, out=tmp_path / "run", on_result=lambda r: resolved.append(r["id"]))
    assert resumed.attrs["reused"] == 3 and resumed.attrs["solved_now"] == 3
    assert not set(resolved) & set(seen) and len(resolved) == 3
    assert_rows_equal(resumed, reference)


def test_dask_local_cluster_equals_local(tmp_path):
    """Worker processes on loopback. (Pyomo's solver output capture swaps process file
    descriptors, so two solves must never run as threads of one process.)"""
    from dask.distributed import LocalCluster

    vary = {"limits.budget_usd": "8e7:2e8:3", "catalog.switch.tomahawk5.price_usd": "3e4,9e4"}
    local = sweep(SMALL, vary, out=tmp_path / "local")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=None) as cluster:
        remote = sweep(SMALL, vary, out=tmp_path / "dask", backend="dask",
                       scheduler=cluster.scheduler_address)
    assert remote.attrs["backend"] == "dask"
    assert_rows_equal(remote, local)


def test_processes_backend_equals_local(tmp_path):
    vary = {"limits.it_power_mw": "3,5"}
    assert_rows_equal(sweep(SMALL, vary, out=tmp_path / "p", backend="processes"),
                      sweep(SMALL, vary, out=tmp_path / "l"))


@pytest.mark.parametrize("backend", ["processes", "dask"])
def test_backend_rows_identical_to_local_and_resume(tmp_path, backend):
    """Same rows, to the last bit, on every back-end (batches, candidates shared from the
    coordinator or built per worker, cached evaluators); a sweep stopped after two rows
    resumes on the same back-end and solves only the rest."""
    vary = {"limits.it_power_mw": "2:7:3", "limits.budget_usd": "8e7,2e8"}
    local = sweep(SMALL, vary, out=tmp_path / "local")

    class Stop(Exception):
        pass

    def stop_after_two(row):
        if len(list((tmp_path / backend / "scenarios").glob("*.json"))) == 2:
            raise Stop

    with pytest.raises(Stop):
        sweep(SMALL, vary, out=tmp_path / backend, backend=backend, workers=2,
              on_result=stop_after_two)
    resumed = sweep(SMALL, vary, out=tmp_path / backend, backend=backend, workers=2)
    assert resumed.attrs["reused"] == 2 and resumed.attrs["solved_now"] == 4
    columns = ["id", *vary, *COMPARED, "nodes", "spare_nodes", "goodput", "mfu"]
    assert resumed[columns].equals(local[columns])


def test_batches_cover_every_task_in_order():
    tasks = list(range(23))
    for workers in (1, 2, 3, 8, 64):
        cut = sweeps.batches(tasks, workers)
        assert [t for b in cut for t in b] == tasks
        assert max(map(len, cut)) <= sweeps.MAX_BATCH
        assert len(cut) >= min(len(tasks), workers)  # every worker has work
        sizes = [len(b) for b in cut]
        assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 1  # a short tail


def test_readme_dask_variables_are_the_housekeeping_the_sweep_sets():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    for name, value in sweeps.dask_environ().items():
        assert f"{name}={value}" in readme


# --- analyses ------------------------------------------------------------------------

def test_tornado_node_price_is_a_hand_result_and_ranked(tmp_path):
    """With min capex for a fixed throughput the design does not change when the node
    price moves, so capex moves by exactly delta x price x (nodes + spares + the cold-spare
    GPUs, each priced at the node's price / 8)."""
    doc = read_document(SMALL)
    doc["objective"] |= {"kind": "min_capex", "required_tokens_per_s": 2.0e5}
    base = solve(instance_from_dict(doc), place=False).summary
    price = 292400.0
    nodes = (base["design"]["nodes"] + base["design"]["spare_nodes"]
             + base["design"]["spares_pool"]["parts"]["cold spare h100-sxm GPU"] / 8)
    table = tornado(doc, 0.2, ["catalog.gpu.h100-sxm.node_price_usd",
                               "catalog.switch.quantum2-qm9700.price_usd",
                               "limits.it_power_mw"], out=tmp_path)
    row = table.set_index("parameter").loc["catalog.gpu.h100-sxm.node_price_usd"]
    assert row["objective_high"] - row["objective_base"] == pytest.approx(0.2 * price * nodes)
    assert row["swing"] == pytest.approx(0.4 * price * nodes)
    assert table["parameter"].iloc[0] == "catalog.gpu.h100-sxm.node_price_usd"
    assert table["swing"].is_monotonic_decreasing
    # the power limit is slack at this size: moving it 20% changes nothing
    assert table.set_index("parameter").loc["limits.it_power_mw", "swing"] == 0.0
    assert (tmp_path / "tornado.png").stat().st_size > 0


def test_pareto_matches_enumeration_of_candidates(tmp_path):
    """Each ε point equals max{effective tokens/s of a candidate with capex <= ε and IT
    power, GPU count within the limits}, computed by hand from the candidate list."""
    front = pareto(SMALL, "capex_usd", "effective_tokens_per_s", points=6, out=tmp_path)
    inst = instance_from_dict(pareto_base(read_document(SMALL), "capex_usd"))
    inputs = prepare(inst)
    data, _ = build_design_data(inputs, default_evaluators(inputs))
    for _, row in front.iterrows():
        feasible = [c.effective_tokens_per_s for c in data.candidates
                    if candidate_x(data, c, "capex_usd") <= row["epsilon"]
                    and candidate_x(data, c, "it_mw") <= inst.limits.it_power_mw
                    and c.gpus <= inst.limits.max_gpus]
        assert row["objective"] == pytest.approx(max(feasible), rel=1e-9)
    on = front[front["on_frontier"]].sort_values("capex_usd")
    assert on["effective_tokens_per_s"].is_monotonic_increasing
    assert (on["capex_usd"] <= on["epsilon"] * (1 + 1e-9)).all()
    assert (tmp_path / "pareto.png").exists()


def test_pareto_starts_at_the_smallest_design_meeting_min_gpus(tmp_path):
    """With limits.min_gpus the default smallest ε is the smallest x of a candidate with
    at least min_gpus GPUs (the build also keeps the next smaller size, which no ε can
    choose): every point is solved and the first ε is that candidate's x."""
    doc = read_document(SMALL)
    doc["limits"]["min_gpus"] = 1000
    front = pareto(doc, "it_mw", "effective_tokens_per_s", points=3, out=tmp_path)
    assert (front["status"] == "optimal").all(), front[["epsilon", "status", "error"]]
    inputs = prepare(instance_from_dict(pareto_base(doc, "it_mw")))
    data, _ = build_design_data(inputs, default_evaluators(inputs))
    assert any(c.gpus < 1000 for c in data.candidates)
    least = min(candidate_x(data, c, "it_mw") for c in data.candidates if c.gpus >= 1000)
    assert front["epsilon"].min() == pytest.approx(least, rel=1e-12)


def test_pareto_with_min_gpus_out_of_reach_is_one_infeasible_point(tmp_path):
    """No candidate has min_gpus: the smallest ε falls back to the top one, and the front
    is that one point, infeasible with the diagnosis (not the same scenario `points`
    times)."""
    doc = read_document(SMALL)
    doc["limits"].pop("max_gpus")
    doc["limits"]["min_gpus"] = 10**6
    front = pareto(doc, "capex_usd", "effective_tokens_per_s", points=3, out=tmp_path)
    assert len(front) == 1 and front["status"].iloc[0] == "infeasible"
    assert "limits.min_gpus" in front["error"].iloc[0] or "minimum" in front["error"].iloc[0]


def test_marginal_values_are_finite_differences(tmp_path):
    table = marginal_values(SMALL, 0.2, out=tmp_path).set_index("limit")
    budget = table.loc["limits.budget_usd"]
    hi = single_solve({"limits.budget_usd": 1.5e8 * 1.2})["objective"]
    assert budget["forward_per_unit"] == pytest.approx((hi - budget["objective"]) / 30.0)
    assert budget["binding"] and budget["forward_per_unit"] > 0
    assert table.loc["limits.it_power_mw", "unit"] == "MW"
    assert not math.isnan(table.loc["limits.it_power_mw", "backward_per_unit"])


# --- CLI -----------------------------------------------------------------------------

def test_cli_sweep_json_contract(tmp_path):
    res = CliRunner().invoke(app, ["sweep", str(SMALL), "--vary", "limits.it_power_mw=3,6",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert {k: doc[k] for k in ("scenarios", "solved", "failed", "backend")} == {
        "scenarios": 2, "solved": 2, "failed": 0, "backend": "local"}
    table = pd.read_parquet(doc["table"])
    assert {"limits.it_power_mw", "status", "objective", "gpus", "switch", "tiers", "it_mw",
            "capex_usd", "effective_tokens_per_s"} <= set(table.columns)


def test_cli_bad_path_exit_3(tmp_path):
    res = CliRunner().invoke(app, ["sweep", str(SMALL), "--vary", "limits.nope=1,2",
                                   "--out", str(tmp_path), "--json"])
    assert res.exit_code == 3 and "limits.nope" in res.output and res.stdout.strip() == ""


def test_cli_sweep_file(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(f'instance = "{SMALL.resolve()}"\nname = "t"\n'
                    '[vary]\n"limits.budget_usd" = [1e8, 2e8]\n')
    res = CliRunner().invoke(app, ["sweep", "--file", str(spec), "--out", str(tmp_path / "o"),
                                   "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["scenarios"] == 2


# --- found by review 6 (instances in tests/data/review) ------------------------------

REVIEWED = Path(__file__).resolve().parent / "data" / "review"


@pytest.mark.parametrize("instance, vary, shared", [
    # b1 lists no halls: its power decides its halls (count, positions, block slots);
    # b2 lists its halls: its power is a limit, shared
    ("sweep-default-halls-building-power.json",
     {"limits.it_power_mw": "2.76", "limits.budget_usd": "97423959,1e9",
      "site.buildings[1].it_power_mw": "0.451,0.926",
      "site.buildings[2].it_power_mw": "0.4,0.732"}, 4),
    # pods_per = "hall" on derived halls: 26 and 30 MW give a building a second hall
    ("sweep-default-halls-pods-per-hall.json", {"site.buildings[0].it_power_mw": "24,26,30"},
     1),
    # the single solve's ladder stops at the budget, the sweep's reaches the next size
    ("binding-next-size-past-budget.json",
     {"limits.it_power_mw": "2.646", "limits.budget_usd": "65320764,24313626"}, 2),
])
def test_review6_sweeps_solve_as_single_solves(tmp_path, instance, vary, shared):
    """A building that lists no halls has them derived from its power
    (solver.schema.site.default_halls), so a scenario that varies that power cannot use
    candidates built on the base document's halls; and the binding limits judge the
    next size whether or not the limits cut the ladder before it: a sweep's rows,
    binding column included, are the single solves'. The scenarios that keep the base's
    building power (`shared` of them) still share the candidates."""
    table = sweep(REVIEWED / instance, vary, out=tmp_path)
    assert (table["status"] == "optimal").all(), table["error"].tolist()
    expected = pd.DataFrame([single_solve({p: row[p] for p in vary}, REVIEWED / instance)
                             for _, row in table.iterrows()])
    assert_rows_equal(table, expected)
    assert table["binding"].fillna("").tolist() == expected["binding"].tolist()
    assert table["verified"].all()
    assert table.attrs["shared_candidates"] == shared


def test_building_binds_when_the_next_size_is_past_the_budget():
    """The chosen 32 nodes of H100 (one scalable unit, 0.362 MW in b0 of 0.665 MW) are
    under $24.3M; the next size, 64 nodes, is over it and needs two units, about
    0.708 MW, in the one building: the budget and b0's power both stop growth, although
    the ladder stops at the budget before 64 nodes."""
    doc = read_document(REVIEWED / "binding-next-size-past-budget.json")
    doc["limits"] |= {"it_power_mw": 2.646, "budget_usd": 24313626}
    s = solve(instance_from_dict(doc), place=False).summary
    rows = {b["name"]: b for b in s["binding"]}
    assert s["design"]["nodes"] == 32
    building = rows["site.buildings[b0].it_power_mw"]
    assert building["scalable_units"] == 1 and building["limit"] - building["value"] < 0.708 / 2
    assert {n for n, b in rows.items() if b["binding"]} == {
        "limits.budget_usd", "site.buildings[b0].it_power_mw"}


def test_empty_values_are_refused_not_read_as_absent(tmp_path):
    """Was: a sweep file's empty [vary] list ran 0 scenarios with exit 0, and an empty
    --backend or --name fell back to the default."""
    sweep_file = tmp_path / "empty.toml"
    sweep_file.write_text(f'instance = "{SMALL.resolve()}"\n[vary]\n"limits.it_power_mw" = []\n')
    result = CliRunner().invoke(app, ["sweep", "--file", str(sweep_file), "--out",
                                      str(tmp_path / "a")])
    assert result.exit_code == 3 and "limits.it_power_mw: no values" in result.output
    for flag in ("--backend", "--name"):
        result = CliRunner().invoke(app, ["sweep", str(SMALL), "--vary", "limits.it_power_mw=4",
                                          flag, "", "--out", str(tmp_path / "b")])
        assert result.exit_code == 2 and f"{flag}:" in result.output
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
