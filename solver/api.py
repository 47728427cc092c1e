"""Python API: solve an instance into an optimal design. Never prints, never exits."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyomo.environ as pyo

from models.design.candidates import build_design_data, exact_candidate, refine, with_limits
from models.design.chosen import ChosenDesign
from models.design.data import DesignData
from models.design.evaluate import Evaluators, default_evaluators
from models.design.inputs import Inputs
from models.design.milp import add_lexicographic_tiebreak, build_model, chosen_candidate
from models.design.prune import elastic_candidates, prune
from models.fabric import design_fabric
from solver.backends.highs import MilpOutcome, solve_milp
from solver.checker import check_design
from solver.diagnose import diagnose, unmet_requirements
from solver.job_mapping import map_job
from solver.prepare import prepare
from solver.report import binding_limits, summary_document, tables
from solver.schema import Instance


@dataclass(frozen=True)
class SolveOptions:
    time_limit_s: float = 60.0
    gap: float = 1e-6
    threads: int = 1


@dataclass
class SolveResult:
    """Status, the `--json` summary, pandas tables, and the chosen design (if any)."""

    status: str
    summary: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    design: ChosenDesign | None = None
    notes: list[str] = field(default_factory=list)
    inputs: Inputs | None = None
    """The resolved instance (solver.prepare) the design was solved on."""

    @property
    def bom(self) -> pd.DataFrame:
        return self.tables["bom"]

    @property
    def power(self) -> pd.DataFrame:
        return self.tables["power"]

    @property
    def cost(self) -> pd.DataFrame:
        return self.tables["cost"]

    @property
    def binding(self) -> pd.DataFrame:
        return self.tables["binding"]


def solve(inst: Instance, *, time_limit_s: float = 60.0, gap: float = 1e-6, threads: int = 1,
          evaluators: Evaluators | None = None,
          extra_constraints: Callable[[pyo.ConcreteModel, Inputs], None] | None = None,
          candidates: DesignData | None = None) -> SolveResult:
    """Build the candidate designs, prune them exactly (models.design.prune), solve the
    design MILP with HiGHS, verify the optimum with the independent checker.

    Statuses: optimal | feasible (limit hit, incumbent kept) | infeasible (with a
    diagnosis in summary['diagnosis']) | no_solution.
    `extra_constraints(model, inputs)` adds user constraints to the MILP before it is solved
    (the exact bound is then not applied: every buildable candidate stays in the model).
    `candidates`: design data built by `build_design_data` for an instance that differs
    from `inst` only in `limits` and whose limits are at least as large (sweeps reuse
    it); the limits of `inst` are applied to it.
    """
    start = time.perf_counter()
    opts = SolveOptions(time_limit_s, gap, threads)
    inputs = prepare(inst)
    evaluators = evaluators or default_evaluators(inputs)
    if candidates is None:
        full, notes = build_design_data(inputs, evaluators)
    else:
        full, notes = with_limits(candidates, inputs), []
    full = refine(inputs, evaluators, full)
    data = prune(full, bound=extra_constraints is None)
    if not data.candidates:
        return _infeasible(inputs, evaluators, opts, start, notes)
    model = build_model(data)
    if extra_constraints is not None:
        extra_constraints(model, inputs)
    outcome = solve_milp(model, time_limit_s, gap, threads)
    if outcome.status == "infeasible":
        return _infeasible(inputs, evaluators, opts, start, notes)
    if outcome.status == "no_solution":
        return _without_design(inputs, "no_solution", opts, start, notes)
    if outcome.status == "optimal":
        stage_one = outcome.objective
        add_lexicographic_tiebreak(model, data, stage_one)
        second = solve_milp(model, time_limit_s, gap, threads)
        if second.status in ("optimal", "feasible"):
            outcome = MilpOutcome(outcome.status, outcome.termination, stage_one,
                                  outcome.best_bound, outcome.gap,
                                  outcome.runtime_s + second.runtime_s, outcome.solver_version)
    design = extract_design(model)
    exact = exact_candidate(inputs, evaluators, full, design.candidate)
    check = check_design(inputs, design, data, exact)
    runtime = time.perf_counter() - start
    parts = inputs.config(design.config.key)
    mapping = map_job(parts.gpu, design_fabric(parts.fabric_spec(
        exact.nodes + exact.spare_nodes)), exact.extra["perf"])
    summary = summary_document(inputs, design, exact, outcome, check,
                               binding_limits(inputs, design, full), runtime,
                               inputs.sha256, notes, mapping)
    return SolveResult(outcome.status, summary, tables(inputs, design, summary), design, notes,
                       inputs)


def extract_design(m: pyo.ConcreteModel) -> ChosenDesign:
    """Read the chosen candidate and its building plan off a solved model."""
    cand = chosen_candidate(m)
    su = {b: round(pyo.value(m.su_in[b, cand.config])) for b in m.BUILDINGS}
    net = {b: float(pyo.value(m.net_mw[b])) * 1e6 for b in m.BUILDINGS}
    racks = {b: float(pyo.value(m.net_racks[b])) for b in m.BUILDINGS}
    return ChosenDesign(m.data.configs[cand.config], cand, su, net, racks)


def _infeasible(inputs: Inputs, evaluators: Evaluators, opts: SolveOptions, start: float,
                notes: list[str]) -> SolveResult:
    """Diagnose on candidates generated past the power and budget limits."""
    relaxed_all, _ = build_design_data(inputs, evaluators, relax_limits=True)
    relaxed = elastic_candidates(relaxed_all)
    diagnosis = (diagnose(relaxed, opts) if relaxed.candidates
                 else unmet_requirements(relaxed_all, notes))
    return _without_design(inputs, "infeasible", opts, start, notes, diagnosis)


def _without_design(inputs: Inputs, status: str, opts: SolveOptions, start: float,
                    notes: list[str], diagnosis: list[str] | None = None) -> SolveResult:
    summary = {
        "status": status, "instance": inputs.name, "diagnosis": diagnosis or [],
        "notes": notes, "verified": False,
        "solver": {"backend": "milp-highs", "runtime_s": round(time.perf_counter() - start, 3),
                   "gap": None, "time_limit_s": opts.time_limit_s},
    }
    return SolveResult(status, summary, {}, None, notes, inputs)
