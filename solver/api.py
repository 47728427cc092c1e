"""Python API: the pipeline, one function per stage. Never prints, never exits.

    instance ─► prepare ─► candidates ─► prune ─► design MILP ─► check ─► report
             (solver.prepare) (models.design) (HiGHS)  (solver.checker) (solver.report)
             ─► place (CP-SAT, solver.placement) ─► placed BOM re-checked (report)

``solve(instance, place=True)`` runs all of it; ``place``, ``fabric``, ``perf`` and
``reliability`` are the other commands' API (``sweep``, ``tornado``, ``pareto`` are in
solver.sweeps and solver.analysis). Every CLI command parses its arguments, calls one of
these and prints, so the API and the CLI give the same JSON.

pandas (the tables), CP-SAT's placement and job mapping, and the phased build-out are
imported by the stages that use them: a sweep's scenario (solved without details, not
placed) imports none of them unless it is a phased build-out (solver.sweep_worker).
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyomo.core as pyo

from models.design.candidates import (
    ExactAll,
    assemble_design_data,
    build_configs,
    build_design_data,
    config_groups,
    exact_candidate,
    refine,
    throughput_points,
    with_limits,
)
from models.design.chosen import ChosenDesign
from models.design.data import Candidate, DesignData
from models.design.evaluate import Evaluators, InterpolatedThroughput, default_evaluators
from models.design.inputs import Inputs
from models.design.milp import add_lexicographic_tiebreak, build_model, chosen_candidate
from models.design.prune import elastic_candidates, restricted
from models.design.prune import prune as prune_candidates
from models.design.prune import within as prune_within
from models.fabric import design_fabric
from models.placement.assemble import DesignToPlace
from solver.backends import SolveOptions
from solver.backends.highs import MilpOutcome, solve_milp
from solver.checker import CheckResult, check_design
from solver.deadline import TimeLimitReached
from solver.design_file import placeable_design
from solver.diagnose import (
    diagnose,
    far_beyond_limits,
    no_rack_takes_a_node,
    unmet_requirements,
)
from solver.fabric_inputs import fabric_document
from solver.forked import forked, gc_paused
from solver.perf_inputs import DEGREES, perf_document
from solver.prepare import prepare
from solver.reliability_inputs import (
    DEFAULT_WORKLOAD,
    MAX_EVENTS_PER_RUN,
    MAX_SIMULATED_RUNS,
    reliability_document,
)
from solver.report import (
    binding_limits,
    runner_ups,
    summary_document,
    tables,
    with_placement,
)
from solver.results import (
    FabricDocument,
    PerfDocument,
    ReliabilityDocument,
    SolveSummary,
    Status,
    UnsolvedSolver,
    UnsolvedSummary,
)
from solver.schema import Instance
from solver.schema.design_file import DesignFile

if TYPE_CHECKING:  # imported where used (see the module's docstring)
    import pandas as pd

    from solver.placement import PlacementResult

ExtraConstraints = Callable[[pyo.ConcreteModel, Inputs], None]


@dataclass(frozen=True)
class SolveResult:
    """Status, the typed ``--json`` document (``document``; ``summary`` = its ``to_dict()``),
    pandas tables, the chosen design, the resolved inputs and, when placed, the placement."""

    status: Status
    document: SolveSummary | UnsolvedSummary
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    design: ChosenDesign | None = None
    notes: tuple[str, ...] = ()
    inputs: Inputs | None = None
    placement: PlacementResult | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.document.to_dict()

    @cached_property
    def summary(self) -> dict[str, Any]:
        """The ``--json`` document as a dict (DESIGN.md's "summary dict")."""
        return self.to_dict()

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


@dataclass(frozen=True)
class MilpStage:
    """The solved design MILP: its outcome and, when it has a solution, the design."""

    outcome: MilpOutcome
    design: ChosenDesign | None


# --- the stages ------------------------------------------------------------------------

def candidates(inputs: Inputs, evaluators: Evaluators, shared: DesignData | None = None,
               processes: int = 1) -> tuple[DesignData, list[str]]:
    """Every candidate design, evaluated exactly wherever it could matter (refine), and
    notes on what was skipped. ``shared``: candidates built for the same instance with
    limits at least as large (sweeps), given the limits of ``inputs``. ``processes`` 2:
    a forked process builds about half of the configurations (config_groups) while this
    one builds the rest, each with the perf model's feasible sets computed once between
    them (feasible_in_two), and evaluates half of each refine round (exact_in_two); the
    same data as one build."""
    exact_all = None  # refine's evaluations here, one by one
    with gc_paused():  # ~1M long-lived objects: collections would only rescan them
        if shared is not None:
            full, notes = with_limits(shared, inputs), []
        elif processes > 1 and len(groups := config_groups(inputs, 2)) > 1:
            feasible_in_two(inputs, evaluators)
            with forked(lambda: build_configs(inputs, evaluators, groups[1])) as other:
                built = build_configs(inputs, evaluators, groups[0])
                built |= other()
            full, notes = assemble_design_data(inputs, built)
            exact_all = exact_in_two(inputs, evaluators)
        else:
            full, notes = build_design_data(inputs, evaluators)
        return refine(inputs, evaluators, full, exact_all), notes


def feasible_in_two(inputs: Inputs, evaluators: Evaluators) -> None:
    """The perf model's feasible sets (InterpolatedThroughput.feasible) at the build's
    grid points (throughput_points), every other one in a forked process, kept in
    ``evaluators``: both candidate-building processes read all of them (on the default
    instance 91 sets, ~1.5 s of CPU, were each process to compute them)."""
    if not isinstance(evaluators.throughput, InterpolatedThroughput):
        return
    with forked(lambda: feasible_share(inputs, evaluators, 1, 2)) as other:
        feasible_share(inputs, evaluators, 0, 2)
        evaluators.throughput.add_feasible(other())


def feasible_share(inputs: Inputs, evaluators: Evaluators, index: int, count: int
                   ) -> dict[tuple[str, int], object]:
    """Share `index` of `count` of the perf model's feasible sets at the build's grid
    points (every `count`-th of throughput_points from `index`), by (system id, GPUs),
    kept in ``evaluators`` too (feasible_in_two; a sweep's part builders,
    solver.sweeps.shared_parts); {} when the throughput is not interpolated."""
    throughput = evaluators.throughput
    if not isinstance(throughput, InterpolatedThroughput):
        return {}
    return {(system.id, gpus): throughput.feasible(inputs, system, gpus)
            for system, gpus in throughput_points(inputs)[index::count]}


def exact_in_two(inputs: Inputs, evaluators: Evaluators) -> ExactAll:
    """The refine rounds' exact evaluations in two processes: the candidates of some GPU
    counts in a forked one (solver.forked), the others here, about half each. Candidates
    of one GPU count share their evaluations (the workload's parallelisms that fit), so
    a count stays in one process."""
    def exact_all(data: DesignData, targets: list[Candidate]) -> list[Candidate]:
        def evaluate(part: list[Candidate]) -> dict[str, Candidate]:
            return {k.key: exact_candidate(inputs, evaluators, data, k) for k in part}
        load, side = [0, 0], {}
        for gpus, n in sorted(Counter(k.gpus for k in targets).items(),
                              key=lambda count: (-count[1], count[0])):
            side[gpus] = load.index(min(load))
            load[side[gpus]] += n
        here, there = ([k for k in targets if side[k.gpus] == i] for i in (0, 1))
        if not there:
            exact = evaluate(here)
        else:
            with forked(lambda: evaluate(there)) as other:
                exact = evaluate(here) | other()
        return [exact[k.key] for k in targets]
    return exact_all


def prune(full: DesignData, exact_bound: bool = True) -> DesignData:
    """Candidates that break a limit on their own or are beaten by a buildable one removed
    (models.design.prune); ``exact_bound`` False keeps every buildable candidate."""
    return prune_candidates(full, bound=exact_bound)


def design_milp(data: DesignData, options: SolveOptions, inputs: Inputs,
                extra_constraints: ExtraConstraints | None = None) -> MilpStage:
    """The design MILP (HiGHS), then, at an optimum, the cheapest design among optima."""
    model = build_model(data)
    if extra_constraints is not None:
        extra_constraints(model, inputs)
    outcome = solve_milp(model, options)
    if not outcome.status.has_solution:
        return MilpStage(outcome, None)
    if outcome.status == Status.OPTIMAL:
        add_lexicographic_tiebreak(model, data, outcome.objective)
        second = solve_milp(model, options)
        if second.status.has_solution:
            outcome = dataclasses.replace(outcome,
                                          runtime_s=outcome.runtime_s + second.runtime_s)
    return MilpStage(outcome, extract_design(model))


def check(inputs: Inputs, evaluators: Evaluators, full: DesignData, data: DesignData,
          design: ChosenDesign) -> tuple[Candidate, CheckResult]:
    """The chosen design re-evaluated exactly, and the independent checker's verdict."""
    exact = exact_candidate(inputs, evaluators, full, design.candidate)
    return exact, check_design(inputs, design, data, exact)


def report(inputs: Inputs, evaluators: Evaluators, full: DesignData, design: ChosenDesign,
           exact: Candidate, milp: MilpOutcome, verdict: CheckResult, start: float,
           notes: list[str], it_power_cap_w: float | None = None,
           unplaced: tuple[tuple[Candidate, str], ...] = (), details: bool = True
           ) -> SolveResult:
    """The ``--json`` document of a solved design and, with ``details``
    (SolveOptions.details), its job mapping, runner-ups and tables (``evaluators``: those
    that built ``full``, for the binding limits' next size; ``it_power_cap_w``,
    ``unplaced``: the design stage's held campus critical IT and the candidates placement
    refused, design_stage)."""
    mapping = None
    if details:
        from solver.job_mapping import map_job

        parts = inputs.config(design.config.key)
        mapping = map_job(parts.gpu, design_fabric(parts.fabric_spec(
            exact.nodes + exact.spare_nodes)), exact.extra["perf"], parts.nic.port_gbps)
    summary = summary_document(inputs, design, exact, milp, verdict,
                               binding_limits(inputs, evaluators, design, full,
                                              it_power_cap_w, unplaced),
                               time.perf_counter() - start, inputs.sha256, notes, mapping)
    if not details:
        return SolveResult(milp.status, summary, {}, design, tuple(notes), inputs)
    held = full if it_power_cap_w is None else dataclasses.replace(
        full, it_power_cap_w=it_power_cap_w)  # runner-ups judged under the chosen's limits
    summary = dataclasses.replace(summary, runner_ups=runner_ups(held, design, summary))
    return SolveResult(milp.status, summary, tables(summary), design,
                       tuple(notes), inputs)


def design_stage(inputs: Inputs, evaluators: Evaluators, full: DesignData,
                 options: SolveOptions, extra_constraints: ExtraConstraints | None,
                 start: float, notes: list[str], it_power_cap_w: float | None = None,
                 unplaced: tuple[tuple[Candidate, str], ...] = ()) -> SolveResult:
    """Prune, the design MILP, the independent check and the report. ``it_power_cap_w``:
    the design stage's campus critical IT held below ``limits.it_power_mw`` (the checker
    keeps the instance's limit); then a design stage with no design says so only in its
    result's missing ``design`` (no diagnosis is run). ``unplaced``: the candidates
    placement refused (left out of ``full``) with its diagnosis, for the binding rows."""
    stage = options.deadline.enter
    held = it_power_cap_w is not None
    data = prune(dataclasses.replace(full, it_power_cap_w=it_power_cap_w) if held else full,
                 exact_bound=extra_constraints is None)
    if not data.candidates:
        return (SolveResult(Status.INFEASIBLE, None) if held
                else _infeasible(inputs, evaluators, options, start, notes))
    stage("the design MILP")
    milp = design_milp(data, options, inputs, extra_constraints)
    if milp.design is None and held:
        return SolveResult(milp.outcome.status, None)
    if milp.outcome.status == Status.INFEASIBLE:
        return _infeasible(inputs, evaluators, options, start, notes)
    if milp.design is None:
        return _without_design(inputs, Status.NO_SOLUTION, options, start, notes, [
            f"the design MILP found no design within {options.time_limit_s:g} s"])
    stage("the independent check")
    exact, verdict = check(inputs, evaluators, full, data, milp.design)
    stage("the report")
    return report(inputs, evaluators, full, milp.design, exact, milp.outcome, verdict,
                  start, notes, it_power_cap_w, unplaced, options.details)


RESOLVE_ROUNDS = 3
"""Design-stage re-solves at most after placement: when the placed design draws more
critical IT than ``limits.it_power_mw`` (:func:`placed_power_excess`), or cannot be
placed at all (:func:`unplaceable`)."""


def placed_power_excess(placed: SolveResult) -> tuple[float, str]:
    """Critical IT the placed design draws above ``limits.it_power_mw`` [W] (<= 0:
    within) and a note saying so. The next design stage holds its estimate to the limit
    less the placed media's surplus, ``cap = P - (placed - estimate)``: below this
    design's estimate, so each round builds a smaller design."""
    doc = placed.document
    if placed.placement is None or doc.design_estimate is None:
        return 0.0, ""
    limit_w = placed.inputs.limits.it_power_mw * 1e6
    placed_w, estimate_w = doc.power.it_mw * 1e6, doc.design_estimate.power.it_mw * 1e6
    if prune_within(placed_w, limit_w):
        return 0.0, ""
    return placed_w - limit_w, (
        f"the placed design of {doc.design.gpus:,} GPUs draws {placed_w / 1e6:.6f} MW of "
        f"critical IT, over limits.it_power_mw = {limit_w / 1e6:g} MW by "
        f"{(placed_w - limit_w) / 1e3:,.1f} kW (its placed media draw "
        f"{(placed_w - estimate_w) / 1e3:,.1f} kW more than the design stage's estimate)")


def unplaceable(placed: SolveResult) -> str:
    """A note naming the design and why placement found it infeasible ("" when it was
    placed, or ran out of time: another search might place it)."""
    if placed.placement is None or placed.placement.status != Status.INFEASIBLE:
        return ""
    cand = placed.design.candidate
    return (f"the design of {cand.gpus:,} GPUs ({cand.key}) cannot be placed: "
            f"{placed.placement.summary.get('diagnosis', 'no placement exists')}")


def without_candidates(full: DesignData, refused: list[str]) -> DesignData:
    """``full`` less the candidates whose keys are ``refused``: a no-good cut on each
    (placement depends on the candidate alone, not on its split over buildings), applied
    before pruning, so the candidates they beat come back."""
    return restricted(full, [i for i, k in enumerate(full.candidates) if k.key not in refused])


def runner_ups_without(result: SolveResult, full: DesignData, cap_w: float,
                       refused: list[str]) -> SolveResult:
    """``result`` (a design placement refused, kept when no other design places) with its
    runner-ups re-judged under the hold ``cap_w`` it was designed under, less the
    designs placement refused after it: none of them is a design to choose instead."""
    others = [k for k in refused if k != result.design.candidate.key]
    data = dataclasses.replace(without_candidates(full, others), it_power_cap_w=cap_w)
    return dataclasses.replace(result, document=dataclasses.replace(
        result.document, runner_ups=runner_ups(data, result.design, result.document)))


def with_notes(result: SolveResult, notes: list[str]) -> SolveResult:
    """``result`` with its notes (and its document's) set to ``notes``."""
    return dataclasses.replace(result, notes=tuple(notes), document=dataclasses.replace(
        result.document, notes=tuple(notes)))


def place_stage(result: SolveResult, options: SolveOptions) -> SolveResult:
    """Place the solved design; the placed media and racks replace the design's estimates
    and the limits are re-checked on them (solver.report.with_placement). A failed
    placement keeps the design and says why in ``summary['placement']``."""
    from solver.placement import design_to_place, placed_media_lines
    from solver.placement import place as place_design

    placed = place_design(result.inputs, design_to_place(result.design, result.inputs),
                          options)
    if not placed.status.has_solution:
        return dataclasses.replace(
            result, document=dataclasses.replace(result.document, placement=placed.summary),
            placement=placed)
    racks = placed.summary["racks_total"] - placed.summary["racks"].get("support", 0)
    summary = with_placement(result.inputs, result.document, result.design,
                             placed_media_lines(placed), racks, placed.summary)
    return dataclasses.replace(result, document=summary,
                               tables=tables(summary),
                               placement=placed)


# --- the API ---------------------------------------------------------------------------

def solve(inst: Instance, *, place: bool = True, options: SolveOptions | None = None,
          evaluators: Evaluators | None = None,
          extra_constraints: ExtraConstraints | None = None,
          candidates_of: DesignData | None = None) -> SolveResult:
    """The optimal design of ``inst`` with its BOM, power, cost and throughput, verified by
    the independent checker, and (``place``) its racks placed on the floor plan.

    Status: optimal | feasible (limit hit, incumbent kept) | infeasible (with a diagnosis
    in summary['diagnosis']) | no_solution. A placement that fails keeps the design's
    status; ``summary['placement']`` says why. A placed design that draws more critical IT
    than ``limits.it_power_mw`` is re-solved smaller, and a design placement finds
    infeasible is re-solved without it (:func:`placed_and_re_solved`; a note says so).
    ``extra_constraints(model, inputs)`` adds user constraints to the MILP before it is
    solved (the exact bound is then not applied: every buildable candidate stays in it).
    ``candidates_of``: design data built by ``build_design_data`` for an instance that
    differs from ``inst`` only in ``limits`` and whose limits are at least as large
    (sweeps reuse it); the limits of ``inst`` are applied to it.
    An instance with ``[[periods]]`` is a phased build-out (solver.phased.solve_phased):
    its summary has a ``periods`` list instead of one design (no placement).
    """
    if inst.periods:  # a phased build-out: what to buy in each period (solver.phased)
        from solver.phased import solve_phased

        return solve_phased(inst, options, evaluators)
    start = time.perf_counter()
    options = options or SolveOptions()
    if place and not options.details:  # a placed solve always reports them
        options = dataclasses.replace(options, details=True)
    stage = options.deadline.enter
    stage("prepare")
    inputs = prepare(inst)
    notes: list[str] = []
    try:
        evaluators = evaluators or default_evaluators(inputs)
        stage("candidate generation")
        full, notes = candidates(inputs, evaluators, candidates_of,
                                 options.candidate_processes)
        result = design_stage(inputs, evaluators, full, options, extra_constraints, start,
                              notes)
        if not place or result.design is None:
            return result
        stage("placement")
        return placed_and_re_solved(place_stage(result, options), inputs, evaluators, full,
                                    options, extra_constraints, start, notes)
    except TimeLimitReached as exc:
        return _without_design(inputs, Status.NO_SOLUTION, options, start, notes, [str(exc)])


def placed_and_re_solved(placed: SolveResult, inputs: Inputs, evaluators: Evaluators,
                         full: DesignData, options: SolveOptions,
                         extra_constraints: ExtraConstraints | None, start: float,
                         notes: list[str]) -> SolveResult:
    """The placed design, re-solved at most RESOLVE_ROUNDS times while placement
    contradicts it: over the campus limit once placed (the next design stage's critical
    IT held lower, :func:`placed_power_excess`), or not placeable (its candidate refused,
    :func:`without_candidates`). Each re-solve's optimum is the best design left, so the
    first that places is the best that places. A design with no smaller or other design
    to replace it is returned as it is, with a note; so is the first unplaceable design
    when the rounds run out (its placement's diagnosis stands), and a design still over
    the limit then (not verified). Every round's note is kept, in order."""
    cap_w, refused, said = full.it_power_cap_w, [], list(notes)
    unplaced: list[tuple[Candidate, str]] = []  # the refused candidates, with why
    first_unplaced, first_cap_w = None, cap_w  # and the hold it was designed under
    for round_ in range(RESOLVE_ROUNDS + 1):
        excess_w, over = placed_power_excess(placed)
        refusal = unplaceable(placed)
        if excess_w <= 0 and not refusal:
            return placed
        if round_ == RESOLVE_ROUNDS:
            break
        if refusal:
            if first_unplaced is None:
                first_unplaced, first_cap_w = placed, cap_w
            refused.append(placed.design.candidate.key)
            unplaced.append((placed.design.candidate, placed.placement.summary.get(
                "diagnosis", "no placement exists")))
            said.append(refusal + "; re-solved without it")
        else:
            doc = placed.document  # never raised again: no design comes back
            cap_w = min(cap_w, full.it_power_cap_w - (
                doc.power.it_mw - doc.design_estimate.power.it_mw) * 1e6)
            said.append(over + "; re-solved with the design stage's critical IT held to "
                        f"{cap_w / 1e6:.6f} MW")
        again = design_stage(inputs, evaluators, without_candidates(full, refused), options,
                             extra_constraints, start, list(said), cap_w, tuple(unplaced))
        if again.design is None:
            why = (("no other design meets the requirements" if refusal else
                    "no smaller design meets the requirements")
                   if again.status == Status.INFEASIBLE else
                   f"the re-solve found no design within {options.time_limit_s:g} s "
                   f"({again.status})")
            kept = (runner_ups_without(first_unplaced, full, first_cap_w, refused)
                    if refusal else placed)
            return with_notes(kept, [*said, why + (
                ", so the first design is kept" if refusal
                else ", so this one is kept, not verified")])
        placed = place_stage(again, options)
    if refusal:
        if first_unplaced is None:  # the rounds before held power only
            first_unplaced, first_cap_w = placed, cap_w
        refused.append(placed.design.candidate.key)
        kept = runner_ups_without(first_unplaced, full, first_cap_w, refused)
        return with_notes(kept, [*said, f"no design placed in {RESOLVE_ROUNDS} re-solves "
                                        f"(refused: {', '.join(refused)})"])
    return with_notes(placed, [*said, over + f"; still over after {RESOLVE_ROUNDS} "
                               "re-solves, so it is returned not verified"])


def place(inst: Instance | Inputs, design: DesignToPlace | DesignFile | None = None,
          options: SolveOptions | None = None) -> PlacementResult:
    """Racks of ``design`` on the instance's floor plan (CP-SAT), cables by routed length,
    re-checked independently; without ``design``, the instance's optimal design placed as
    ``solve`` places it, re-solved when placement contradicts it (:func:`placement_of`). A
    design.json (``DesignFile``, solver.design_file.read_design_file) must belong to the
    instance; what follows from its decisions is re-derived from the instance
    (solver.design_file.placeable_design; InvalidInstance when it does not fit)."""
    from solver.placement import PlacementResult
    from solver.placement import place as place_design

    options = options or SolveOptions()
    if design is None:
        solved = solve(inst, options=options)
        if solved.design is None:
            return PlacementResult(solved.status, {
                "status": solved.status,
                "diagnosis": f"the instance has no design to place ({solved.status}): "
                             + "; ".join(solved.summary["diagnosis"])})
        return placement_of(solved)
    options.deadline.enter("prepare")
    inputs = inst if isinstance(inst, Inputs) else prepare(inst)
    if isinstance(design, DesignFile):
        design = placeable_design(inputs, design)
    options.deadline.enter("placement")
    return place_design(inputs, design, options)


def placement_of(solved: SolveResult) -> PlacementResult:
    """A placed solve's placement as ``clusterplan place`` reports it: with the solve's
    limit re-check (``within_limits``; ``verified`` is the solve's) and its notes after
    the placement's own (why a smaller or other design came back)."""
    doc = dict(solved.document.placement)
    doc["notes"] = [*doc.get("notes", []), *solved.notes]
    if solved.placement.status.has_solution:
        doc["verified"] = solved.document.verified
    return dataclasses.replace(solved.placement, summary=doc)


def fabric(gpus: int, gpu: str, switch: str, *, tiers: int | None = None,
           oversubscription: float = 1.0, pods: int = 1, rail_optimized: bool = True,
           twin_port: bool = False, instance: str | Path | None = None,
           pod_join: str = "super") -> FabricDocument:
    """Exact fat tree for ``gpus`` GPUs of ``gpu`` on ``switch`` (the back-end NIC by
    solver.fabric_inputs.backend_nic) with the cheapest medium per link class, capex and power;
    ``instance``: take its catalog overrides and cable lengths; ``pod_join``: pods joined by
    'super' switches or a 'mesh' of their top switches."""
    return fabric_document(gpus, gpu, switch, tiers, oversubscription, pods, rail_optimized,
                           twin_port, Path(instance) if instance is not None else None,
                           pod_join)


def perf(workload: str, gpu: str, gpus: int, *, degrees: dict[str, int | None] | None = None,
         recompute: str | None = None, switch: str | None = None,
         oversubscription: float = 1.0, pod_gpus: int | None = None,
         sharding: str | None = None, etp: int | None = None,
         profile: str | None = None) -> PerfDocument:
    """Step time, tokens/s with its p10-p90 band, MFU/HFU and memory of ``workload`` on
    ``gpus`` GPUs: the given parallel degrees evaluated, or the omitted ones searched
    (``sharding``: none | optimizer | gradients | full; ``profile``: the software stack);
    with ``switch``, the job's groups mapped onto its fabric."""
    degrees = {k: (degrees or {}).get(k) for k in DEGREES}
    return perf_document(workload, gpu, gpus, degrees, recompute, switch, oversubscription,
                         pod_gpus, sharding, etp, profile)


def reliability(gpu: str, gpus: int, *, workload: str = DEFAULT_WORKLOAD,
                switch: str | None = None, rail_optimized: bool = True,
                checkpoint_gbps: float | None = None, recovery: str = "storage",
                simulate_runs: int | None = None, days: float = 30.0, seed: int = 0,
                profile: str = "default", max_runs: int = MAX_SIMULATED_RUNS,
                max_events: float = MAX_EVENTS_PER_RUN) -> ReliabilityDocument:
    """Interruptions (with their band), checkpoint interval, restart and its parts, spares
    and goodput of a job on ``gpus`` GPUs under a failure-rate ``profile`` (with
    ``simulate_runs``, a seeded Monte-Carlo estimate beside; refused above ``max_runs``
    runs or ``max_events`` events per run)."""
    return reliability_document(gpu, gpus, workload, switch, rail_optimized, checkpoint_gbps,
                                recovery, simulate_runs, days, seed, profile, max_runs,
                                max_events)


def extract_design(m: pyo.ConcreteModel) -> ChosenDesign:
    """Read the chosen candidate and its building plan off a solved model."""
    cand = chosen_candidate(m)
    su = {b: round(pyo.value(m.su_in[b, cand.config])) for b in m.BUILDINGS}
    net = {b: float(pyo.value(m.net_mw[b])) * 1e6 for b in m.BUILDINGS}
    racks = {b: float(pyo.value(m.net_racks[b])) for b in m.BUILDINGS}
    blocks = {b: round(pyo.value(m.blocks_in[b, cand.config])) for b in m.BUILDINGS}
    return ChosenDesign(m.data.configs[cand.config], cand, su, net, racks, blocks)


def _infeasible(inputs: Inputs, evaluators: Evaluators, options: SolveOptions, start: float,
                notes: list[str]) -> SolveResult:
    """Diagnose on candidates generated past the power and budget limits (first: no
    rack takes a node, or requirements far beyond the limits)."""
    options.deadline.enter("the infeasibility diagnosis")
    far = no_rack_takes_a_node(inputs) or far_beyond_limits(inputs)
    if far:
        return _without_design(inputs, Status.INFEASIBLE, options, start, notes, far)
    relaxed_all, _ = build_design_data(inputs, evaluators, relax_limits=True)
    relaxed = elastic_candidates(relaxed_all)
    diagnosis = (diagnose(relaxed, options) if relaxed.candidates
                 else unmet_requirements(relaxed_all, notes))
    return _without_design(inputs, Status.INFEASIBLE, options, start, notes, diagnosis)


def _without_design(inputs: Inputs, status: Status, options: SolveOptions, start: float,
                    notes: list[str], diagnosis: list[str] | None = None) -> SolveResult:
    summary = UnsolvedSummary(
        status, inputs.name, tuple(diagnosis or ()), tuple(notes), False,
        UnsolvedSolver("milp-highs", round(time.perf_counter() - start, 3), None,
                       options.time_limit_s))
    return SolveResult(status, summary, {}, None, tuple(notes), inputs)
