"""Imported first by the sweep workers' fork server (solver.sweeps.worker_context) and by
nothing else: the server, and every worker it forks (the process pool's and a
LocalCluster's Dask workers), ignore SIGINT.

Ctrl-C sends SIGINT to the terminal's whole process group. The coordinator handles it:
it ends the pool's workers or closes the cluster, and the CLI says the sweep was
interrupted. A worker that took the signal itself printed a KeyboardInterrupt traceback
(a Dask worker, from its event loop), and so did the server while it imported
clusterplan. The server forks its workers with the signal handlers it has after
importing its preload modules (multiprocessing.forkserver.main), so this covers each
worker from its first instruction; a Dask worker then installs no handler of its own
(asyncio.Runner replaces only Python's default one)."""

import signal

signal.signal(signal.SIGINT, signal.SIG_IGN)
