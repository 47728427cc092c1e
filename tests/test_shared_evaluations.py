"""Exact evaluations shared between a sweep's worker processes (solver.shared_evaluations):
each computed once over the processes, the same values everywhere, claims of ended
processes taken over, and a sweep whose workers share them gives local's rows."""

from __future__ import annotations

import errno
import multiprocessing
import os
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from models.design import evaluate
from models.design.candidates import build_design_data, refine
from models.design.evaluate import Memo, default_evaluators
from solver import mapped_pickle, shared_evaluations, sweep, sweeps
from solver.loading import INSTANCES_DIR, instance_from_dict, read_document
from solver.prepare import prepare
from solver.shared_evaluations import SharedEvaluations, make_folder

KEYS = [("h100", i) for i in range(120)]


def square_all(folder: str, log: str, out: str) -> None:
    """In a process: every key of KEYS through a memo of `folder`, in the order of its
    rank (the second process last first, as exact_in_turn does), each computed one
    appended to `log`; the values to `out`."""
    memo = SharedEvaluations()
    memo.use(folder)
    order = KEYS[::-1] if memo.rank % 2 else KEYS

    def evaluate(key: tuple) -> int:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{key[1]}\n")
        time.sleep(0.002)
        return key[1] ** 2

    values = {key: memo("perf", key, lambda key=key: evaluate(key)) for key in order}
    Path(out).write_text(repr(sorted(values.items())), encoding="utf-8")


def in_two_processes(target, folder: str, tmp_path: Path) -> tuple[list[list[int]], list[str]]:
    """target(folder, log, out) in two forked processes side by side: what each logged
    (the keys it computed) and what each wrote to its `out`."""
    context = multiprocessing.get_context("fork")
    logs = [tmp_path / f"log-{i}" for i in range(2)]
    outs = [tmp_path / f"out-{i}" for i in range(2)]
    procs = [context.Process(target=target, args=(folder, str(log), str(out)))
             for log, out in zip(logs, outs, strict=True)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    return ([[int(line) for line in log.read_text().split()] if log.exists() else []
             for log in logs], [out.read_text() for out in outs])


def test_two_processes_compute_each_evaluation_once(tmp_path):
    folder = make_folder(tmp_path)
    computed, outs = in_two_processes(square_all, folder, tmp_path)
    assert sorted(computed[0] + computed[1]) == [key[1] for key in KEYS]  # each once
    assert all(computed)  # and both took part
    expected = repr(sorted((key, key[1] ** 2) for key in KEYS))
    assert outs == [expected, expected]
    assert sorted(p.name for p in Path(folder).glob("rank-*")) == ["rank-0", "rank-1"]


GPU_COUNTS = [8 * n for n in (1000, 1001, 1002, 1003, 1004, 1005)]


def feasible_all(folder: str, log: str, out: str) -> None:
    """In a process: the perf model's feasible sets at GPU_COUNTS (in the order of its
    rank) through evaluators whose memo is `folder`, each computed one appended to
    `log`; the sets' sizes to `out`."""
    memo = SharedEvaluations()
    memo.use(folder)
    inputs = prepare(instance_from_dict(read_document(INSTANCES_DIR / "llama3-16k.toml")))
    computed = evaluate.feasible_candidates

    def logged(workload, system, gpus):
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"{gpus}\n")
        return computed(workload, system, gpus)

    evaluate.feasible_candidates = logged
    throughput = default_evaluators(inputs, memo).throughput
    system = inputs.configs[0].gpu
    order = GPU_COUNTS[::-1] if memo.rank % 2 else GPU_COUNTS
    sizes = {g: len(throughput.feasible(inputs, system, g).kept) for g in order}
    Path(out).write_text(repr(sorted(sizes.items())), encoding="utf-8")


def test_feasible_sets_are_computed_once_between_processes(tmp_path):
    """The perf model's feasible sets (~15 ms each, shared by the exact evaluations of
    one GPU count on every network) go through the memo: two processes compute each
    once between them and read the same sets."""
    computed, outs = in_two_processes(feasible_all, make_folder(tmp_path), tmp_path)
    assert sorted(computed[0] + computed[1]) == GPU_COUNTS
    assert outs[0] == outs[1]


@pytest.mark.parametrize("claimant", ["ended", "this"])
def test_a_claim_of_an_ended_process_is_taken_over(tmp_path, claimant):
    """A claim without a value whose process has ended, or of this process (a time limit
    struck between its claim and its evaluation), is taken over at once."""
    memo = SharedEvaluations()
    memo.use(make_folder(tmp_path))
    ended = multiprocessing.get_context("fork").Process(target=lambda: None)
    ended.start()
    ended.join()
    memo("perf", ("a",), lambda: 1)  # learn the file names from the first claim
    claim = next(Path(memo.folder).glob("*.claim"))
    name = claim.name.removesuffix(".claim")
    (Path(memo.folder) / name).unlink()  # as if its claimant had never published
    if claimant == "ended":
        claim.write_text(f"{socket.gethostname()} {ended.pid}")
    start = time.monotonic()
    assert memo("perf", ("a",), lambda: 2) == 2
    assert time.monotonic() - start < 5
    assert claim.read_text() == f"{socket.gethostname()} {os.getpid()}"


