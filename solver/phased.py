"""Phased build-out: the pipeline of an instance with [[periods]].

    instance ─► envelope instance (largest power per building, lowest node prices)
             ─► prepare ─► candidates (models.design) ─► plans and periods (models.phased)
             ─► every rung evaluated exactly ─► phased MILP (HiGHS) to the gap target
             ─► the cheapest purchases that run its operating plan
             ─► independent check per period (solver.checker + the coupling limits here)
             ─► ``periods`` document, per-period BOM, cash flow

Exactness: every rung of every plan is evaluated exactly before the MILP (a few hundred
rungs at ~0.05-0.1 s each), so the MILP's value of a plan is the plan's value and its
bound bounds every plan: the reported gap is proven.

Determinism: the MILP stops at a relative gap (SolveOptions.phased_gap) or a node limit
(PHASED_NODE_LIMIT), with one fixed thread count and seed, so the same instance gives the
same plan on any machine, however fast or loaded. The wall-clock time limit is only a
safety net: a solve stopped by it says so (``solver.deterministic`` false, a note).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import pandas as pd
import pyomo.core as pyo

from models.design.candidates import build_design_data, exact_candidate, node_power_w
from models.design.chosen import ChosenDesign
from models.design.data import Candidate, DesignData
from models.design.evaluate import Evaluators, default_evaluators
from models.design.inputs import Inputs
from models.perf.flops import arch_of
from models.phased.data import (
    PeriodData,
    PhasedData,
    Plan,
    node_quantity,
    plans_of,
    with_candidates,
)
from models.phased.milp import TOKENS_UNIT, add_tiebreak, build_model, top_rung
from solver.backends import SolveOptions
from solver.backends.highs import MilpOutcome, solve_milp
from solver.checker import REL_TOL, Check, CheckResult, check_design
from solver.prepare import prepare
from solver.results import PhasedSummary, Status
from solver.schema import Instance

PHASED_NODE_LIMIT = 200
"""Branch-and-bound nodes of each phased MILP stage when SolveOptions.node_limit is unset:
the deterministic backstop when the gap target is not reached."""
CHECK_SHARE = 0.2
"""Share of the time limit kept for the checks and documents after the MILP stages: the
time limit covers the whole phased solve, candidates included."""


# --- from the instance to the data -----------------------------------------------------

def node_prices(inst: Instance) -> list[dict[str, float]]:
    """Node price of every GPU system in each period [USD] (catalog unless overridden)."""
    base = {g: inst.catalog.gpu[g].node_price_usd for g in inst.choices.gpus}
    return [base | {g: p.node_price_usd for g, p in period.prices.items()}
            for period in inst.periods]


def building_power_mw(inst: Instance) -> list[dict[str, float]]:
    """Energised IT power per building in each period [MW]."""
    full = {b.name: b.it_power_mw for b in inst.site.buildings}
    return [full | dict(period.it_power_mw) for period in inst.periods]


def envelope(inst: Instance) -> Instance:
    """A single-period instance whose candidates contain every period's: each building at
    its most energised, the campus budget, each GPU system at its lowest node price."""
    prices = node_prices(inst)
    power = building_power_mw(inst)
    gpus = {g: inst.catalog.gpu[g].model_copy(update={"node_price_usd": min(
        p[g] for p in prices)}) for g in inst.choices.gpus}
    catalog = inst.catalog.model_copy(update={"gpu": dict(inst.catalog.gpu) | gpus})
    buildings = [b.model_copy(update={"it_power_mw": max(p[b.name] for p in power) or
                                      b.it_power_mw}) for b in inst.site.buildings]
    campus = min(inst.limits.it_power_mw, max(sum(p.values()) for p in power))
    budget = min(inst.limits.budget_usd, sum(p.budget_usd for p in inst.periods))
    return inst.model_copy(update={
        "periods": [], "catalog": catalog,
        "site": inst.site.model_copy(update={"buildings": buildings}),
        "limits": inst.limits.model_copy(update={"it_power_mw": campus,
                                                 "budget_usd": budget})})


def period_data(inst: Instance) -> tuple[PeriodData, ...]:
    """Durations, discount factors, energised power, budgets, purchasable GPUs, prices and
    demand of each period."""
    out = []
    first = inst.periods[0].start
    rate = inst.objective.discount_rate_per_year
    prices, power = node_prices(inst), building_power_mw(inst)
    for i, p in enumerate(inst.periods):
        end = p.end if p.end is not None else inst.periods[i + 1].start
        years = (p.start - first).days / 365.25
        out.append(PeriodData(
            name=p.name, start=p.start.isoformat(), days=float((end - p.start).days),
            discount=(1 + rate) ** -years,
            building_w={b: mw * 1e6 for b, mw in power[i].items()},
            it_power_cap_w=min(inst.limits.it_power_mw, sum(power[i].values())) * 1e6,
            budget_usd=p.budget_usd,
            purchasable=frozenset(p.gpus if p.gpus is not None else inst.choices.gpus),
            node_price_usd=prices[i], demand_tokens=p.demand_tokens or 0.0))
    return tuple(out)


def phased_data(inst: Instance, inputs: Inputs, design: DesignData) -> PhasedData:
    base = {g: inputs.gpu[g].node_price_usd for g in inst.choices.gpus}
    return PhasedData(design, plans_of(design), period_data(inst), base,
                      inst.limits.budget_usd)


# --- the solve -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Cluster:
    """One plan in one period: the rung owned and the rung operating, with placement."""

    plan: Plan
    owned: Candidate
    operating: Candidate | None
    su_owned: dict[str, int]
    su_operating: dict[str, int]
    network_w: dict[str, float]
    network_racks: dict[str, float]


@dataclasses.dataclass(frozen=True)
class PeriodPlan:
    period: PeriodData
    clusters: tuple[Cluster, ...]
    facility_mw: float
    """Facility built by the period [MW of critical IT]."""


def exact_data(data: PhasedData, inputs: Inputs, evaluators: Evaluators,
               full: DesignData) -> PhasedData:
    """`data` with every rung that is not yet exact evaluated exactly."""
    return with_candidates(data, {k.key: exact_candidate(inputs, evaluators, full, k)
                                  for plan in data.plans for k in plan.ladder if not k.exact})


def node_limit(options: SolveOptions) -> int:
    return PHASED_NODE_LIMIT if options.node_limit is None else options.node_limit


def stage_options(options: SolveOptions, gap: float, deadline: float) -> SolveOptions:
    """The run's options for one MILP stage: the gap, the node limit, what is left of the
    wall-clock ``deadline`` (time.perf_counter())."""
    return dataclasses.replace(options, gap=gap, node_limit=node_limit(options),
                               time_limit_s=max(deadline - time.perf_counter(), 1.0))


def solve_plan(data: PhasedData, inputs: Inputs, evaluators: Evaluators,
               full: DesignData, options: SolveOptions, deadline: float
               ) -> tuple[MilpOutcome, PhasedData, pyo.ConcreteModel | None, bool]:
    """Evaluate every rung exactly, solve the MILP to options.phased_gap, then find the
    cheapest purchases that run its operating plan (models.phased.milp.add_tiebreak; for
    min capex, the most tokens from its purchases). Returns stage one's outcome (runtime:
    both stages), the exact data, the solved model and whether the answer is
    deterministic (no stage stopped at the wall-clock ``deadline``)."""
    data = exact_data(data, inputs, evaluators, full)
    model = build_model(data)
    outcome = solve_milp(model, stage_options(options, options.phased_gap, deadline))
    if not outcome.status.has_solution:
        return outcome, data, None, outcome.termination != "maxTimeLimit"
    stage_one = [(v, v.value) for v in model.component_data_objects(pyo.Var)]
    add_tiebreak(model)
    second = solve_milp(model, stage_options(options, options.gap, deadline))
    if not second.status.has_solution:  # keep stage one's solution
        for v, value in stage_one:
            v.set_value(value)
    deterministic = "maxTimeLimit" not in (outcome.termination, second.termination)
    return (dataclasses.replace(outcome, runtime_s=outcome.runtime_s + second.runtime_s),
            data, model, deterministic)


def extract(m: pyo.ConcreteModel, data: PhasedData) -> tuple[PeriodPlan, ...]:
    """Each period's clusters read off a solved model."""
    out = []
    for t, period in enumerate(data.periods):
        clusters = []
        net_total = {b: pyo.value(m.net_mw[b, t]) * 1e6 for b in m.BUILDINGS}
        racks_total = {b: pyo.value(m.net_racks[b, t]) for b in m.BUILDINGS}
        operating = {p.key: top_rung(m, m.op, p, t) for p in data.plans}
        network = {p: data_plan.ladder[j].network_power_w if j is not None else 0.0
                   for p, j, data_plan in ((p.key, operating[p.key], p) for p in data.plans)}
        net_racks = {p.key: p.ladder[operating[p.key]].network_racks
                     if operating[p.key] is not None else 0 for p in data.plans}
        all_w, all_racks = sum(network.values()), sum(net_racks.values())
        for plan in data.plans:
            j_own = top_rung(m, m.own, plan, t)
            if j_own is None:
                continue
            j_op = operating[plan.key]
            share = network[plan.key] / all_w if all_w else 0.0
            rack_share = net_racks[plan.key] / all_racks if all_racks else 0.0
            clusters.append(Cluster(
                plan, plan.ladder[j_own], plan.ladder[j_op] if j_op is not None else None,
                {b: round(pyo.value(m.su_own[b, plan.key, t])) for b in m.BUILDINGS},
                {b: round(pyo.value(m.su_op[b, plan.key, t])) for b in m.BUILDINGS},
                {b: share * net_total[b] for b in m.BUILDINGS},
                {b: rack_share * racks_total[b] for b in m.BUILDINGS}))
        out.append(PeriodPlan(period, tuple(clusters), float(pyo.value(m.fac_mw[t]))))
    return tuple(out)


