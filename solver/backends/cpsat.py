"""OR-Tools CP-SAT settings: the only place CP-SAT parameters are set (placement from the
run's options; the job mapping of ``models.perf.mapping``)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from solver.backends import SolveOptions

# CP-SAT's own Ctrl-C catching (catch_sigint_signal) is off in every solver here: it
# leaves SIGINT at the system default after a solve, so a later Ctrl-C killed the process
# outright, skipping the cleanup of staged output. Python's handler stays; a Ctrl-C
# during a solve takes effect when the solve returns (within its time limit).
WALL_CAP_FACTOR = 10
"""Wall-time safety net of a placement solve, in multiples of its deterministic limit."""


def placement_solver(options: SolveOptions) -> cp_model.CpSolver:
    """A reproducible CP-SAT solver: at most 2 workers interleaving deterministically, a
    fixed seed, the limit in deterministic time, and the relative gap at which to stop.
    Wall time is capped at WALL_CAP_FACTOR times the deterministic limit only as a safety
    net: a tighter cap made the placement depend on the machine's load. It is also capped
    at what is left of the command's deadline (solver.deadline)."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = max(1, min(options.placement_workers, 2))
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = options.seed
    solver.parameters.max_deterministic_time = options.placement_time_limit_s
    solver.parameters.max_time_in_seconds = options.deadline.cap(
        WALL_CAP_FACTOR * options.placement_time_limit_s)
    solver.parameters.relative_gap_limit = options.placement_gap
    solver.parameters.catch_sigint_signal = False  # see the note above
    return solver


FIRST_PASS_DETERMINISTIC_S = 1.0
"""Deterministic time of the placement's first pass (one default CP-SAT worker)."""


def placement_first_pass(options: SolveOptions) -> cp_model.CpSolver:
    """The placement's quick first pass: one worker, the same seed and gap, at most
    FIRST_PASS_DETERMINISTIC_S of deterministic time (reproducible). Its placement stands
    when within the gap; else `placement_solver` solves as before
    (models.placement.model.solve)."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = options.seed
    limit = min(FIRST_PASS_DETERMINISTIC_S, options.placement_time_limit_s)
    solver.parameters.max_deterministic_time = limit
    solver.parameters.max_time_in_seconds = WALL_CAP_FACTOR * limit
    solver.parameters.relative_gap_limit = options.placement_gap
    solver.parameters.catch_sigint_signal = False  # see the note above
    return solver


def placement_hub_pass(options: SolveOptions) -> cp_model.CpSolver:
    """The placement's pass with the hubs fixed where the hub bound is least (a small
    linear model): one worker, the same seed, at most FIRST_PASS_DETERMINISTIC_S of
    deterministic time, solved to optimality (no gap: the best placement of those hubs
    costs milliseconds on the shipped sites)."""
    solver = placement_first_pass(options)
    solver.parameters.relative_gap_limit = 0.0
    return solver


MAPPING_TIME_LIMIT_S = 5.0
"""Deterministic time limit of the job mapping (a small model: it proves optimality in
milliseconds on every shipped design)."""


def mapping_solver(seed: int = 0) -> cp_model.CpSolver:
    """The job mapping's CP-SAT solver: one worker, a fixed seed and a deterministic
    time limit, so the mapping is reproducible."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = MAPPING_TIME_LIMIT_S
    solver.parameters.catch_sigint_signal = False  # see the note above
    return solver
