"""HiGHS through Pyomo's current solver interface (pyomo.contrib.solver).

The models are built on ``pyomo.core`` and this interface's class is imported directly:
``pyomo.environ`` would also load every Pyomo plugin (other solvers, file writers,
transformations, ~0.1-0.15 s at every start) that no command uses.

The only module that creates a HiGHS solver and maps the run's options
(``solver.backends.SolveOptions``) to its settings. Seeds and threads are fixed so the same
model gives the same answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import highspy
import pyomo.core as pyo
from pyomo.common.tee import capture_output
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.solvers.highs import Highs

from solver.backends import SolveOptions
from solver.results import Status

PRESOLVE_PROBING = 1 << 15
"""HiGHS presolve rule bit of probing (option presolve_rule_off)."""


@dataclass(frozen=True)
class MilpOutcome:
    status: Status
    termination: str
    objective: float | None
    best_bound: float | None
    gap: float | None
    runtime_s: float
    solver_version: str


def solve_milp(model: pyo.ConcreteModel, options: SolveOptions) -> MilpOutcome:
    """Solve `model` with HiGHS under the run's time limit (at most what is left of the
    command's deadline), gap, node limit, threads and seed; load the incumbent into the model when
    there is one."""
    solver = Highs()
    if options.deadline.expired():
        raise options.deadline.reached()
    start = time.perf_counter()
    with options.deadline.deferred():  # Pyomo captures HiGHS's output: not interrupted
        solver.set_instance(model)  # translated first: HiGHS gets what is left after it
        res = solver.solve(
            model, time_limit=options.deadline.cap(options.time_limit_s),
            rel_gap=options.gap, threads=options.threads,
            load_solutions=False, raise_exception_on_nonoptimal_result=False,
            solver_options={"random_seed": options.seed, "output_flag": False,
                            # probing costs minutes on long size ladders and finds nothing
                            # the ladder_order chains do not already imply
                            "presolve_rule_off": PRESOLVE_PROBING}
            | ({"mip_max_nodes": options.node_limit} if options.node_limit is not None
               else {}),
        )
    runtime = time.perf_counter() - start
    has_solution = res.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    if has_solution:
        res.solution_loader.load_vars()
    tc = res.termination_condition
    if tc == TerminationCondition.convergenceCriteriaSatisfied and has_solution:
        status = Status.OPTIMAL
    elif tc in (TerminationCondition.provenInfeasible, TerminationCondition.locallyInfeasible,
                TerminationCondition.infeasibleOrUnbounded):
        status = Status.INFEASIBLE
    elif has_solution:
        status = Status.FEASIBLE
    else:
        status = Status.NO_SOLUTION
    obj, bound = res.incumbent_objective, res.objective_bound
    gap = None
    if obj is not None and bound is not None and abs(bound) < float("inf"):
        gap = abs(bound - obj) / max(abs(obj), 1e-9)
    version = ".".join(str(v) for v in solver.version())
    return MilpOutcome(status, tc.name, obj, bound, gap, runtime, f"highs {version}")


def bound_lp() -> highspy.Highs:
    """A HiGHS instance for the placement bound's small linear programs
    (``models.placement.core_split``): one thread, fixed seed, no log. Created with the
    output captured: HiGHS prints its banner at a process's first instance."""
    with capture_output(capture_fd=True):
        highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", 1)
    highs.setOptionValue("random_seed", 0)
    return highs
