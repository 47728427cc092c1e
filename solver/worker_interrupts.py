"""Ctrl-C and a sweep's worker processes on this machine.

Ctrl-C sends SIGINT to the terminal's whole process group, the sweep's workers and their
fork server included. Your process handles it: it ends the pool's workers or closes the
LocalCluster, and the CLI says the sweep was interrupted. A worker or server that took
the signal itself printed a KeyboardInterrupt traceback.

- The fork server (solver.sweeps.worker_context) starts with SIGINT blocked, as CPython
  starts its resource tracker, and imports this module last, after clusterplan: the
  import drops a Ctrl-C held meanwhile and unblocks SIGINT with Python's default
  handler, which the processes it forks inherit (as without clusterplan: another pool
  of your process that uses the same server keeps Ctrl-C).
- Each sweep worker then ignores SIGINT itself: a process-pool worker in its initializer
  (solver.sweep_worker.watch_coordinator), a LocalCluster's Dask worker as it starts, through
  this module as its Dask preload (`dask_setup`). Workers of a cluster you run yourself
  (`dask worker --preload solver.sweep_worker`) keep Ctrl-C in their own terminal.
- Your process then closes the LocalCluster while its workers are solving: each worker
  cancels the batch it runs, and Dask logged a warning for it ("Async instruction for
  <Task cancelled ...> ended with CancelledError", which Dask says happens only as a
  worker closes). A LocalCluster worker leaves that one warning out
  (`ClosingCancellations`); any other of Dask's messages it still prints.
"""

import logging
import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
signal.signal(signal.SIGINT, signal.default_int_handler)


class ClosingCancellations(logging.Filter):
    """Leaves out Dask's warning that a running task was cancelled as its worker closed."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().endswith("ended with CancelledError")


def dask_setup(worker) -> None:
    """Dask's preload hook, in a LocalCluster worker's main thread as it starts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.getLogger("distributed.worker.state_machine").addFilter(ClosingCancellations())