# --- the independent check -------------------------------------------------------------

def period_inputs(inputs: Inputs, period: PeriodData) -> Inputs:
    """`inputs` with the period's energised buildings and campus power (the budget is
    checked on the cash flow, phased_checks)."""
    site = inputs.site.model_copy(update={"buildings": [
        b.model_copy(update={"it_power_mw": period.building_w[b.name] / 1e6})
        for b in inputs.site.buildings]})
    limits = inputs.limits.model_copy(update={"it_power_mw": period.it_power_cap_w / 1e6,
                                              "budget_usd": math.inf, "min_gpus": 0})
    return dataclasses.replace(inputs, site=site, limits=limits)


def check_plan(inputs: Inputs, design: DesignData, plan: tuple[PeriodPlan, ...],
               evaluators: Evaluators, full: DesignData) -> list[CheckResult]:
    """Per period: every operating cluster through solver.checker.check_design (fabric,
    media, parts, building power on the period's energisation), then the limits that
    couple clusters and periods (phased_checks)."""
    out, exact_of = [], {}
    for t, pp in enumerate(plan):
        checks: list[Check] = []
        p_inputs = period_inputs(inputs, pp.period)
        for c in pp.clusters:
            if c.operating is None:
                continue
            chosen = ChosenDesign(design.configs[c.plan.config], c.operating, c.su_operating,
                                  c.network_w, c.network_racks)
            if c.operating.key not in exact_of:
                exact_of[c.operating.key] = exact_candidate(inputs, evaluators, full,
                                                            c.operating)
            exact = exact_of[c.operating.key]
            verdict = check_design(p_inputs, chosen, dataclasses.replace(
                design, required_effective_tokens_per_s=0.0, min_goodput=0.0), exact)
            checks += [dataclasses.replace(x, name=f"{c.plan.gpu}:{x.name}")
                       for x in verdict.checks]
        checks += phased_checks(inputs, plan, t)
        out.append(CheckResult(tuple(checks)))
    return out


