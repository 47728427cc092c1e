"""One wall-clock budget for a whole command: ``--time-limit`` covers every stage.

A ``Deadline`` is made once where a command starts and travels with the run's
``SolveOptions`` through the pipeline (prepare, candidates, design MILP, diagnosis,
check, report, placement, output files). Each stage announces itself with ``enter``,
which raises ``TimeLimitReached`` once the budget is spent; the back-ends give HiGHS and
CP-SAT at most the ``remaining`` time. The CLI adds a hard stop (``alarm``): a stage that
overruns inside Python (a long candidate ladder, a picture) is interrupted at the
deadline, so a command always answers, exit 5, naming the limit and the stage. The
design MILP's solver call is let finish under its own capped limit (``deferred``:
Pyomo captures its output, which an interruption there breaks), and a library that
wraps the interruption in its own error still answers as the time limit
(``time_limit_in``), and Pyomo's log of a model construction that the stop (or Ctrl-C)
interrupted is dropped (`QuietInterruptions`): the command's own message says it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator

from solver.errors import NoSolution

MAX_TIME_LIMIT_S = 1e7
"""Longest --time-limit a command or a sweep's scenario takes [s] (~116 days; beyond,
the deadline's clock arithmetic overflows the platform's time_t)."""


class TimeLimitReached(NoSolution):
    """The command's wall-clock budget is spent (exit 5, no solution within the limits)."""


def time_limit_in(exc: BaseException) -> TimeLimitReached | None:
    """The hard stop's ``TimeLimitReached`` behind `exc`, when a library caught it and
    raised its own error from it (the standard library's ``inspect.getfullargspec``, used
    by Pyomo as it builds a model, turns any error into ``TypeError: unsupported
    callable``); None when `exc` is not the time limit's."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, TimeLimitReached):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return None


class QuietInterruptions(logging.Filter):
    """Drops a log record made while the hard stop or Ctrl-C unwinds through a library:
    Pyomo logs ``ERROR: Constructing component 'x' from data=None failed:
    TimeLimitReached`` before it raises the error on, and the command then answers with
    its own message (exit 5, or the CLI's 'interrupted'). Records of any other error pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = sys.exc_info()[1]  # the error the library is handling as it logs
        return exc is None or not (isinstance(exc, KeyboardInterrupt) or time_limit_in(exc))


PYOMO_LOGGER = logging.getLogger("pyomo.core")
"""Where Pyomo logs a failed component construction (pyomo.core.base.block)."""


class Deadline:
    """A wall-clock budget of ``limit_s`` seconds from its creation (``math.inf``: none)
    and the stage now running."""

    def __init__(self, limit_s: float = math.inf, flag: str = "--time-limit"):
        self.limit_s = limit_s
        self.flag = flag
        self.stage = "start"
        self._end = time.monotonic() + limit_s
        self._held = 0  # `deferred` blocks open
        self._struck = False  # the hard stop struck while held

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
        are not interrupted: they get ``cap``-ped time limits instead. Meanwhile Pyomo's log
        of a model construction it interrupts is dropped (`QuietInterruptions`)."""
        usable = (math.isfinite(self.limit_s) and hasattr(signal, "setitimer")
                  and threading.current_thread() is threading.main_thread())
        if not usable:
            yield
            return
        quiet = QuietInterruptions()

        def on_alarm(signum, frame):
            if self._held:
                self._struck = True
                return
            raise self.reached()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        try:
            PYOMO_LOGGER.addFilter(quiet)
            signal.setitimer(signal.ITIMER_REAL, max(self.remaining(), 1e-3))
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            PYOMO_LOGGER.removeFilter(quiet)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold the hard stop (`alarm`) while the block runs, and raise
        ``TimeLimitReached`` at its end if it struck meanwhile: for a native solver call
        under Pyomo's capture of its output, which an exception raised midway leaves
        broken (reader threads failing, file descriptors closed twice, the error
        wrapped). The block must end soon after the deadline on its own: the solver gets a
        `cap`-ped time limit."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held and self._struck:  # also over an error of the block's
                self._struck = False
                raise self.reached()
