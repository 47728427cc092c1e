"""clusterplan: optimal designs for GPU training clusters.

Public API: ``from solver import load_instance, solve``.
"""

from solver.api import SolveResult, solve
from solver.loading import load_instance

__all__ = ["SolveResult", "load_instance", "solve"]
