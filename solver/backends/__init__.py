"""Solver back-ends: the only modules that talk to HiGHS (``highs``) and CP-SAT
(``cpsat``), and the one options object both are set from."""

from __future__ import annotations

from dataclasses import dataclass, field

from solver.deadline import Deadline


@dataclass(frozen=True)
class SolveOptions:
    """Limits and settings of every solver a run uses; each back-end maps them to its own
    settings (``highs.solve_milp``, ``cpsat.placement_solver``)."""

    time_limit_s: float = 60.0
    """Design MILP time limit [s]."""
    gap: float = 1e-6
    """Design MILP relative gap."""
    threads: int = 1
    """Design MILP threads."""
    node_limit: int | None = None
    """Design MILP branch-and-bound node limit (HiGHS mip_max_nodes; None: none): a
    stopping rule that, unlike the time limit, does not depend on the machine's speed."""
    phased_gap: float = 0.03
    """Relative gap at which the phased build-out MILP stops (solver.phased): with fixed
    threads and seed the point where HiGHS reaches it is the same on every machine."""
    placement_time_limit_s: float = 30.0
    """Placement time limit [s] of CP-SAT's deterministic time (about seconds of work)."""
    placement_gap: float = 0.02
    """Placement relative gap: CP-SAT stops once within it of the bound. 2% of the
    placement's objective (media, racks' cables and lost training hours over the
    lifetime) is ~0.1% of the default campus's capex; the quick first pass (one worker,
    deterministic time) reaches it on the default design in seconds, reproducibly."""
    placement_workers: int = 2
    """CP-SAT workers (at most 2; they interleave deterministically)."""
    seed: int = 0
    """Random seed of both solvers."""
    candidate_processes: int = 1
    """Processes that build the candidate designs (2: a forked second process builds
    about half, solver.api.candidates; the CLI's solve on a machine of 2 or more cores).
    The same candidates either way."""
    details: bool = True
    """A solved design's job mapping, runner-ups and pandas tables. False, for a solve
    without placement (a placed solve always has them): ``design.job_mapping`` None,
    ``runner_ups`` empty and ``SolveResult.tables`` {} (its ``bom``, ``power``, ``cost``
    and ``binding`` raise KeyError). A sweep's row reads none of them; they took ~20% of
    a sweep scenario's time. A phased build-out (solver.phased) ignores it."""
    deadline: Deadline = field(default_factory=Deadline, compare=False)
    """The command's wall-clock budget (solver.deadline); every solver gets at most its
    remaining time. Default: none."""