def _le(name: str, value: float, limit: float, detail: str) -> Check:
    return Check(name, value <= limit * (1 + REL_TOL) + 1e-6, value, limit, detail)


def cumulative_equipment_usd(inputs: Inputs, plan: tuple[PeriodPlan, ...], t: int,
                             prices_at: int) -> dict[str, float]:
    """Equipment owned at period t per plan, priced from its BOM with period
    `prices_at`'s node price (own arithmetic: BOM lines, not the MILP's coefficients)."""
    out = {}
    for c in plan[t].clusters:
        node_item = f"{c.plan.gpu} node"
        price = plan[prices_at].period.node_price_usd[c.plan.gpu]
        out[c.plan.key] = sum(line.quantity * (price if line.item == node_item
                                               else line.unit_cost_usd)
                              for line in c.owned.lines)
    return out


def spend_usd(inputs: Inputs, plan: tuple[PeriodPlan, ...], t: int) -> tuple[float, float]:
    """(equipment, facility) capital spent in period t [USD]."""
    now = cumulative_equipment_usd(inputs, plan, t, t)
    before = cumulative_equipment_usd(inputs, plan, t - 1, t) if t > 0 else {}
    equipment = sum(now.values()) - sum(before.values())
    built = plan[t].facility_mw - (plan[t - 1].facility_mw if t > 0 else 0.0)
    return equipment, built * inputs.facility.build_usd_per_mw


