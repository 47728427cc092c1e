"""clusterplan: optimal designs for GPU training clusters.

Public API: ``from solver import load_instance, solve``.
"""

from solver.analysis import pareto, tornado
from solver.api import SolveResult, solve
from solver.loading import load_instance
from solver.sweep import sweep

__all__ = ["SolveResult", "load_instance", "pareto", "solve", "sweep", "tornado"]