def holding(folder: Path, key: tuple, seconds: float, value: object) -> threading.Thread:
    """Another memo of `folder` computing `key` for `seconds` (then publishing `value`)
    in a thread, once it holds the claim."""
    other = SharedEvaluations()
    other.use(str(folder))
    held = threading.Event()

    def slow() -> object:
        held.set()
        time.sleep(seconds)
        return value

    thread = threading.Thread(target=lambda: other("perf", key, slow))
    thread.start()
    held.wait(5)
    return thread


def test_a_claimant_publishing_is_waited_for(tmp_path):
    memo = SharedEvaluations()
    memo.use(make_folder(tmp_path))
    thread = holding(memo.folder, ("k", 1), 0.3, "theirs")
    assert memo("perf", ("k", 1), lambda: "mine") == "theirs"  # never computed here
    thread.join()


def test_an_error_releases_the_claim_and_a_lost_folder_computes_here(tmp_path, monkeypatch):
    memo = SharedEvaluations()
    memo.use(make_folder(tmp_path))

    def fails() -> int:
        raise ValueError("no")

    with pytest.raises(ValueError):
        memo("perf", ("x",), fails)
    assert not list(Path(memo.folder).glob("*.claim"))
    assert memo("perf", ("x",), lambda: 3) == 3
    # a claim held past CLAIM_WAIT_S: computed here, unshared
    monkeypatch.setattr(shared_evaluations, "CLAIM_WAIT_S", 0.05)
    thread = holding(memo.folder, ("y",), 0.5, 4)
    assert memo("perf", ("y",), lambda: 5) == 5
    thread.join()
    for path in Path(memo.folder).iterdir():
        path.unlink()
    Path(memo.folder).rmdir()  # the folder gone: every evaluation computed here
    assert memo("perf", ("z",), lambda: 6) == 6


def test_a_failed_publication_or_claim_computes_here_and_holds_no_one(tmp_path, monkeypatch):
    """A folder that fails (full, too large a file) never fails an evaluation nor leaves a
    claim that others would wait on: a value not published releases its claim, and a
    claim that cannot be made computes the value here."""
    memo = SharedEvaluations()
    memo.use(make_folder(tmp_path))

    def no_room(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shared_evaluations.mapped_pickle, "write", no_room)
    assert memo("perf", ("a",), lambda: 1) == 1
    assert not list(Path(memo.folder).glob("*.claim"))  # released
    assert not list(Path(memo.folder).glob(".tmp-*"))  # and nothing half written
    monkeypatch.undo()
    other = SharedEvaluations()
    other.use(memo.folder)
    start = time.monotonic()
    assert other("perf", ("a",), lambda: 1) == 1 and time.monotonic() - start < 1
    monkeypatch.setattr(shared_evaluations.os, "link", lambda *args: no_room())
    assert memo("perf", ("b",), lambda: 2) == 2  # no claim made: computed here
    assert not list(Path(memo.folder).glob(".tmp-*"))


def test_a_published_value_that_cannot_be_mapped_is_read_all_the_same(tmp_path,
                                                                       monkeypatch):
    """Out of file descriptors or mappings, a published value is read into memory: the
    reader gets it (it once found the claim taken and the value there, for ever)."""
    folder = make_folder(tmp_path)
    publisher, reader = SharedEvaluations(), SharedEvaluations()
    publisher.use(folder)
    reader.use(folder)
    assert publisher("feasible", ("k",), lambda: {"a": np.arange(3)})["a"][2] == 2

    def out_of_descriptors(*args, **kwargs):
        raise OSError(errno.EMFILE, "Too many open files")

    def spinning(*args):
        raise TimeoutError("the reader did not get the published value in 10 s")

    monkeypatch.setattr(mapped_pickle.mmap, "mmap", out_of_descriptors)
    previous = signal.signal(signal.SIGALRM, spinning)
    signal.alarm(10)
    try:
        value = reader("feasible", ("k",), lambda: pytest.fail("computed again"))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert list(value["a"]) == [0, 1, 2]


def test_a_folder_not_made_for_sharing_shares_nothing(tmp_path):
    memo = SharedEvaluations()
    memo.use(str(tmp_path))  # no marker: e.g. a path on another machine
    assert memo.folder is None and memo.rank == 0
    memo.use(None)
    assert memo.folder is None
    assert memo("perf", ("a",), lambda: 7) == 7
    assert not list(tmp_path.iterdir())


