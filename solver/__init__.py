"""clusterplan: optimal designs for GPU training clusters.

Public API: ``from solver import load_instance, solve`` (and ``place``, ``fabric``,
``perf``, ``reliability``, ``sweep``, ``tornado``, ``pareto``; ``SolveOptions``,
``Status``). Names are imported on first use, so the CLI starts without loading the
solver stack it does not need.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "load_instance": "solver.loading",
    "solve": "solver.api",
    "place": "solver.api",
    "fabric": "solver.api",
    "perf": "solver.api",
    "reliability": "solver.api",
    "SolveResult": "solver.api",
    "SolveOptions": "solver.backends",
    "Status": "solver.results",
    "sweep": "solver.sweeps",
    "tornado": "solver.analysis",
    "pareto": "solver.analysis",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'solver' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)


def cli_main() -> None:
    """The `clusterplan` script: solver.cli.main, imported under the interruption's
    handling (solver.interruption), so that Ctrl-C or SIGTERM during the CLI's own
    imports (~0.3 s) is one line and exit 130 too, not a traceback."""
    import sys

    from solver.interruption import INTERRUPTED_EXIT, INTERRUPTED_NOTE, handling

    try:
        with handling():
            from solver.cli import main
            main()
    except KeyboardInterrupt:
        sys.stderr.write(f"interrupted {INTERRUPTED_NOTE}\n")
        sys.exit(INTERRUPTED_EXIT)