def operating_it_w(inputs: Inputs, pp: PeriodPlan) -> float:
    """Critical IT power of the clusters operating in a period, from their BOM [W]."""
    return (1 + inputs.facility.non_server_it_fraction) * sum(
        line.power_w for c in pp.clusters if c.operating is not None
        for line in c.operating.lines)


def phased_checks(inputs: Inputs, plan: tuple[PeriodPlan, ...], t: int) -> list[Check]:
    """Limits across clusters and periods, recomputed: building power (all clusters
    together), campus power, facility built, cash flow and campus budget, GPU cap,
    purchasability, one cluster per GPU system, equipment kept in place, demand."""
    pp, f_ns = plan[t], inputs.facility.non_server_it_fraction
    checks = []
    for b in inputs.site.buildings:
        load = 0.0
        for c in pp.clusters:
            parts = inputs.config(c.plan.config)
            su_nodes = math.ceil(node_quantity(c.owned) / c.owned.su_count)
            load += (1 + f_ns) * (c.su_operating[b.name] * su_nodes * node_power_w(parts)
                                  + c.network_w[b.name])
        checks.append(_le(f"building_power[{b.name}]", load / 1e6,
                          pp.period.building_w[b.name] / 1e6,
                          f"{pp.period.name}: building {b.name} draws {load / 1e6:.3f} MW of "
                          f"{pp.period.building_w[b.name] / 1e6:g} MW energised"))
    it_w = operating_it_w(inputs, pp)
    checks.append(_le("it_power", it_w / 1e6, pp.period.it_power_cap_w / 1e6,
                      f"{pp.period.name}: IT power {it_w / 1e6:.3f} MW"))
    peak = max(operating_it_w(inputs, plan[s]) for s in range(t + 1))
    checks.append(_le("facility_built", peak / 1e6, pp.facility_mw,
                      f"{pp.period.name}: facility {pp.facility_mw:.3f} MW below the IT "
                      f"power run so far {peak / 1e6:.3f} MW"))
    equipment, facility = spend_usd(inputs, plan, t)
    checks.append(_le("cash_flow", equipment + facility, pp.period.budget_usd,
                      f"{pp.period.name}: spent ${equipment + facility:,.0f} > budget "
                      f"${pp.period.budget_usd:,.0f}"))
    total = sum(sum(spend_usd(inputs, plan, s)) for s in range(t + 1))
    checks.append(_le("campus_budget", total, inputs.limits.budget_usd,
                      f"spent ${total:,.0f} by {pp.period.name} > limits.budget_usd"))
    gpus = sum(c.operating.gpus for c in pp.clusters if c.operating is not None)
    if inputs.limits.max_gpus is not None:
        checks.append(_le("max_gpus", gpus, inputs.limits.max_gpus,
                          f"{gpus} GPUs operate > max_gpus"))
    previous = {c.plan.key: c for c in plan[t - 1].clusters} if t > 0 else {}
    for c in pp.clusters:
        before = previous.get(c.plan.key)
        grew = before is None or c.owned.nodes > before.owned.nodes
        checks.append(Check(f"purchasable[{c.plan.gpu}]", not grew
                            or c.plan.gpu in pp.period.purchasable, float(grew), 0.0,
                            f"{c.plan.gpu} bought in {pp.period.name}, where it is not "
                            "purchasable"))
        if before is not None:
            moved = [b for b in c.su_owned if c.su_owned[b] < before.su_owned[b]]
            checks.append(Check(f"kept_in_place[{c.plan.gpu}]", not moved, len(moved), 0,
                                f"{c.plan.gpu} scalable units left buildings {moved}"))
            checks.append(Check(f"same_plan[{c.plan.gpu}]",
                                c.owned.nodes >= before.owned.nodes, c.owned.nodes,
                                before.owned.nodes, "owned equipment shrank"))
    generations = [c.plan.gpu for s in range(t + 1) for c in plan[s].clusters]
    plans = {(c.plan.gpu, c.plan.key) for s in range(t + 1) for c in plan[s].clusters}
    checks.append(Check("one_cluster_per_gpu_system",
                        len(plans) == len(set(generations)), len(plans),
                        len(set(generations)), "two plans of one GPU system"))
    if pp.period.demand_tokens > 0:
        trained = sum(period_tokens(plan[s]) for s in range(t + 1))
        checks.append(Check("demand_tokens", trained >= pp.period.demand_tokens
                            * (1 - REL_TOL), trained, pp.period.demand_tokens,
                            f"{trained:.4g} tokens trained by the end of {pp.period.name} < "
                            f"{pp.period.demand_tokens:.4g} demanded"))
    return checks


