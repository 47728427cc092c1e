"""Ctrl-C and SIGTERM in the `clusterplan` command: one line and exit 130 (solver.cli).

While the command runs (`handling`, from its first import on: solver.cli_main), both
signals are recorded and raised as KeyboardInterrupt. A library can turn that
KeyboardInterrupt into its own error (an extension module whose import is interrupted
midway raises ``ImportError: initialization failed``, the KeyboardInterrupt its
cause): while the command runs, an error after a recorded interruption, or with a
KeyboardInterrupt among its causes and contexts, is the interruption
(`caused_by_interruption`). The block raises such an error as KeyboardInterrupt, and a
sweep's catch-alls (solver.sweeps) never make it an error row (`reraise_interruption`).
Outside the block (an API process, a sweep's worker processes) nothing is recorded and
nothing is reclassified. This module imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

INTERRUPTED_EXIT = 130
"""Exit code after Ctrl-C or SIGTERM (128 + SIGINT, the shell's convention)."""
INTERRUPTED_NOTE = "(output files are written as whole sets: none is half-written)"
"""What the command says after 'interrupted'."""

_depth = 0
"""`handling` blocks open in the main thread."""
_interrupted = False
"""Set by the handler (a plain flag: a lock taken in a signal handler can deadlock)."""


def _interrupt(signum, frame) -> None:
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Ctrl-C and SIGTERM recorded and raised as KeyboardInterrupt while the block runs,
    and an error that came from one raised as KeyboardInterrupt when it leaves the
    block; then the previous handlers back and the record cleared. A handler that is
    not Python's default stays (a background job of a non-interactive shell starts with
    Ctrl-C ignored). Only the outermost block of the main thread installs handlers and
    clears the record; elsewhere the block changes nothing."""
    global _depth, _interrupted
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    previous = {sig: signal.getsignal(sig) for sig in defaults}
    outermost = _depth == 0
    installed = [sig for sig, default in defaults.items()
                 if outermost and previous[sig] == default]
    if outermost:
        _interrupted = False
    _depth += 1
    try:
        for sig in installed:
            signal.signal(sig, _interrupt)
        yield
    except Exception as exc:
        reraise_interruption(exc)
        raise
    finally:
        _depth -= 1
        for sig in installed:
            signal.signal(sig, previous[sig])
        if outermost:
            _interrupted = False


def caused_by_interruption(exc: BaseException) -> bool:
    """Whether `exc` came from a Ctrl-C or SIGTERM while a `handling` block runs: one was
    recorded, or a KeyboardInterrupt is among its causes and contexts (contexts too,
    suppressed or not, unlike solver.deadline.time_limit_in: a library's ``raise
    ImportError(...) from None`` inside its interrupted import hides it there)."""
    if _depth == 0:
        return False
    if _interrupted:
        return True
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def reraise_interruption(exc: BaseException) -> None:
    """Raise KeyboardInterrupt from `exc` when it came from an interruption
    (`caused_by_interruption`): for a catch-all that turns errors into results."""
    if caused_by_interruption(exc):
        raise KeyboardInterrupt from exc
