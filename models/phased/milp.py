"""The phased build-out MILP (Pyomo): what to buy in each period, carried forward.

Indices: plans p (models.phased.data.Plan) with rungs j = 0..n_p-1 (ascending size),
periods t = 0..T-1, buildings b. Variables:
  own[p,j,t] in {0,1}   rung j of plan p has been bought by period t
  op[p,j,t]  in {0,1}   rung j of plan p operates (trains) in period t
  su_own[b,p,t], su_op[b,p,t] in Z+   scalable units of p owned / operating in b
  net_mw[b,t], net_racks[b,t] >= 0    network power / racks operating in b
  fac_mw[t] >= 0        facility (critical IT MW) built by period t
Ladders (the delta formulation of models.design.milp, per period):
  own[p,j,t] <= own[p,j-1,t],  op[p,j,t] <= op[p,j-1,t],  op <= own
  a quantity of the operating cluster = sum_j (a_j - a_{j-1}) op[p,j,t]
Carried forward and decommissioned:
  own[p,j,t-1] <= own[p,j,t]                       bought parts stay bought
  op[p,j,t] <= op[p,j,t-1] + own[p,j,t] - own[p,j,t-1]
                                                   a rung stopped stays stopped
                                                   (decommissioned, its power freed)
  su_own[b,p,t-1] <= su_own[b,p,t];  su_op <= su_own  equipment does not move
  own[p,j,t] <= own[p,j,t-1] when p's GPU system is not purchasable in t
  sum_{p of GPU g} own[p,0,T-1] <= 1               one cluster (pod set) per generation
Limits per period t:
  building:  (1+f) (sum_p su_w_p su_op[b,p,t] + net_mw[b,t]) <= P_{b,t}
  campus:    (1+f) sum_p equipment_mw(op_p,t) <= P_t;   fac_mw[t] >= that, non-decreasing
  space:     sum_p su_racks_p su_op[b,p,t] + net_racks[b,t] <= R_b
  blocks (models.design.milp.add_block_slots, add_block_power: placement's blocks and
  network racks at the conservative switch power, as placement counts them):
             sum_b blocks_own[b,p,t] = blocks(own_p,t), sum_b blocks_op[b,p,t] = blocks(op_p,t),
             blocks_own[b,p,t-1] <= blocks_own[b,p,t], blocks_op <= blocks_own,
             blocks_own[b,p,t] <= slots_b(own_p,t);  sum_b net_rack_mw[b,t] = rack MW(op,t)
             sum_p block_MW_p blocks_op[b,p,t] + net_rack_mw[b,t]
                 <= min(P_{b,t} / (1+f), halls_b)
  pods aligned with buildings or halls (models.design.milp's pod families, per period, on
  the rungs owned and operating): node power and block power of the pods standing in b,
  blocks_x[b,p,t] = p_b B/P, su_x[b,p,t] <= p_b ⌈n_pod/su⌉, a pod within its site's
  power, one pod per hall within its hall's block slots
  spend_t = sum_{p,j} dcapex_t[p,j] (own[p,j,t] - own[p,j,t-1])
            + c_MW (fac_mw[t] - fac_mw[t-1]) <= B_t;   sum_t spend_t <= B
  GPUs:      sum_p gpus(op_p,t) <= max_gpus
  demand:    sum_{s<=t} seconds_s sum_p tokens(op_p,s) >= D_t
Objective: maximise sum_t discount_t seconds_t sum_p tokens(op_p,t)  [Ttokens]
           or minimise sum_t discount_t spend_t  [M$]
with tokens the candidates' effective tokens/s (upper bounds where not exact:
models.phased.data.optimistic_tokens_per_s). Money in M$, power in MW, tokens in 1e12.
"""

from __future__ import annotations

from collections.abc import Callable

import pyomo.core as pyo

from models.design import milp as single
from models.design.data import Candidate
from models.phased.data import PhasedData, Plan, capex_in, optimistic_tokens_per_s

