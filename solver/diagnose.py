"""Why an instance is infeasible, in the instance's own terms.

Elastic re-solve: the resource limits (IT power, building power, space, budget) get
non-negative slack, minimised in normalised units, while the requirements (GPU range,
throughput/deadline) stay hard. Each non-zero slack says which limit conflicts with the
requirements and how much more of it they need.
"""

from __future__ import annotations

import pyomo.environ as pyo

from models.design.data import DesignData
from models.design.milp import build_model
from solver.backends.highs import solve_milp


def requirement_text(data: DesignData) -> str:
    parts = []
    if data.min_gpus:
        parts.append(f"the minimum {data.min_gpus:,} GPUs")
    if data.required_effective_tokens_per_s:
        parts.append(f"{data.required_effective_tokens_per_s:,.0f} effective tokens/s")
    if data.min_goodput:
        parts.append(f"goodput >= {data.min_goodput:g}")
    return " and ".join(parts) or "even the smallest design"


def diagnose(data: DesignData, opts) -> list[str]:
    """Messages naming each conflicting limit with the value the requirements need."""
    m = build_model(data, elastic=True)
    outcome = solve_milp(m, opts.time_limit_s, 1e-6, opts.threads)
    need = requirement_text(data)
    if outcome.status not in ("optimal", "feasible"):
        return [f"no configuration in `choices` can meet {need} at any power or budget "
                "(check limits.max_gpus, choices and the workload)"]
    msgs = []
    if hasattr(m, "slack_it_power") and pyo.value(m.slack_it_power) > 1e-6:
        cap = data.it_power_cap_w / 1e6
        msgs.append(f"limits.it_power_mw {cap:g} cannot host {need}; needs >= "
                    f"{cap + pyo.value(m.slack_it_power):.1f}")
    if hasattr(m, "slack_budget") and pyo.value(m.slack_budget) > 1e-6:
        need_usd = data.budget_usd + pyo.value(m.slack_budget) * 1e6
        msgs.append(f"limits.budget_usd {data.budget_usd:,.0f} cannot buy {need}; needs >= "
                    f"{need_usd:,.0f} ({data.budget_basis})")
    for b in data.buildings:
        if hasattr(m, "slack_building_power"):
            extra_mw = pyo.value(m.slack_building_power[b.name])
            if extra_mw > 1e-6:
                msgs.append(f"site.buildings[{b.name}].it_power_mw {b.it_power_w / 1e6:g} is too "
                            f"small for its share of {need}; needs >= "
                            f"{b.it_power_w / 1e6 + extra_mw:.1f}")
        if hasattr(m, "slack_space") and b.name in m.RACK_LIMITED:
            extra = pyo.value(m.slack_space[b.name])
            if extra > 1e-6:
                msgs.append(f"site.buildings[{b.name}].max_racks {b.max_racks} is too small for "
                            f"{need}; needs >= {b.max_racks + extra:.0f}")
    return msgs or [f"the limits cannot be met together with {need}"]