def period_tokens(pp: PeriodPlan) -> float:
    """Effective tokens trained in a period by its operating clusters (exact values)."""
    return pp.period.seconds * sum(c.operating.effective_tokens_per_s
                                   for c in pp.clusters if c.operating is not None)


# --- the document ----------------------------------------------------------------------

def cluster_document(c: Cluster, design: DesignData, spend: float, it_fraction: float
                     ) -> dict[str, Any]:
    cfg = design.configs[c.plan.config]
    op = c.operating
    return {
        "plan": c.plan.key, "gpu": c.plan.gpu, "switch": cfg.switch, "nic": cfg.nic,
        "tiers": c.plan.tiers, "pods": c.owned.extra.get("pods", 1),
        "rail_optimized": cfg.rail_optimized, "recovery": cfg.recovery,
        "gpus_owned": c.owned.gpus, "nodes_owned": c.owned.nodes,
        "spare_nodes_owned": c.owned.spare_nodes,
        "gpus_operating": op.gpus if op else 0,
        "switches_per_tier_owned": list(c.owned.switches_per_tier),
        "tokens_per_s": op.tokens_per_s if op else 0.0,
        "goodput": op.goodput if op else 0.0,
        "effective_tokens_per_s": op.effective_tokens_per_s if op else 0.0,
        "scalable_units_per_building": c.su_owned,
        "scalable_units_operating_per_building": c.su_operating,
        "decommissioned": op is None or op.nodes < c.owned.nodes,
        "spend_usd": spend,
        "it_mw": (1 + it_fraction) * sum(x.power_w for x in op.lines) / 1e6 if op else 0.0,
    }