TOKENS_UNIT = 1e12
"""Tokens in the model are counted in units of 1e12 (Ttokens)."""


def rung_sum(m: pyo.ConcreteModel, var: pyo.Var, t: int,
             attr: Callable[[Plan, Candidate], float], plans: list[Plan] | None = None
             ) -> pyo.Expression:
    """sum_{p,j} (a_j - a_{j-1}) var[p,j,t] for a = attr(plan, rung)."""
    terms = []
    for plan in plans or m.data.plans:
        previous = 0.0
        for j, k in enumerate(plan.ladder):
            value = attr(plan, k)
            if value != previous:
                terms.append((value - previous) * var[plan.key, j, t])
            previous = value
    return pyo.quicksum(terms)


def chosen(m: pyo.ConcreteModel, var: pyo.Var, p: str, t: int) -> single.Chosen:
    """Plan p's rung in ``var`` (owned or operating) at period t, as the single-period pod
    families (models.design.milp.pod_blocks, ...) read a configuration's chosen size."""
    return lambda a: rung_sum(m, var, t, lambda _p, k: a(k), [m.plan[p]])


def aligned(m: pyo.ConcreteModel) -> list[str]:
    """Plans whose configuration has one pod per building (or hall)."""
    return [p for p in m.PLANS if m.data.design.configs[m.plan[p].config].pods_in_buildings]


def add_core(m: pyo.ConcreteModel, data: PhasedData) -> None:
    """Sets, variables, ladders, carrying forward and the per-period expressions."""
    m.data = data
    plans = {p.key: p for p in data.plans}
    m.plan = plans
    m.PLANS = pyo.Set(initialize=sorted(plans), ordered=True)
    m.PERIODS = pyo.Set(initialize=list(range(len(data.periods))), ordered=True)
    m.BUILDINGS = pyo.Set(initialize=[b.name for b in data.design.buildings], ordered=True)
    m.RUNGS = pyo.Set(initialize=[(p, j, t) for p in m.PLANS for j in range(len(plans[p].ladder))
                                  for t in m.PERIODS], dimen=3, ordered=True)
    m.PLACED = pyo.Set(initialize=[(b, p, t) for b in m.BUILDINGS for p in m.PLANS
                                   for t in m.PERIODS], dimen=3, ordered=True)
    m.own = pyo.Var(m.RUNGS, domain=pyo.Binary, doc="rung bought by the period")
    m.op = pyo.Var(m.RUNGS, domain=pyo.Binary, doc="rung operating in the period")
    m.su_own = pyo.Var(m.PLACED, domain=pyo.NonNegativeIntegers)
    m.su_op = pyo.Var(m.PLACED, domain=pyo.NonNegativeIntegers)
    m.net_mw = pyo.Var(m.BUILDINGS, m.PERIODS, domain=pyo.NonNegativeReals)
    m.net_racks = pyo.Var(m.BUILDINGS, m.PERIODS, domain=pyo.NonNegativeReals)
    m.fac_mw = pyo.Var(m.PERIODS, domain=pyo.NonNegativeReals, doc="facility built [MW IT]")

    @m.Constraint(m.RUNGS)
    def own_order(m, p, j, t):
        return m.own[p, j, t] <= m.own[p, j - 1, t] if j > 0 else pyo.Constraint.Skip

    @m.Constraint(m.RUNGS)
    def op_order(m, p, j, t):
        return m.op[p, j, t] <= m.op[p, j - 1, t] if j > 0 else pyo.Constraint.Skip

    @m.Constraint(m.RUNGS)
    def op_owned(m, p, j, t):
        return m.op[p, j, t] <= m.own[p, j, t]

    @m.Constraint(m.RUNGS)
    def kept(m, p, j, t):
        return m.own[p, j, t - 1] <= m.own[p, j, t] if t > 0 else pyo.Constraint.Skip

    @m.Constraint(m.RUNGS)
    def stopped_stays_stopped(m, p, j, t):
        if t == 0:
            return pyo.Constraint.Skip
        return m.op[p, j, t] <= m.op[p, j, t - 1] + m.own[p, j, t] - m.own[p, j, t - 1]

    @m.Constraint(m.RUNGS)
    def purchasable(m, p, j, t):
        if plans[p].gpu in data.periods[t].purchasable:
            return pyo.Constraint.Skip
        return m.own[p, j, t] <= (m.own[p, j, t - 1] if t > 0 else 0)

    last = len(data.periods) - 1
    gens = sorted({p.gpu for p in data.plans})

    @m.Constraint(gens, doc="one cluster per GPU system")
    def one_cluster(m, g):
        return pyo.quicksum(m.own[p.key, 0, last] for p in data.plans if p.gpu == g) <= 1

    m.gpus = pyo.Expression(m.PERIODS, rule=lambda m, t: rung_sum(m, m.op, t, lambda p, k: k.gpus))
    m.equipment_mw = pyo.Expression(m.PERIODS, rule=lambda m, t: rung_sum(
        m, m.op, t, lambda p, k: k.equipment_power_w / 1e6))
    f = 1 + data.design.non_server_it_fraction
    m.it_power_mw = pyo.Expression(m.PERIODS, rule=lambda m, t: f * m.equipment_mw[t])
    m.tokens_per_s = pyo.Expression(m.PERIODS, rule=lambda m, t: rung_sum(
        m, m.op, t, lambda p, k: optimistic_tokens_per_s(k)))
    m.ttokens = pyo.Expression(m.PERIODS, rule=lambda m, t: m.tokens_per_s[t]
                               * data.periods[t].seconds / TOKENS_UNIT)

    def owned_capex(t_price: int, t_owned: int) -> pyo.Expression:
        period = data.periods[t_price]
        return rung_sum(m, m.own, t_owned,
                        lambda p, k: capex_in(data, period, p, k) / 1e6)

    def spend(m, t):
        equipment = owned_capex(t, t) - (owned_capex(t, t - 1) if t > 0 else 0)
        facility = m.fac_mw[t] - (m.fac_mw[t - 1] if t > 0 else 0)
        return equipment + data.design.build_usd_per_mw * facility / 1e6
    m.spend_musd = pyo.Expression(m.PERIODS, rule=spend, doc="capital spent in the period [M$]")


