"""Ctrl-C and SIGTERM in the `clusterplan` command: one line and exit 130 (solver.cli).

While the command runs (`handling`), both signals are recorded and raised as
KeyboardInterrupt. A library can turn that KeyboardInterrupt into its own error (an
extension module whose import is interrupted midway raises ``ImportError:
initialization failed``, the KeyboardInterrupt its cause): `caused_by_interruption` tells
such an error from a real one, so that it ends the command as the interruption rather
than as an internal error, and never becomes a sweep's error row
(`reraise_interruption`). This module imports nothing heavy: the command's script
installs the handling before it imports the CLI (solver.cli_main).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_interrupted = threading.Event()
"""Set by the handler: the command has been interrupted."""


def _interrupt(signum, frame) -> None:
    _interrupted.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Ctrl-C and SIGTERM recorded and raised as KeyboardInterrupt while the block runs
    (main thread), then the previous handlers back. A signal the process started with
    ignored (a background job of a non-interactive shell ignores Ctrl-C) stays ignored;
    inside another `handling` block nothing changes."""
    _interrupted.clear()
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    previous = {sig: signal.getsignal(sig) for sig in defaults}
    installed = [sig for sig, default in defaults.items() if previous[sig] == default]
    try:
        for sig in installed:
            signal.signal(sig, _interrupt)
        yield
    finally:
        for sig in installed:
            signal.signal(sig, previous[sig])


def caused_by_interruption(exc: BaseException) -> bool:
    """Whether `exc` is or came from a Ctrl-C or SIGTERM: one was recorded (`handling`),
    or a KeyboardInterrupt is in its chain of causes and contexts."""
    if _interrupted.is_set():
        return True
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def reraise_interruption(exc: BaseException) -> None:
    """Raise KeyboardInterrupt from `exc` when it came from an interruption: for a
    catch-all that turns errors into results (a sweep's error rows)."""
    if caused_by_interruption(exc):
        raise KeyboardInterrupt from exc
