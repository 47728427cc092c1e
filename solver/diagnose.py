"""Why an instance is infeasible, in the instance's own terms.

Elastic re-solve: the resource limits (IT power, building power, space, budget) get
non-negative slack, minimised in normalised units, while the requirements (GPU range,
throughput/deadline) stay hard. Each non-zero slack says which limit conflicts with the
requirements and how much more of it they need.
"""

from __future__ import annotations

import dataclasses
import math

import pyomo.core as pyo

from models.design.candidates import max_nodes, no_hall_takes_a_node, node_power_w
from models.design.data import DesignData, PodSite
from models.design.inputs import Inputs
from models.design.milp import build_model
from solver.backends import SolveOptions
from solver.backends.highs import solve_milp

FAR_FACTOR = 4
"""A requirement more than this many times the largest size the limits allow is
diagnosed from lower bounds (the relaxed candidates reach 4x the limits, see
models.design.candidates.max_nodes; beyond, their ladders take hours)."""


def no_rack_takes_a_node(inputs: Inputs) -> list[str]:
    """When no hall takes a node of any configuration in ``choices`` (rack power, or a
    liquid-cooled system without a liquid-cooled hall:
    models.design.candidates.no_hall_takes_a_node), that first, whatever the requirements
    (no size of any configuration exists); else []."""
    refusals = [no_hall_takes_a_node(inputs, p) for p in inputs.configs]
    if not refusals or None in refusals:
        return []
    return ["no hall takes a node of any configuration in `choices`, so no design of any "
            "size exists; raise the rack power or choose another system: "
            + "; ".join(r.removesuffix("; skipped") for r in refusals)]


def far_beyond_limits(inputs: Inputs) -> list[str]:
    """When limits.min_gpus is more than FAR_FACTOR times the largest design any choice
    could fit in the power and budget limits: what it needs at least, in the instance's
    terms (servers, NICs and facility build only: a lower bound); else []."""
    limits, fac = inputs.limits, inputs.facility
    if not limits.min_gpus or not inputs.configs:
        return []
    largest = max(max_nodes(inputs, p) * p.gpu.gpus_per_node for p in inputs.configs)
    if limits.min_gpus <= FAR_FACTOR * largest:
        return []

    def need(p) -> tuple[float, float]:
        nodes = math.ceil(limits.min_gpus / p.gpu.gpus_per_node)
        it_w = nodes * node_power_w(p) * (1 + fac.non_server_it_fraction)
        usd = (nodes * (p.gpu.node_price_usd + p.gpu.nics_per_node * p.nic.price_usd)
               + fac.build_usd_per_mw * it_w / 1e6)
        return it_w, usd

    it_w, usd = min(need(p) for p in inputs.configs)
    msgs = [f"limits.min_gpus {limits.min_gpus:,} is far beyond the largest design the "
            f"limits allow (about {largest:,} GPUs)"]
    if it_w > limits.it_power_mw * 1e6:
        msgs.append(f"limits.it_power_mw {given(limits.it_power_mw)} cannot host it; needs >= "
                    f"{ceil_to(it_w / 1e6, 0):,.0f} (servers and NICs alone)")
    if usd > limits.budget_usd:
        msgs.append(f"limits.budget_usd {limits.budget_usd:,.0f} cannot buy it; needs >= "
                    f"{math.ceil(usd):,} (servers, NICs and facility build alone)")
    return msgs


def requirement_text(data: DesignData) -> str:
    parts = []
    if data.min_gpus:
        parts.append(f"the minimum {data.min_gpus:,} GPUs")
    if data.required_effective_tokens_per_s:
        parts.append(f"{data.required_effective_tokens_per_s:,.0f} effective tokens/s")
    if data.min_goodput:
        parts.append(f"goodput >= {given(data.min_goodput)}")
    if data.min_site_availability:
        parts.append(f"site availability >= {given(data.min_site_availability)}")
    return " and ".join(parts) or "even the smallest design"