def add_limits(m: pyo.ConcreteModel, data: PhasedData) -> None:
    """Buildings, campus power, facility, space, budget, GPU cap and demand per period."""
    f = 1 + data.design.non_server_it_fraction
    cfg = {p.key: data.design.configs[p.config] for p in data.plans}

    @m.Constraint(m.PLANS, m.PERIODS)
    def su_owned(m, p, t):
        return pyo.quicksum(m.su_own[b, p, t] for b in m.BUILDINGS) == rung_sum(
            m, m.own, t, lambda _p, k: k.su_count, [m.plan[p]])

    @m.Constraint(m.PLANS, m.PERIODS)
    def su_operating(m, p, t):
        return pyo.quicksum(m.su_op[b, p, t] for b in m.BUILDINGS) == rung_sum(
            m, m.op, t, lambda _p, k: k.su_count, [m.plan[p]])

    @m.Constraint(m.PLACED)
    def su_stays(m, b, p, t):
        return m.su_own[b, p, t - 1] <= m.su_own[b, p, t] if t > 0 else pyo.Constraint.Skip

    @m.Constraint(m.PLACED)
    def su_op_owned(m, b, p, t):
        return m.su_op[b, p, t] <= m.su_own[b, p, t]

    @m.Constraint(m.PERIODS)
    def network_placed(m, t):
        return pyo.quicksum(m.net_mw[b, t] for b in m.BUILDINGS) == rung_sum(
            m, m.op, t, lambda p, k: k.network_power_w / 1e6)

    def node_mw(b: str, p: str, t: int) -> pyo.Expression:
        if cfg[p].pods_in_buildings:  # its pods stand in their sites (add_pods_in_buildings)
            return single.pod_node_mw(data.design, m.plan[p].config, b, chosen(m, m.op, p, t))
        return cfg[p].su_nodes * cfg[p].node_power_w / 1e6 * m.su_op[b, p, t]

    @m.Constraint(m.BUILDINGS, m.PERIODS, doc="energised building IT power [MW]")
    def building_power(m, b, t):
        su_mw = pyo.quicksum(node_mw(b, p, t) for p in m.PLANS)
        return f * (su_mw + m.net_mw[b, t]) <= data.periods[t].building_w[b] / 1e6

    @m.Constraint(m.PERIODS)
    def it_power(m, t):
        return m.it_power_mw[t] <= data.periods[t].it_power_cap_w / 1e6

    @m.Constraint(m.PERIODS)
    def facility_covers(m, t):
        return m.fac_mw[t] >= m.it_power_mw[t]

    @m.Constraint(m.PERIODS)
    def facility_stays(m, t):
        return m.fac_mw[t - 1] <= m.fac_mw[t] if t > 0 else pyo.Constraint.Skip

    @m.Constraint(m.PERIODS)
    def network_racks_placed(m, t):
        return pyo.quicksum(m.net_racks[b, t] for b in m.BUILDINGS) == rung_sum(
            m, m.op, t, lambda p, k: k.network_racks)

    add_blocks(m, data)
    add_pods_in_buildings(m, data)
    add_pod_power(m, data)
    add_pod_hall_slots(m, data)
    limited = [b for b in data.design.buildings if b.max_racks is not None]
    m.space = pyo.Constraint([(b.name, t) for b in limited for t in m.PERIODS], rule=lambda
                             m, b, t: pyo.quicksum(cfg[p].su_racks * m.su_op[b, p, t]
                                                   for p in m.PLANS) + m.net_racks[b, t]
                             <= {x.name: x.max_racks for x in limited}[b])

    @m.Constraint(m.PERIODS, doc="cash flow [M$]")
    def budget(m, t):
        return m.spend_musd[t] <= data.periods[t].budget_usd / 1e6

    m.budget_total = pyo.Constraint(expr=pyo.quicksum(m.spend_musd[t] for t in m.PERIODS)
                                    <= data.budget_total_usd / 1e6)
    if data.design.max_gpus is not None:
        m.gpu_cap = pyo.Constraint(m.PERIODS, rule=lambda m, t: m.gpus[t]
                                   <= data.design.max_gpus)
    demanded = [t for t in m.PERIODS if data.periods[t].demand_tokens > 0]
    m.demand = pyo.Constraint(demanded, rule=lambda m, t: pyo.quicksum(
        m.ttokens[s] for s in m.PERIODS if s <= t)
        >= data.periods[t].demand_tokens / TOKENS_UNIT)