def periods_document(inputs: Inputs, design: DesignData, plan: tuple[PeriodPlan, ...],
                     verdicts: list[CheckResult]) -> list[dict[str, Any]]:
    """The ``periods`` list of the result document."""
    out, cumulative = [], 0.0
    flops_per_token = arch_of(inputs.workload).model_flops_per_token
    for t, pp in enumerate(plan):
        equipment, facility = spend_usd(inputs, plan, t)
        now = cumulative_equipment_usd(inputs, plan, t, t)
        before = cumulative_equipment_usd(inputs, plan, t - 1, t) if t > 0 else {}
        bought = {k: v - before.get(k, 0.0) for k, v in now.items()}
        tokens = period_tokens(pp)
        cumulative += tokens
        out.append({
            "name": pp.period.name, "start": pp.period.start,
            "days": pp.period.days, "discount": pp.period.discount,
            "energised_mw": sum(pp.period.building_w.values()) / 1e6,
            "it_mw": operating_it_w(inputs, pp) / 1e6, "facility_built_mw": pp.facility_mw,
            "budget_usd": pp.period.budget_usd,
            "spend_usd": {"equipment": equipment, "facility": facility,
                          "total": equipment + facility},
            "gpus_operating": sum(c.operating.gpus for c in pp.clusters if c.operating),
            "effective_tokens_per_s": sum(c.operating.effective_tokens_per_s
                                          for c in pp.clusters if c.operating),
            "tokens": tokens, "cumulative_tokens": cumulative,
            "cumulative_flops": cumulative * flops_per_token,
            "demand_tokens": pp.period.demand_tokens or None,
            "clusters": [cluster_document(c, design, bought[c.plan.key],
                                          inputs.facility.non_server_it_fraction)
                         for c in pp.clusters],
            "verified": verdicts[t].ok, "check_failures": verdicts[t].failures,
        })
    return out


def bom_table(inputs: Inputs, plan: tuple[PeriodPlan, ...]) -> pd.DataFrame:
    """Parts bought in each period: the growth of every owned BOM line, at the period's
    node price."""
    rows = []
    for t, pp in enumerate(plan):
        before = {c.plan.key: {x.item: x.quantity for x in c.owned.lines}
                  for c in (plan[t - 1].clusters if t > 0 else ())}
        for c in pp.clusters:
            had = before.get(c.plan.key, {})
            for line in c.owned.lines:
                bought = line.quantity - had.get(line.item, 0.0)
                if bought <= 0:
                    continue
                unit = (pp.period.node_price_usd[c.plan.gpu]
                        if line.item == f"{c.plan.gpu} node" else line.unit_cost_usd)
                rows.append({"period": pp.period.name, "gpu": c.plan.gpu, "item": line.item,
                             "category": line.category, "quantity": bought,
                             "unit_cost_usd": unit, "cost_usd": bought * unit,
                             "power_w": bought * line.unit_power_w})
        _, facility = spend_usd(inputs, plan, t)
        if facility > 0:
            rows.append({"period": pp.period.name, "gpu": "", "item": "facility build [MW IT]",
                         "category": "facility", "quantity": facility
                         / inputs.facility.build_usd_per_mw,
                         "unit_cost_usd": inputs.facility.build_usd_per_mw,
                         "cost_usd": facility, "power_w": 0.0})
    return pd.DataFrame(rows, columns=["period", "gpu", "item", "category", "quantity",
                                       "unit_cost_usd", "cost_usd", "power_w"])


def cash_flow_table(periods: list[dict[str, Any]]) -> pd.DataFrame:
    """Spend, budget, discounted spend, tokens per period."""
    rows, spent = [], 0.0
    for p in periods:
        spent += p["spend_usd"]["total"]
        rows.append({"period": p["name"], "days": p["days"], "budget_usd": p["budget_usd"],
                     "equipment_usd": p["spend_usd"]["equipment"],
                     "facility_usd": p["spend_usd"]["facility"],
                     "spend_usd": p["spend_usd"]["total"], "cumulative_spend_usd": spent,
                     "discount": p["discount"],
                     "discounted_spend_usd": p["discount"] * p["spend_usd"]["total"],
                     "it_mw": p["it_mw"], "gpus_operating": p["gpus_operating"],
                     "tokens": p["tokens"], "cumulative_tokens": p["cumulative_tokens"]})
    return pd.DataFrame(rows)


