"""OR-Tools CP-SAT settings from the run's options: the only place placement's CP-SAT
parameters are set (the job mapping of ``models.perf.mapping`` still sets its own)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.backends import SolveOptions

WALL_CAP_FACTOR = 10
"""Wall-time safety net of a placement solve, in multiples of its deterministic limit."""


def placement_solver(options: SolveOptions) -> cp_model.CpSolver:
    """A reproducible CP-SAT solver: at most 2 workers interleaving deterministically, a
    fixed seed, the limit in deterministic time, and the relative gap at which to stop.
    Wall time is capped at WALL_CAP_FACTOR times the deterministic limit only as a safety
    net: a tighter cap made the placement depend on the machine's load."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = max(1, min(options.placement_workers, 2))
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = options.seed
    solver.parameters.max_deterministic_time = options.placement_time_limit_s
    solver.parameters.max_time_in_seconds = WALL_CAP_FACTOR * options.placement_time_limit_s
    solver.parameters.relative_gap_limit = options.placement_gap
    return solver
