"""Work in a forked process on the second core while this process goes on (the default
solve: half of the candidate designs; bom.xlsx and floorplan.png beside the other
outputs), and whether a process runs (`process_alive`)."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs (or is a zombie not yet reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the duration (then as it was). Building
    or unpickling the shared candidates makes ~1M objects that all live on, and a full
    collection scans every live object: on the default instance the collector took 40%
    of the build's CPU (20.2 s -> 10.3 s without it, the same peak memory, 10 objects of
    cyclic garbage) and 65% of unpickling it (2.6 s -> 0.9 s)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def forked(work: Callable[[], T]) -> Iterator[Callable[[], T]]:
    """Start ``work()`` in a forked process; the block gets the call that waits for its
    result (pickled back through a pipe) and raises what ``work`` raised (the same
    exception when it pickles, else a RuntimeError naming it). Leaving the block ends a
    process still running that has not sent its result (the block raised, or never
    waited); one that has is left to exit. Without fork (not POSIX)
    ``work`` runs when waited for."""
    if "fork" not in multiprocessing.get_all_start_methods():
        yield work
        return
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # ended quietly, not as the CLI is
        try:
            result = (True, work())
        except BaseException as exc:  # reported to the parent, which raises it
            result = (False, exc)
        try:
            send.send(result)
        except Exception as exc:  # the result or the exception does not pickle
            send.send((False, RuntimeError(f"{type(result[1]).__name__}: {result[1]} "
                                           f"({exc})")))

    process = context.Process(target=child, daemon=True)
    process.start()
    send.close()

    received = []

    def wait() -> T:
        try:
            with gc_paused():  # unpickling many objects would run full collections
                ok, value = receive.recv()
            received.append(True)
        except EOFError:  # ended without a word (killed)
            process.join()
            raise RuntimeError(f"a second process ended with code {process.exitcode}") from None
        if not ok:
            raise value
        return value

    try:
        yield wait
    finally:
        if process.is_alive() and not received:  # a process that has sent only exits:
            process.terminate()  # ending it then would raise in its SIGTERM handler
        process.join()
        receive.close()


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