def requirement_fields(data: DesignData) -> list[str]:
    """The instance fields behind requirement_text's requirements (and max_gpus)."""
    return [name for name, active in (
        ("limits.min_gpus", data.min_gpus), ("limits.max_gpus", data.max_gpus is not None),
        ("objective.required_tokens_per_s or limits.deadline_days",
         data.required_effective_tokens_per_s),
        ("reliability.min_goodput", data.min_goodput),
        ("reliability.site_availability_target", data.min_site_availability)) if active]


def above(required: float, best: float, decimals: int) -> tuple[str, str]:
    """``required`` and ``best < required`` printed at the same decimals: at least
    ``decimals``, and as many more as show ``required`` as given and still tell the two
    apart, so "required is above best" reads true (0.999999999 above 0.999950000, where
    :g printed 1 above 0.999950)."""
    d = decimals
    while d < 15 and (round(required, d) != required or round(best, d) >= round(required, d)):
        d += 1
    return f"{required:.{d}f}", f"{best:.{d}f}"


def given(value: float) -> str:
    """A field's value as the instance gives it (up to 15 significant digits; :g kept
    6, printing a target of 0.999999999 as 1)."""
    return f"{value:.15g}"


def ceil_to(value: float, digits: int) -> float:
    """Round up at `digits` decimals, so a reported need is never below the real one."""
    scale = 10 ** digits
    return math.ceil(value * scale - 1e-9) / scale


def unmet_requirements(data: DesignData, notes: list[str]) -> list[str]:
    """Why no design meets the requirements at any power or budget (e.g. max_gpus)."""
    if not data.candidates:
        if data.min_gpus:
            return [f"limits.min_gpus {data.min_gpus:,} is beyond every fabric in `choices`: "
                    + "; ".join(notes)]
        return ["no configuration in `choices` yields a buildable design: " + "; ".join(notes)]
    smallest = min(data.candidates, key=lambda k: k.gpus)
    if data.max_gpus is not None and smallest.gpus > data.max_gpus:
        return [f"limits.max_gpus {data.max_gpus:,} is below the smallest design in `choices`"
                f" ({smallest.gpus:,} GPUs: one scalable unit of {smallest.nodes:,} "
                f"{data.configs[smallest.config].gpu} nodes on "
                f"{data.configs[smallest.config].switch})"]
    best_tput = max(k.effective_tokens_per_s for k in data.candidates)
    largest = max(k.gpus for k in data.candidates)
    within = (f" within limits.max_gpus {data.max_gpus:,}" if data.max_gpus is not None
              else "")
    msgs = []
    if data.min_gpus > largest:
        msgs.append(f"limits.min_gpus {data.min_gpus:,} exceeds the largest design{within} "
                    f"({largest:,} GPUs)")
    if data.required_effective_tokens_per_s > best_tput:
        msgs.append(f"the required {data.required_effective_tokens_per_s:,.0f} effective "
                    f"tokens/s (objective.required_tokens_per_s or limits.deadline_days) is "
                    f"out of reach{within}: the best design reaches {best_tput:,.0f}")
    best_goodput = max(k.goodput for k in data.candidates)
    if data.min_goodput > best_goodput:
        need, best = above(data.min_goodput, best_goodput, 3)
        msgs.append(f"reliability.min_goodput {need} is above the best goodput of any "
                    f"design ({best})")
    best_site = max(k.site_availability for k in data.candidates)
    if data.min_site_availability > best_site:
        need, best = above(data.min_site_availability, best_site, 6)
        msgs.append(f"reliability.site_availability_target {need} is above the availability "
                    f"of every power and cooling chain in `choices` (the best reaches {best}; "
                    f"add redundancy to choices.redundancy or lower the target)")
    return msgs or [f"no one design in `choices` meets {requirement_text(data)} at once "
                    "(each is met by some design, none meets all); relax one of "
                    + ", ".join(requirement_fields(data))]


def hall_field(data: DesignData, site: PodSite) -> str:
    """The instance field of a pod's hall: ``site.buildings[b].halls[h]``."""
    building = next(b for b in data.buildings if b.name == site.building)
    return f"site.buildings[{site.building}].halls[{building.hall_names[site.hall]}]"


