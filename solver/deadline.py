"""One wall-clock budget for a whole command: ``--time-limit`` covers every stage.

A ``Deadline`` is made once where a command starts and travels with the run's
``SolveOptions`` through the pipeline (prepare, candidates, design MILP, diagnosis,
check, report, placement, output files). Each stage announces itself with ``enter``,
which raises ``TimeLimitReached`` once the budget is spent; the back-ends give HiGHS and
CP-SAT at most the ``remaining`` time. The CLI adds a hard stop (``alarm``): a stage that
overruns inside Python (a long candidate ladder, a picture) is interrupted at the
deadline, so a command always answers, exit 5, naming the limit and the stage.
"""

from __future__ import annotations

import contextlib
import math
import signal
import threading
import time
from collections.abc import Iterator

from solver.errors import NoSolution


class TimeLimitReached(NoSolution):
    """The command's wall-clock budget is spent (exit 5, no solution within the limits)."""


class Deadline:
    """A wall-clock budget of ``limit_s`` seconds from its creation (``math.inf``: none)
    and the stage now running."""

    def __init__(self, limit_s: float = math.inf, flag: str = "--time-limit"):
        self.limit_s = limit_s
        self.flag = flag
        self.stage = "start"
        self._end = time.monotonic() + limit_s

    def remaining(self) -> float:
        """Seconds left (never negative; ``math.inf`` without a limit)."""
        return max(self._end - time.monotonic(), 0.0)

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def enter(self, stage: str) -> None:
        """Start ``stage``; raise ``TimeLimitReached`` if the budget is already spent."""
        self.stage = stage
        if self.expired():
            raise self.reached()

    def cap(self, seconds: float) -> float:
        """``seconds`` limited to what is left (a solver's own time limit)."""
        return min(seconds, self.remaining())

    def reached(self) -> TimeLimitReached:
        return TimeLimitReached(
            f"{self.flag} {self.limit_s:g} s spent during {self.stage}; no answer within the "
            f"limit (raise {self.flag} to give the command more time)")

    @contextlib.contextmanager
    def alarm(self) -> Iterator[None]:
        """Interrupt the Python code running at the deadline with ``TimeLimitReached`` (the
        CLI's hard stop; main thread only, and a no-op without a limit). Native solver calls
        are not interrupted: they get ``cap``-ped time limits instead."""
        usable = (math.isfinite(self.limit_s) and hasattr(signal, "setitimer")
                  and threading.current_thread() is threading.main_thread())
        if not usable:
            yield
            return

        def on_alarm(signum, frame):
            raise self.reached()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, max(self.remaining(), 1e-3))
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