class SecondRank(Memo):
    rank = 1


def test_refine_gives_the_same_data_in_either_order():
    """exact_in_turn evaluates a round's candidates fewest GPUs first, or most first for
    an odd rank: the refined data are the same (at 12 MW, 36 candidates of 3 GPU counts
    to refine)."""
    doc = read_document(INSTANCES_DIR / "llama3-16k.toml")
    doc["limits"]["it_power_mw"] = 12.0
    inputs = prepare(instance_from_dict(doc))
    refined = []
    for memo in (Memo(), SecondRank()):
        evaluators = default_evaluators(inputs, memo)
        data = build_design_data(inputs, evaluators)[0]
        refined.append(refine(inputs, evaluators, data))
    assert refined[0] == refined[1]
    assert sum(k.exact for k in refined[0].candidates) > sum(
        k.exact for k in build_design_data(inputs, default_evaluators(inputs))[0].candidates)


@pytest.mark.parametrize("backend", ["processes", "dask"])
def test_workers_share_their_exact_evaluations(tmp_path, monkeypatch, backend):
    """A sweep on the perf and reliability models with two process workers or a
    two-worker LocalCluster: its rows are local's, and the workers refined through one
    folder, each evaluation claimed once, by both workers."""
    kept: list[str] = []

    def kept_folder(parent: str) -> str:
        kept.append(make_folder(tmp_path))
        return kept[-1]

    monkeypatch.setattr(sweeps, "make_folder", kept_folder)
    vary = {"limits.it_power_mw": "8:14:4"}  # each refines candidates
    instance = INSTANCES_DIR / "llama3-16k.toml"
    local = sweep(instance, vary, out=tmp_path / "local")
    shared = sweep(instance, vary, out=tmp_path / backend, backend=backend, workers=2)
    columns = ["id", *vary, "status", "objective", "gpus", "nodes", "spare_nodes",
               "capex_usd", "goodput", "mfu", "effective_tokens_per_s"]
    assert shared[columns].equals(local[columns])
    assert shared["status"].eq("optimal").all()
    claims = list(Path(kept[0]).glob("*.claim"))
    assert claims and all(c.with_suffix("").exists() for c in claims)
    assert {p.name for p in Path(kept[0]).glob("rank-*")} == {"rank-0", "rank-1"}
    assert len({c.read_text() for c in claims}) <= 2  # by the two workers


def test_removing_the_scratch_folder_never_raises(tmp_path, monkeypatch):
    """A stopped Dask sweep's worker may still write an evaluation as the coordinator
    removes the folder: what is left stays (a later sweep clears it), and no OSError
    replaces the sweep's own error."""
    monkeypatch.setattr(sweeps, "SCRATCH", str(tmp_path))
    monkeypatch.setattr(sweeps, "SCRATCH_FREE_BYTES", 1)
    real_rmdir = os.rmdir

    def late_write(path, *, dir_fd=None):  # the worker's file lands just before rmdir
        where = Path(f"/proc/self/fd/{dir_fd}", path) if dir_fd is not None else Path(path)
        (where / "late.pickle").write_bytes(b"x")
        real_rmdir(path, dir_fd=dir_fd)

    scratch = sweeps.scratch_folder()
    (Path(scratch.name) / "evaluations").mkdir()
    monkeypatch.setattr(os, "rmdir", late_write)
    scratch.cleanup()
    monkeypatch.undo()
    assert (Path(scratch.name) / "evaluations" / "late.pickle").exists()


def test_scratch_folder_is_memory_backed_and_clears_what_killed_sweeps_left(
        tmp_path, monkeypatch):
    """A sweep's files go to SCRATCH when it has room, else to the temporary folder; a
    folder whose sweep process has ended is removed, one whose process runs is kept."""
    ended = multiprocessing.get_context("fork").Process(target=lambda: None)
    ended.start()
    ended.join()
    monkeypatch.setattr(sweeps, "SCRATCH", str(tmp_path))
    monkeypatch.setattr(sweeps, "SCRATCH_FREE_BYTES", 1)
    left = tmp_path / f"{sweeps.SCRATCH_PREFIX}{ended.pid}-abc"
    running = tmp_path / f"{sweeps.SCRATCH_PREFIX}{os.getpid()}-def"
    for folder in (left, running):
        (folder / "evaluations").mkdir(parents=True)
    with sweeps.scratch_folder() as tmp:
        assert Path(tmp).parent == tmp_path
        assert Path(tmp).name.startswith(f"{sweeps.SCRATCH_PREFIX}{os.getpid()}-")
        assert not left.exists() and running.exists()
    monkeypatch.setattr(sweeps, "SCRATCH_FREE_BYTES", 2**62)  # no room: the temporary folder
    with sweeps.scratch_folder() as tmp:
        assert Path(tmp).parent == Path(tempfile.gettempdir())