def diagnose(data: DesignData, options: SolveOptions) -> list[str]:
    """Messages naming each conflicting limit with the value the requirements need (the
    elastic model is solved to a gap of 1e-6 whatever the run's gap)."""
    m = build_model(data, elastic=True)
    outcome = solve_milp(m, dataclasses.replace(options, gap=1e-6))
    need = requirement_text(data)
    if outcome.status == "no_solution" and options.deadline.expired():
        raise options.deadline.reached()
    if outcome.status not in ("optimal", "feasible"):
        return [f"no configuration in `choices` can meet {need} at any power or budget "
                "(check limits.max_gpus, choices and the workload)"]
    msgs = []
    if hasattr(m, "slack_it_power") and pyo.value(m.slack_it_power) > 1e-6:
        cap = data.it_power_cap_w / 1e6
        msgs.append(f"limits.it_power_mw {given(cap)} cannot host {need}; needs >= "
                    f"{ceil_to(cap + pyo.value(m.slack_it_power), 2):.2f}")
    if hasattr(m, "slack_budget") and pyo.value(m.slack_budget) > 1e-6:
        need_usd = math.ceil(data.budget_usd + pyo.value(m.slack_budget) * 1e6)
        msgs.append(f"limits.budget_usd {data.budget_usd:,.0f} cannot buy {need}; needs >= "
                    f"{need_usd:,.0f} ({data.budget_basis})")
    for b in data.buildings:
        if hasattr(m, "slack_building_power"):
            extra_mw = pyo.value(m.slack_building_power[b.name])
            if extra_mw > 1e-6:
                msgs.append(f"site.buildings[{b.name}].it_power_mw "
                            f"{given(b.it_power_w / 1e6)} is too small for its share of "
                            f"{need}; needs >= "
                            f"{ceil_to(b.it_power_w / 1e6 + extra_mw, 2):.2f}")
        if hasattr(m, "slack_space") and b.name in m.RACK_LIMITED:
            extra = pyo.value(m.slack_space[b.name])
            if extra > 1e-6:
                msgs.append(f"site.buildings[{b.name}].max_racks {b.max_racks} is too small for "
                            f"{need}; needs >= {math.ceil(b.max_racks + extra - 1e-6)}")
        if hasattr(m, "slack_block_slots"):
            msgs += [f"site.buildings[{b.name}]: its halls' rows have too few positions for "
                     f"the scalable units of {need} ({c}); short by "
                     f"{math.ceil(pyo.value(m.slack_block_slots[b.name, c]) - 1e-6)} block slots"
                     for c in m.CONFIGS if pyo.value(m.slack_block_slots[b.name, c]) > 1e-6]
        extra_mw = pyo.value(m.slack_block_power[b.name]) if hasattr(
            m, "slack_block_power") else 0.0
        if extra_mw > 1e-6:
            msgs.append(f"site.buildings[{b.name}].it_power_mw {given(b.it_power_w / 1e6)} cannot "
                        f"feed the scalable-unit blocks placement puts there for {need}; needs "
                        f">= {ceil_to(b.it_power_w / 1e6 + extra_mw, 2):.2f}")
        if hasattr(m, "slack_pod_power"):
            msgs += [f"site.buildings[{b.name}]: its halls cannot feed one pod of {need} ({c}) "
                     f"with its switches (one pod per building); short by "
                     f"{ceil_to(pyo.value(m.slack_pod_power[b.name, c]), 2):.2f} MW"
                     for bb, c in m.POD_POWER
                     if bb == b.name and pyo.value(m.slack_pod_power[bb, c]) > 1e-6]
    if hasattr(m, "slack_pod_hall_slots"):  # one pod per hall
        msgs += [f"{hall_field(data, data.pod_sites(data.configs[c])[i])}: its rows have too few "
                 f"positions for one pod of {need} ({c}, one pod per hall); short by "
                 f"{math.ceil(pyo.value(m.slack_pod_hall_slots[i, c]) - 1e-6)} block slots"
                 for i, c in m.POD_HALLS if pyo.value(m.slack_pod_hall_slots[i, c]) > 1e-6]
    return msgs or [f"the limits cannot be met together with {need}"]