def solve_phased(inst: Instance, options: SolveOptions | None = None,
                 evaluators: Evaluators | None = None):
    """The optimal phased build-out of ``inst`` (which has periods): what to buy in each
    period, verified per period. Returns a solver.api.SolveResult whose summary has a
    ``periods`` list."""
    from solver.api import SolveResult  # the result type of every solve

    start = time.perf_counter()
    options = options or SolveOptions()
    inputs = prepare(envelope(inst))
    evaluators = evaluators or default_evaluators(inputs)
    full, notes = build_design_data(inputs, evaluators)
    data = phased_data(inst, inputs, full)
    base = {"instance": inst.name, "notes": notes, "diagnosis": []}
    if not data.plans:
        return _without_plan(inputs, Status.INFEASIBLE, base | {"diagnosis": [
            "no GPU system fits the site's largest energised power and budget"] + notes},
            options, start)
    deadline = start + options.time_limit_s * (1 - CHECK_SHARE)
    outcome, data, model, deterministic = solve_plan(data, inputs, evaluators, full,
                                                     options, deadline)
    if not deterministic:
        notes = [*notes, "the phased MILP stopped at the wall-clock time limit before its "
                 "gap target: this plan depends on the machine's speed and load and is not "
                 "reproducible; raise --time-limit"]
        base["notes"] = notes
    if model is None:
        diagnosis = (["no build-out meets every period's power, cash flow and demand"]
                     if outcome.status == Status.INFEASIBLE else [])
        return _without_plan(inputs, outcome.status, base | {"diagnosis": diagnosis},
                             options, start)
    plan = extract(model, data)
    verdicts = check_plan(inputs, full, plan, evaluators, full)
    periods = periods_document(inputs, full, plan, verdicts)
    objective = ("discounted_cumulative_effective_tokens"
                 if full.objective == "max_effective_throughput" else "discounted_capex_usd")
    value = (sum(p["discount"] * p["tokens"] for p in periods)
             if full.objective == "max_effective_throughput"
             else sum(p["discount"] * p["spend_usd"]["total"] for p in periods))
    gap = proven_gap(outcome, value, objective)
    status = Status.OPTIMAL if gap is not None and gap <= options.gap else Status.FEASIBLE
    summary = PhasedSummary(**base, **{
        "status": status, "verified": all(v.ok for v in verdicts),
        "objective": {"name": objective, "value": value,
                      "milp_value": outcome.objective * (TOKENS_UNIT if objective.endswith(
                          "tokens") else 1e6)},
        "periods": periods,
        "totals": {"spend_usd": sum(p["spend_usd"]["total"] for p in periods),
                   "tokens": periods[-1]["cumulative_tokens"],
                   "flops": periods[-1]["cumulative_flops"],
                   "discount_rate_per_year": inst.objective.discount_rate_per_year},
        "solver": {"backend": "milp-highs", "termination": outcome.termination,
                   "gap": gap, "gap_target": options.phased_gap,
                   "node_limit": node_limit(options),
                   "deterministic": deterministic, "milp_runtime_s": outcome.runtime_s,
                   "runtime_s": round(time.perf_counter() - start, 3),
                   "time_limit_s": options.time_limit_s},
    })
    tables = {"bom": bom_table(inputs, plan), "cash_flow": cash_flow_table(periods)}
    return SolveResult(status, summary, tables, None, tuple(notes), inputs)


def proven_gap(outcome: MilpOutcome, value: float, objective: str) -> float | None:
    """(bound - value) / |value| with the MILP's bound (an upper bound on the tokens, or a
    lower bound on the cost, of every plan) and the exactly evaluated plan's value."""
    if outcome.best_bound is None or not value:
        return None
    scale = TOKENS_UNIT if objective.endswith("tokens") else 1e6
    diff = outcome.best_bound * scale - value
    return max(0.0, diff if objective.endswith("tokens") else -diff) / abs(value)


def _without_plan(inputs: Inputs, status: Status, summary: dict[str, Any],
                  options: SolveOptions, start: float):
    from solver.api import SolveResult

    document = PhasedSummary(**summary, status=status, verified=False, periods=(), solver={
        "backend": "milp-highs", "runtime_s": round(time.perf_counter() - start, 3),
        "gap": None, "time_limit_s": options.time_limit_s})
    return SolveResult(status, document, {}, None, tuple(summary["notes"]), inputs)
