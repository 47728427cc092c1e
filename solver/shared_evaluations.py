"""Exact evaluations shared by the worker processes of a sweep on one machine.

Every scenario of a sweep refines the shared candidates near its own optimum
(models.design.candidates.refine): the perf model's search and the reliability model at
sizes the candidate build only interpolated. Most scenarios need most of the same
evaluations (on the default 100-scenario sweep ~1,240 of them, ~3 s of CPU, and each
half of the scenarios needs ~90% of them), so two workers that each kept their own
caches computed nearly all of them twice. The perf model's feasible sets go the same
way (~130 on that sweep, ~15 ms of CPU each against ~1 ms to write and read one): the
exact evaluations of one GPU count on different networks share one, and two workers
computed ~30 of them twice. `SharedEvaluations` is the evaluators' memo
(models.design.evaluate.Memo) in a folder both can read: an evaluation is computed by
the first process to claim it and read by the others.

Protocol, per (kind, key), named by the SHA-256 of its pickle (keys are dataclasses,
tuples, strings and numbers, which pickle alike in every process):
- ``<name>`` holds the value once published (written to a temporary file and renamed:
  never half a value), its arrays mapped by the processes that read it rather than
  copied (solver.mapped_pickle: a feasible set is ~2 MB of arrays);
- ``<name>.claim`` is created by the process that computes it, holding ``host pid``
  (linked into place from a written file: it exists only if no other claim does, and
  never empty); a process that finds it waits for the value, and takes the evaluation
  over when the claimant has ended without publishing (its claim removed on an error,
  the scenario's time limit or a failed publication, or its process gone), when the
  claim is its own (left by a time limit that struck in the instant between a claim
  and its evaluation), or after CLAIM_WAIT_S (another host, a stuck process, or another
  live process's claim left by such a time limit).
Any failure of the folder itself (removed, full, unwritable) computes the evaluation in
the process, as without sharing. A takeover reads a dead claimant's claim, then removes
it: another waiter's new claim, made in between, can be removed too, and the evaluation
is then computed twice (the same value). Processes register a rank (``rank-<i>``, created
exclusively) that orders their refine rounds (models.design.candidates.exact_in_turn).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from models.design.evaluate import Memo
from solver import mapped_pickle
from solver.forked import process_alive

T = TypeVar("T")
MARKER = "clusterplan-shared-evaluations"
"""A file that marks a folder as made for sharing (a worker that cannot see it, on
another machine, shares nothing)."""
CLAIM_WAIT_S = 60.0
"""Longest wait for another process's evaluation before computing it here."""
POLL_S = 0.001
_MISSING = object()
_EVALUATING: set[str] = set()
"""Names of the evaluations this process is computing now, in any of its threads."""


def make_folder(parent: str | Path) -> str:
    """A new folder for shared evaluations inside `parent`, marked (MARKER)."""
    folder = Path(tempfile.mkdtemp(prefix="evaluations-", dir=parent))
    (folder / MARKER).touch()
    return str(folder)


class SharedEvaluations(Memo):
    """The memo of one process: unshared (every evaluation computed here) until `use`
    gives it a folder made by `make_folder` that this process can see."""

    def __init__(self) -> None:
        self.folder: Path | None = None
        self.rank = 0
        self._host = socket.gethostname()

    def use(self, folder: str | None) -> None:
        """Share through `folder` from now on (None, or a folder this process cannot see:
        share nothing); a process registers its rank in a folder once."""
        path = Path(folder) if folder else None
        if path == self.folder:
            return
        self.folder, self.rank = None, 0
        if path is None or not (path / MARKER).is_file():
            return
        for rank in range(1024):
            try:
                os.close(os.open(path / f"rank-{rank}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
            except OSError:
                return
            self.folder, self.rank = path, rank
            return

    def __call__(self, kind: str, key: tuple, evaluate: Callable[[], T]) -> T:
        if self.folder is None:
            return evaluate()
        name = hashlib.sha256(pickle.dumps((kind, key), pickle.HIGHEST_PROTOCOL)).hexdigest()
        value_path, claim = self.folder / name, self.folder / f"{name}.claim"
        while True:
            value = _read(value_path)
            if value is not _MISSING:
                return value
            held = self._claim(claim)
            if held is None:  # the folder failed: computed here, unshared
                return evaluate()
            if held:
                break
            if not self._awaited(value_path, claim):
                return evaluate()  # waited CLAIM_WAIT_S: computed here, unshared
        try:
            _EVALUATING.add(name)
            value = evaluate()
            published = _publish(value_path, value)
        except BaseException:  # an error, or the scenario's time limit: not ours now
            claim.unlink(missing_ok=True)
            raise
        finally:
            _EVALUATING.discard(name)
        if not published:  # the others compute it themselves
            claim.unlink(missing_ok=True)
        return value

    def _claim(self, claim: Path) -> bool | None:
        """Claim `claim` for this process: True, or False when another process holds it,
        None when the folder fails. The claim appears with its content ("host pid"),
        linked from a written temporary file, so no process ever reads an empty one."""
        try:
            fd, tmp = tempfile.mkstemp(dir=claim.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "w") as handle:
                    handle.write(f"{self._host} {os.getpid()}")
                os.link(tmp, claim)
            finally:
                os.unlink(tmp)
        except FileExistsError:
            return False
        except OSError:
            return None
        return True

    def _awaited(self, value_path: Path, claim: Path) -> bool:
        """Wait while another process holds `claim` without publishing `value_path`: True
        once the value is there or the claim is gone (removed, or taken from a process
        of this host that has ended); False after CLAIM_WAIT_S."""
        start = time.monotonic()
        polls = 0
        while not value_path.exists():
            polls += 1
            if polls % 64 == 0 and self._claimant_ended(claim):
                claim.unlink(missing_ok=True)
                return True
            if not claim.exists():
                return True
            if time.monotonic() - start > CLAIM_WAIT_S:
                return False
            time.sleep(POLL_S)
        return True

    def _claimant_ended(self, claim: Path) -> bool:
        """Whether `claim` is held by a process of this host that has ended, or by this
        process for an evaluation it is not computing (`_EVALUATING`): left by an
        interruption (the scenario's time limit) between the claim and the evaluation."""
        try:
            host, pid = claim.read_text().split()
        except (OSError, ValueError):  # gone, or not yet written
            return False
        if host != self._host:
            return False
        if int(pid) == os.getpid():
            return claim.name.removesuffix(".claim") not in _EVALUATING
        return not process_alive(int(pid))


def _read(path: Path) -> object:
    """The value published at `path` (its arrays mapped from the file,
    solver.mapped_pickle), or _MISSING."""
    try:
        return mapped_pickle.read(path)
    except OSError:
        return _MISSING


def _publish(path: Path, value: object) -> bool:
    """Write `value` to `path` (mapped_pickle.write: a temporary file beside it, renamed
    into place): whether it is there (False: the folder failed, e.g. full; nothing is
    left of the write)."""
    try:
        mapped_pickle.write(path, value)
    except OSError:
        return False
    return True
