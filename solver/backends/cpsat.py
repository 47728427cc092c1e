"""OR-Tools CP-SAT settings from the run's options: the only place placement's CP-SAT
parameters are set (the job mapping of ``models.perf.mapping`` still sets its own)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.backends import SolveOptions


def placement_solver(options: SolveOptions) -> cp_model.CpSolver:
    """A reproducible CP-SAT solver: at most 2 workers interleaving deterministically, a
    fixed seed, the limit in deterministic time (wall time capped at twice it as a safety
    net), and the relative gap at which to stop."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = max(1, min(options.placement_workers, 2))
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = options.seed
    solver.parameters.max_deterministic_time = options.placement_time_limit_s
    solver.parameters.max_time_in_seconds = 2 * options.placement_time_limit_s
    solver.parameters.relative_gap_limit = options.placement_gap
    return solver