def add_blocks(m: pyo.ConcreteModel, data: PhasedData) -> None:
    """Placement's blocks in the buildings' slots and their power with the network racks
    in each energised building (module doc; the single-period families, per period, with
    bought blocks staying where they stand)."""
    m.blocks_own = pyo.Var(m.PLACED, domain=pyo.NonNegativeIntegers)
    m.blocks_op = pyo.Var(m.PLACED, domain=pyo.NonNegativeIntegers)
    m.net_rack_mw = pyo.Var(m.BUILDINGS, m.PERIODS, domain=pyo.NonNegativeReals)

    def blocks(var: pyo.Var, p: str, t: int) -> pyo.Expression:
        return rung_sum(m, var, t, lambda _p, k: k.extra["blocks"], [m.plan[p]])

    m.blocks_owned = pyo.Constraint(m.PLANS, m.PERIODS, rule=lambda m, p, t: pyo.quicksum(
        m.blocks_own[b, p, t] for b in m.BUILDINGS) == blocks(m.own, p, t))
    m.blocks_operating = pyo.Constraint(m.PLANS, m.PERIODS, rule=lambda m, p, t: pyo.quicksum(
        m.blocks_op[b, p, t] for b in m.BUILDINGS) == blocks(m.op, p, t))

    @m.Constraint(m.PLACED)
    def blocks_stay(m, b, p, t):
        return (m.blocks_own[b, p, t - 1] <= m.blocks_own[b, p, t] if t > 0
                else pyo.Constraint.Skip)

    @m.Constraint(m.PLACED)
    def blocks_op_owned(m, b, p, t):
        return m.blocks_op[b, p, t] <= m.blocks_own[b, p, t]

    @m.Constraint(m.PLACED, doc="block slots per building")
    def block_slots(m, b, p, t):
        return m.blocks_own[b, p, t] <= rung_sum(
            m, m.own, t, lambda _p, k: k.extra["block_slots"].get(b, 0), [m.plan[p]])

    m.network_racks_powered = pyo.Constraint(m.PERIODS, rule=lambda m, t: pyo.quicksum(
        m.net_rack_mw[b, t] for b in m.BUILDINGS) == rung_sum(
        m, m.op, t, lambda _p, k: k.extra["network_rack_power_w"] / 1e6))
    block_mw = {p.key: max(k.extra["block_power_w"] for k in p.ladder) / 1e6
                for p in data.plans}
    halls = {b.name: b.rack_power_w for b in data.design.buildings}

    def blocks_mw(b: str, p: str, t: int) -> pyo.Expression:
        if data.design.configs[m.plan[p].config].pods_in_buildings:
            return single.pod_blocks_mw(data.design, m.plan[p].config, b, chosen(m, m.op, p, t))
        return block_mw[p] * m.blocks_op[b, p, t]

    @m.Constraint(m.BUILDINGS, m.PERIODS, doc="placement racks within building power [MW]")
    def block_power(m, b, t):
        cap = min(racks_w(data, b, t), halls[b]) / 1e6
        return pyo.quicksum(blocks_mw(b, p, t) for p in m.PLANS
                            ) + m.net_rack_mw[b, t] <= cap


def racks_w(data: PhasedData, b: str, t: int) -> float:
    """What building b's racks may draw in period t, as placement caps them: its energised
    IT power less the non-server IT share, P_{b,t} / (1 + f)  [W]."""
    return data.periods[t].building_w[b] / (1 + data.design.non_server_it_fraction)


def add_pods_in_buildings(m: pyo.ConcreteModel, data: PhasedData) -> None:
    """models.design.milp.add_pods_in_buildings per period, on the rungs owned and the
    rungs operating: a plan with one pod per building (or hall) has pod i's blocks in
    building i and no more scalable units there than its pods fill:
    foreach such p, b, t, x in {own, op}: blocks_x[b,p,t] = p_b B/P (x_p,t);
    su_x[b,p,t] <= p_b ⌈n_pod / su_nodes⌉ (x_p,t)."""
    plans = aligned(m)
    if not plans:
        return
    index = [(b, p, t) for b in m.BUILDINGS for p in plans for t in m.PERIODS]
    pairs = ((m.blocks_own, m.su_own, m.own), (m.blocks_op, m.su_op, m.op))
    m.pod_blocks_placed = pyo.Constraint(
        [0, 1], index, rule=lambda m, x, b, p, t: pairs[x][0][b, p, t] == single.pod_blocks(
            data.design, m.plan[p].config, b, chosen(m, pairs[x][2], p, t)))
    m.pod_units_placed = pyo.Constraint(
        [0, 1], index, rule=lambda m, x, b, p, t: pairs[x][1][b, p, t] <= single.pod_units(
            data.design, m.plan[p].config, b, chosen(m, pairs[x][2], p, t)))


def add_pod_power(m: pyo.ConcreteModel, data: PhasedData) -> None:
    """models.design.milp.add_pod_power per period: an operating pod within the power of
    its site, as energised in the period:
    foreach such p, b, t: pod_MW(op_p,t) <= min(site cap_b, P_{b,t})  [MW]."""
    plans = aligned(m)
    if not plans:
        return
    caps = {(b.name, p): single.pod_power_cap_w(data.design, b, m.plan[p].config)
            for b in data.design.buildings for p in plans}

    @m.Constraint(sorted(caps), m.PERIODS, doc="a pod within its site's power [MW]")
    def pod_power(m, b, p, t):
        cap = min(caps[b, p], racks_w(data, b, t)) / 1e6
        return rung_sum(m, m.op, t, lambda _p, k: k.extra["pod_power_w"] / 1e6,
                        [m.plan[p]]) <= cap


def add_pod_hall_slots(m: pyo.ConcreteModel, data: PhasedData) -> None:
    """models.design.milp.add_pod_hall_slots per period on the rungs owned: one pod per
    hall, pod i's blocks within hall i's block slots: B/P - slots_i (own_p,t) <= 0."""
    by_config = {}
    for p in m.PLANS:
        by_config.setdefault(m.plan[p].config, []).append(p)
    index = [(i, p, t) for i, c in single.pod_halls(data.design, sorted(by_config))
             for p in by_config[c] for t in m.PERIODS
             if any(single.pod_hall_over(i)(k) > 0 for k in m.plan[p].ladder)]
    if not index:
        return
    m.pod_hall_slots = pyo.Constraint(index, rule=lambda m, i, p, t: rung_sum(
        m, m.own, t, lambda _p, k: single.pod_hall_over(i)(k), [m.plan[p]]) <= 0)


def discounted_ttokens(m: pyo.ConcreteModel) -> pyo.Expression:
    return pyo.quicksum(m.data.periods[t].discount * m.ttokens[t] for t in m.PERIODS)


def discounted_spend_musd(m: pyo.ConcreteModel) -> pyo.Expression:
    return pyo.quicksum(m.data.periods[t].discount * m.spend_musd[t] for t in m.PERIODS)


def build_model(data: PhasedData) -> pyo.ConcreteModel:
    """The phased MILP; objective by data.design.objective (max effective throughput:
    discounted cumulative tokens; min_capex: discounted spend)."""
    if not data.plans:
        raise ValueError("no candidate designs to choose from")
    m = pyo.ConcreteModel(name="clusterplan-phased")
    add_core(m, data)
    add_limits(m, data)
    if data.design.objective == "max_effective_throughput":
        m.objective = pyo.Objective(expr=discounted_ttokens(m), sense=pyo.maximize)
    else:
        m.objective = pyo.Objective(expr=discounted_spend_musd(m), sense=pyo.minimize)
    return m


def add_tiebreak(m: pyo.ConcreteModel) -> None:
    """Second stage on a solved model: keep what gave stage one its value and improve the
    other criterion. Max tokens: the operating rungs and their placement are fixed (the
    tokens depend on them only) and the spend is minimised (what to own and build to run
    them); min capex: the purchases and the facility are fixed (the spend depends on them
    only) and the tokens are maximised."""
    m.objective.deactivate()
    if m.data.design.objective == "max_effective_throughput":
        fixed = [m.op, m.su_op, m.blocks_op]
        m.objective_tiebreak = pyo.Objective(expr=discounted_spend_musd(m), sense=pyo.minimize)
    else:
        fixed = [m.own, m.su_own, m.blocks_own, m.fac_mw]
        m.objective_tiebreak = pyo.Objective(expr=discounted_ttokens(m), sense=pyo.maximize)
    for var in fixed:
        for v in var.values():
            v.fix(round(v.value) if v.is_integer() else v.value)


def top_rung(m: pyo.ConcreteModel, var: pyo.Var, plan: Plan, t: int) -> int | None:
    """Index of the largest rung of `plan` set in `var` at period t (None: none)."""
    on = [j for j in range(len(plan.ladder)) if pyo.value(var[plan.key, j, t]) > 0.5]
    return max(on) if on else None
