"""The design MILP (Pyomo). One function per constraint family; an ordered registry.

Each configuration c has a size ladder s_{c,1} < ... < s_{c,n_c} (its candidates). The
incremental ("delta") formulation of the ladder is used because its LP relaxation is
tight and branching on one binary halves a ladder:
  build[c,j] in {0,1}   configuration c is built to at least its j-th size
  build[c,j] <= build[c,j-1];   sum_c build[c,1] = 1
Any quantity a of the chosen candidate is linear:
  a = sum_{c,j} (a_{c,j} - a_{c,j-1}) build[c,j],  a_{c,0} = 0.
Placement variables:
  su_in[b,c] in Z+     scalable units of c placed in building b
  net_mw[b] >= 0       switch and media power placed in building b [MW]
  net_racks[b] >= 0    network racks placed in building b
  blocks_in[b,c] in Z+ placement blocks (models.space) of c in building b
Sets are sorted; relaxable families get penalised slack in elastic (diagnosis) mode.
Units inside the model are scaled for the solver's tolerances: power in MW, money in
millions of USD (M$); the named expressions keep those units in their names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter

import pyomo.core as pyo

from models import power_cost
from models.design import prune
from models.design.data import BuildingData, Candidate, DesignData


def ladders(data: DesignData) -> dict[str, list[Candidate]]:
    """Each configuration's candidates in ascending size."""
    out: dict[str, list[Candidate]] = {c: [] for c in sorted(data.configs)}
    for cand in data.candidates:
        out[cand.config].append(cand)
    for ladder in out.values():
        ladder.sort(key=lambda k: k.nodes)
    return {c: ladder for c, ladder in out.items() if ladder}


def ladder_sum(m: pyo.ConcreteModel, attr: Callable[[Candidate], float],
               configs: list[str] | None = None) -> pyo.Expression:
    """sum_{c,j} (a_{c,j} - a_{c,j-1}) build[c,j] for a = attr(candidate)."""
    terms = []
    for c in configs or m.ladders:
        previous = 0.0
        for j, cand in enumerate(m.ladders[c]):
            value = attr(cand)
            if value != previous:
                terms.append((value - previous) * m.build[c, j])
            previous = value
    return pyo.quicksum(terms)


Chosen = Callable[[Callable[[Candidate], float]], pyo.Expression]
"""A quantity ``a`` of one configuration's chosen size, linear in the model's binaries:
``ladder_sum(m, a, [c])`` here; the rungs owned or operating in one period in the phased
model (models.phased.milp), which builds its pod families from the functions below."""


def pod_node_mw(data: DesignData, c: str, b: str, chosen: Chosen) -> pyo.Expression:
    """Nodes of configuration c's pods standing in building b at their node power:
    sum_{i in b} n_i node_W  [MW] (a pod smaller than one SU, or not a whole number of
    them, counts the nodes it has)."""
    cfg = data.configs[c]
    pods = data.pods_of(cfg, b)
    return chosen(lambda k: sum(k.pod_nodes()[i] for i in pods) * cfg.node_power_w / 1e6)


def pod_blocks(data: DesignData, c: str, b: str, chosen: Chosen) -> pyo.Expression:
    """Blocks of c's pods standing in b: p_b B/P."""
    pods = len(data.pods_of(data.configs[c], b))
    return chosen(lambda k: pods * (k.extra["blocks"] // k.extra["pods"]))


def pod_units(data: DesignData, c: str, b: str, chosen: Chosen) -> pyo.Expression:
    """Scalable units c's pods in b fill: p_b ⌈n_pod / su_nodes⌉."""
    su, pods = data.configs[c].su_nodes, len(data.pods_of(data.configs[c], b))
    return chosen(lambda k: pods * k.pod_units(su))


def pod_blocks_mw(data: DesignData, c: str, b: str, chosen: Chosen) -> pyo.Expression:
    """c's pods in b as placement powers their blocks (models.space.SpaceLayout.
    pod_blocks_power_w): sum_{i in b} (n_i node_W + (B/P) leaves leaf_W)  [MW] (a pod's
    partly filled last block counts the nodes it has)."""
    pods = data.pods_of(data.configs[c], b)
    return chosen(lambda k: sum(k.extra["pod_blocks_power_w"][i] for i in pods) / 1e6)


def pod_power_cap_w(data: DesignData, building: BuildingData, c: str) -> float:
    """What one pod of c may draw in ``building``: the least of its pods' sites' power
    there (the building's block-power cap when none stands there) [W]."""
    return min((s.rack_power_w for s in data.pod_sites(data.configs[c])
                if s.building == building.name), default=building.block_power_cap_w)


def pod_hall_over(i: int) -> Callable[[Candidate], int]:
    """Blocks of one pod beyond hall i's block slots: B/P - slots_i (fits when <= 0)."""
    return lambda k: k.extra["blocks"] // k.extra["pods"] - k.extra["hall_block_slots"][i]


def pod_halls(data: DesignData, configs) -> list[tuple[int, str]]:
    """(hall index, configuration) of every configuration with one pod per hall."""
    return [(i, c) for c in configs if data.configs[c].pods_in_halls
            for i in range(len(data.pod_sites(data.configs[c])))]


def add_core(m: pyo.ConcreteModel, data: DesignData, elastic: bool) -> None:
    """Sets, variables and the design's expressions.

    it_power_w = (1 + f_ns) * equipment_w;  capex = equipment + build_usd_per_mw * IT MW
    tco = capex + years * it_power * PUE * 8760 h * price
    """
    m.data = data
    m.ladders = ladders(data)
    m.CONFIGS = pyo.Set(initialize=sorted(m.ladders), ordered=True)
    m.STEPS = pyo.Set(initialize=[(c, j) for c in m.CONFIGS for j in range(len(m.ladders[c]))],
                      dimen=2, ordered=True)
    m.BUILDINGS = pyo.Set(initialize=[b.name for b in data.buildings], ordered=True)
    m.BUILDING_CONFIGS = pyo.Set(initialize=[(b, c) for b in m.BUILDINGS for c in m.CONFIGS],
                                 dimen=2, ordered=True)
    m.build = pyo.Var(m.STEPS, domain=pyo.Binary, doc="configuration built to >= this size")
    m.su_in = pyo.Var(m.BUILDING_CONFIGS, domain=pyo.NonNegativeIntegers,
                      doc="scalable units per building")
    m.net_mw = pyo.Var(m.BUILDINGS, domain=pyo.NonNegativeReals,
                       doc="network power per building [MW]")
    m.net_racks = pyo.Var(m.BUILDINGS, domain=pyo.NonNegativeReals,
                          doc="network racks per building")
    m.blocks_in = pyo.Var(m.BUILDING_CONFIGS, domain=pyo.NonNegativeIntegers,
                          doc="placement blocks (models.space) per building")

    m.gpus = pyo.Expression(expr=ladder_sum(m, lambda k: k.gpus), doc="training GPUs")
    m.equipment_mw = pyo.Expression(expr=ladder_sum(m, lambda k: k.equipment_power_w / 1e6))
    # models.power_cost's formulas are linear: in MW they give $M (DesignData carries the
    # facility figures).
    m.it_power_mw = pyo.Expression(expr=power_cost.it_power_w(m.equipment_mw, data),
                                   doc="critical IT power")
    m.cost_equipment_musd = pyo.Expression(
        expr=ladder_sum(m, lambda k: k.equipment_capex_usd / 1e6))
    # The facility (models.facility: from parts, or the $/MW shortcut) and its PUE are
    # exact per candidate (prune.facility_usd, prune.annual_opex_usd).
    m.cost_facility_musd = pyo.Expression(
        expr=ladder_sum(m, lambda k: prune.facility_usd(data, k) / 1e6))
    m.capex_musd = pyo.Expression(expr=m.cost_equipment_musd + m.cost_facility_musd)
    m.annual_opex_musd = pyo.Expression(
        expr=ladder_sum(m, lambda k: prune.annual_opex_usd(data, k) / 1e6))
    m.tco_musd = pyo.Expression(expr=m.capex_musd + data.years * m.annual_opex_musd)
    if data.objective == "min_usd_per_million_tokens":
        # a ratio of the one chosen candidate, so exact and linear in the ladder binaries
        m.usd_per_million_tokens = pyo.Expression(expr=ladder_sum(
            m, lambda k: prune.annual_cost(data, k).usd_per_million_tokens))
    m.tokens_per_s = pyo.Expression(expr=ladder_sum(m, lambda k: k.tokens_per_s))
    m.effective_tokens_per_s = pyo.Expression(
        expr=ladder_sum(m, lambda k: k.effective_tokens_per_s))
    m.elastic = elastic
    m.slack_terms = []

    @m.Constraint(m.CONFIGS, doc="every placement block in a building")
    def blocks_placed(m, c):
        return pyo.quicksum(m.blocks_in[b, c] for b in m.BUILDINGS) == ladder_sum(
            m, lambda k: k.extra["blocks"], [c])


def _slack(m: pyo.ConcreteModel, name: str, index=None, scale: float = 1.0):
    """Elastic slack for family `name` (0 unless elastic and the family is relaxable),
    normalised by `scale` in the elastic objective."""
    if not (m.elastic and name in RELAXABLE):
        return (lambda *_: 0) if index is not None else 0
    if index is None:
        var = pyo.Var(domain=pyo.NonNegativeReals)
        m.add_component(f"slack_{name}", var)
        m.slack_terms.append(var / scale)
        return var
    var = pyo.Var(index, domain=pyo.NonNegativeReals)
    m.add_component(f"slack_{name}", var)
    m.slack_terms.extend(var[i] / scale for i in index)
    return lambda i: var[i]


def add_one_design(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Exactly one configuration is built, at one size of its ladder:
    sum_c build[c,1] = 1;  build[c,j] <= build[c,j-1]."""
    m.one_design = pyo.Constraint(expr=pyo.quicksum(m.build[c, 0] for c in m.CONFIGS) == 1)

    @m.Constraint(m.STEPS, doc="sizes are built in ladder order")
    def ladder_order(m, c, j):
        return m.build[c, j] <= m.build[c, j - 1] if j > 0 else pyo.Constraint.Skip


def add_gpu_range(m: pyo.ConcreteModel, data: DesignData) -> None:
    """min_gpus <= gpus <= max_gpus [GPUs]. A requirement: never relaxed."""
    m.gpu_range = pyo.Constraint(expr=m.gpus >= data.min_gpus)
    if data.max_gpus is not None:
        m.gpu_cap = pyo.Constraint(expr=m.gpus <= data.max_gpus)


def add_it_power(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Critical IT power of the whole design <= limits.it_power_mw [MW]."""
    cap = data.it_power_cap_w / 1e6
    slack = _slack(m, "it_power", scale=cap)
    m.it_power = pyo.Constraint(expr=m.it_power_mw <= cap + slack)


def add_building_power(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Scalable units and network equipment are placed in buildings within their power.

    foreach c: sum_b su_in[b,c] = SU count of c's chosen size
    sum_b net_mw[b] = switch + media power of the design
    foreach b: (1+f_ns) (sum_c node_MW_{b,c} + net_mw[b]) <= P_b   [MW]
    node_MW_{b,c} = SU_power_c su_in[b,c]: a full SU of nodes with their NICs is counted (a
    partial last SU is over-counted); with pods aligned with the site it is the nodes of
    the pods standing in b (DesignData.pods_of), a ladder quantity sum_i n_i node_W (a pod
    smaller than one SU, or not a whole number of them, counts the nodes it has).
    """
    f_ns = data.non_server_it_fraction

    def node_mw(b: str, c: str) -> pyo.Expression:
        cfg = data.configs[c]
        if cfg.pods_in_buildings:  # its pods stand in their sites (add_pods_in_buildings)
            return pod_node_mw(data, c, b, lambda a: ladder_sum(m, a, [c]))
        return cfg.su_nodes * cfg.node_power_w / 1e6 * m.su_in[b, c]

    @m.Constraint(m.CONFIGS, doc="every scalable unit placed in a building")
    def su_placed(m, c):
        return pyo.quicksum(m.su_in[b, c] for b in m.BUILDINGS) == ladder_sum(
            m, lambda k: k.su_count, [c])

    m.network_placed = pyo.Constraint(expr=pyo.quicksum(m.net_mw[b] for b in m.BUILDINGS)
                                      == ladder_sum(m, lambda k: k.network_power_w / 1e6))
    caps = {b.name: b.it_power_w / 1e6 for b in data.buildings}
    slack = _slack(m, "building_power", index=m.BUILDINGS, scale=max(caps.values()))

    @m.Constraint(m.BUILDINGS, doc="building IT power [MW]")
    def building_power(m, b):
        su_mw = pyo.quicksum(node_mw(b, c) for c in m.CONFIGS)
        return (1 + f_ns) * (su_mw + m.net_mw[b]) <= caps[b] + slack(b)


def add_space(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Racks per building <= max_racks:  sum_c racks_SU,c su_in[b,c] + net_racks[b] <= R_b."""
    m.network_racks_placed = pyo.Constraint(
        expr=pyo.quicksum(m.net_racks[b] for b in m.BUILDINGS)
        == ladder_sum(m, lambda k: k.network_racks))
    limited = [b for b in data.buildings if b.max_racks is not None]
    if not limited:
        return
    m.RACK_LIMITED = pyo.Set(initialize=[b.name for b in limited], ordered=True)
    caps = {b.name: b.max_racks for b in limited}
    slack = _slack(m, "space", index=m.RACK_LIMITED, scale=max(caps.values()))

    @m.Constraint(m.RACK_LIMITED, doc="rack positions per building")
    def space(m, b):
        return pyo.quicksum(data.configs[c].su_racks * m.su_in[b, c]
                            for c in m.CONFIGS) + m.net_racks[b] <= caps[b] + slack(b)


def add_block_slots(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Placement's blocks (models.space: its scalable units, pod by pod;
    sum_b blocks_in[b,c] = blocks of c's chosen size) fit the block slots of each
    building's halls, so the design can be placed:

    foreach b, c: blocks_in[b,c] <= block slots of b at c's chosen size
    (the slots are a ladder quantity: the network rows grow with the fabric; a hall's
    slots are also limited by its power, ⌊hall kW / block kW⌋)."""
    scale = max((max(k.extra["block_slots"].values(), default=1) for k in data.candidates),
                default=1)
    slack = _slack(m, "block_slots", index=m.BUILDING_CONFIGS, scale=max(scale, 1))

    @m.Constraint(m.BUILDING_CONFIGS, doc="block slots per building")
    def block_slots(m, b, c):
        return m.blocks_in[b, c] <= ladder_sum(
            m, lambda k: k.extra["block_slots"].get(b, 0), [c]) + slack((b, c))


def add_pod_hall_slots(m: pyo.ConcreteModel, data: DesignData) -> None:
    """One pod per hall: pod i's blocks fit hall i's block slots (both ladder quantities of
    the chosen candidate):  foreach such c, i: B/P - slots_i <= 0."""
    in_halls = pod_halls(data, m.CONFIGS)
    if not in_halls:
        return
    m.POD_HALLS = pyo.Set(initialize=in_halls, dimen=2, ordered=True)
    slack = _slack(m, "pod_hall_slots", index=m.POD_HALLS,
                   scale=max(1, *(max(k.extra["hall_block_slots"]) for k in data.candidates
                                  if data.configs[k.config].pods_in_halls)))

    @m.Constraint(m.POD_HALLS, doc="a pod's blocks within its hall's slots")
    def pod_hall_slots(m, i, c):
        over = pod_hall_over(i)
        if all(over(k) <= 0 for k in m.ladders[c]):
            return pyo.Constraint.Skip  # every size fits
        return ladder_sum(m, over, [c]) <= slack((i, c))


def add_pods_in_buildings(m: pyo.ConcreteModel, data: DesignData) -> None:
    """A configuration with one pod per building places pod ``i``'s blocks in building
    ``i`` (site order; one pod per hall: the pods of its halls, p_b of them), and no more
    scalable units there than the pods' ``n_pod = ⌈(nodes + spares)/pods⌉`` nodes fill:
    foreach such c, b: blocks_in[b,c] = p_b blocks of c / pods;
    su_in[b,c] <= p_b ⌈n_pod / su_nodes⌉."""
    aligned = [c for c in m.CONFIGS if data.configs[c].pods_in_buildings]
    if not aligned:
        return
    m.POD_BUILDINGS = pyo.Set(initialize=[(b, c) for c in aligned for b in m.BUILDINGS],
                              dimen=2, ordered=True)

    @m.Constraint(m.POD_BUILDINGS, doc="a pod's blocks in its building")
    def pod_blocks_placed(m, b, c):
        return m.blocks_in[b, c] == pod_blocks(data, c, b, lambda a: ladder_sum(m, a, [c]))

    @m.Constraint(m.POD_BUILDINGS, doc="a pod's scalable units in its building")
    def pod_units_placed(m, b, c):
        return m.su_in[b, c] <= pod_units(data, c, b, lambda a: ladder_sum(m, a, [c]))


def add_pod_power(m: pyo.ConcreteModel, data: DesignData) -> None:
    """A pod aligned with a building stands there with its inner switches, as placement
    powers them (models.space.SpaceLayout.pod_power_w), within the building's power and
    its halls' power (one pod per hall: within its hall's power):
    foreach such c, b: pod_MW_c <= min over b's pods of their site's MW   [MW]."""
    aligned = [c for c in m.CONFIGS if data.configs[c].pods_in_buildings]
    if not aligned:
        return
    caps = {(b.name, c): pod_power_cap_w(data, b, c) / 1e6
            for b in data.buildings for c in aligned}
    m.POD_POWER = pyo.Set(initialize=sorted(caps), dimen=2, ordered=True)
    slack = _slack(m, "pod_power", index=m.POD_POWER, scale=max(max(caps.values()), 1e-6))

    @m.Constraint(m.POD_POWER, doc="a pod within its building's power [MW]")
    def pod_power(m, b, c):
        return (ladder_sum(m, lambda k: k.extra["pod_power_w"] / 1e6, [c])
                <= caps[b, c] + slack((b, c)))


def add_block_power(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Placement's racks within each building's power, as placement counts them
    (models.space: every block full, its leaves at the conservative switch power; the
    network racks' switches at the same power; a building's racks within its halls'
    power, which leaves room for the non-server IT share):

    sum_b net_rack_mw[b] = network-rack power of the design
    foreach b: sum_c block_MW_c blocks_in[b,c] + net_rack_mw[b] <= min(P_b / (1+f), halls_b) [MW]
    (net_rack_mw is continuous but for the largest group's spines, which stand whole in
    one building: add_spine_hub). With one pod
    per building, building i holds pod i's B/P blocks with the nodes they have
    (pod_blocks_mw, a ladder quantity: a pod of 1.5 units counts 1.5 units of nodes)."""
    # a block is a scalable unit, or a whole pod smaller than one (models.space.block_size):
    # its power is constant along a ladder but for such pods; the largest bounds them
    block_mw = {c: max(k.extra["block_power_w"] for k in m.ladders[c]) / 1e6
                for c in m.CONFIGS}

    def blocks_mw(b: str, c: str) -> pyo.Expression:
        if data.configs[c].pods_in_buildings:  # p_b B/P blocks with their own nodes
            return pod_blocks_mw(data, c, b, lambda a: ladder_sum(m, a, [c]))
        return block_mw[c] * m.blocks_in[b, c]

    caps = {b.name: b.block_power_cap_w / 1e6 for b in data.buildings}
    slack = _slack(m, "block_power", index=m.BUILDINGS, scale=max(caps.values()))
    m.net_rack_mw = pyo.Var(m.BUILDINGS, domain=pyo.NonNegativeReals)
    m.network_racks_powered = pyo.Constraint(
        expr=pyo.quicksum(m.net_rack_mw[b] for b in m.BUILDINGS)
        == ladder_sum(m, lambda k: k.extra["network_rack_power_w"] / 1e6))

    @m.Constraint(m.BUILDINGS, doc="placement racks within building power [MW]")
    def block_power(m, b):
        return pyo.quicksum(blocks_mw(b, c) for c in m.CONFIGS
                            ) + m.net_rack_mw[b] <= caps[b] + slack(b)


def hub_room(data: DesignData, k: Candidate, bw: float) -> bool:
    """Some building keeps room for candidate k's largest spine group G beside as many of
    its blocks as it can take (block slots, or ⌊cap / u_B⌋ at its ladder's largest block
    power ``bw`` = u_B [W], as add_block_power counts them): ``cap_h - u_B n_h >= G``.
    Then any plan without add_spine_hub meets it once G of the network racks' power moves
    into that building, so the family is left out (the default instance: ≥ 415 kW spare a
    building beside 183 kW of spines)."""
    hub_w = prune.spine_hub_w(data, k)
    return any(b.block_power_cap_w - bw * min(k.extra["block_slots"].get(b.name, 0),
                                              math.floor(b.block_power_cap_w / bw)) >= hub_w
               for b in data.buildings)


def add_spine_hub(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Placement stands a tier-2 group's spine racks in one hall, so the block_power
    family's network-rack power is not split freely: one building, the hub, holds the
    largest group's spines G whole (G = prune.spine_hub_w, a ladder quantity; M its
    largest):

    hub[b] in {0,1};  sum_b hub[b] = 1;  net_rack_mw[b] >= G - M (1 - hub[b])   [MW]
    (with one building net_rack_mw holds all of the network racks, G among them; left out
    when :func:`hub_room` holds for every candidate)."""
    big = max(prune.spine_hub_w(data, k) for k in data.candidates) / 1e6
    block_w = {c: max(k.extra["block_power_w"] for k in m.ladders[c]) for c in m.CONFIGS}
    if len(data.buildings) < 2 or big <= 0 or all(
            hub_room(data, k, block_w[k.config]) for k in data.candidates):
        return
    m.spine_hub = pyo.Var(m.BUILDINGS, domain=pyo.Binary, doc="the building of the hub")
    m.one_spine_hub = pyo.Constraint(expr=pyo.quicksum(m.spine_hub[b] for b in m.BUILDINGS)
                                     == 1)
    hub_mw = ladder_sum(m, lambda k: prune.spine_hub_w(data, k) / 1e6)

    @m.Constraint(m.BUILDINGS, doc="the largest group's spines whole in its hub's building")
    def spine_hub_power(m, b):
        return m.net_rack_mw[b] >= hub_mw - big * (1 - m.spine_hub[b])


def add_budget(m: pyo.ConcreteModel, data: DesignData) -> None:
    """capex (or TCO when budget_basis = 'tco') <= limits.budget_usd [M$]."""
    spend = m.tco_musd if data.budget_basis == "tco" else m.capex_musd
    cap = data.budget_usd / 1e6
    slack = _slack(m, "budget", scale=cap)
    m.budget = pyo.Constraint(expr=spend <= cap + slack)


def add_required_throughput(m: pyo.ConcreteModel, data: DesignData) -> None:
    """effective_tokens_per_s >= required (from the objective or the deadline) [tokens/s].
    A requirement: never relaxed."""
    need = data.required_effective_tokens_per_s
    if need <= 0:
        return
    m.required_throughput = pyo.Constraint(expr=m.effective_tokens_per_s >= need)


def add_site_availability(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Availability of the chosen facility's power and cooling chain (its redundancy
    level) >= reliability.site_availability_target. A requirement: a constant per
    configuration, so sum_c A_c build[c,1] >= target."""
    if data.min_site_availability <= 0:
        return
    m.site_availability = pyo.Constraint(
        expr=ladder_sum(m, attrgetter("site_availability")) >= data.min_site_availability)


def add_min_goodput(m: pyo.ConcreteModel, data: DesignData) -> None:
    """goodput of the chosen design >= reliability.min_goodput. A requirement."""
    if data.min_goodput <= 0:
        return
    m.min_goodput = pyo.Constraint(expr=ladder_sum(m, lambda k: k.goodput) >= data.min_goodput)


FAMILIES: tuple[tuple[str, Callable, bool], ...] = (
    ("one_design", add_one_design, False),
    ("gpu_range", add_gpu_range, False),
    ("it_power", add_it_power, True),
    ("building_power", add_building_power, True),
    ("space", add_space, True),
    ("block_slots", add_block_slots, True),
    ("pod_hall_slots", add_pod_hall_slots, True),
    ("block_power", add_block_power, True),
    ("spine_hub", add_spine_hub, False),
    ("pods_in_buildings", add_pods_in_buildings, False),
    ("pod_power", add_pod_power, True),
    ("budget", add_budget, True),
    ("required_throughput", add_required_throughput, False),
    ("min_goodput", add_min_goodput, False),
    ("site_availability", add_site_availability, False),
)
"""Build order; the flag says whether elastic mode may relax the family. Limits (resources)
are relaxable; requirements (GPU range, throughput, goodput) are not, so a diagnosis says how much
more of which resource the requirements need."""

RELAXABLE = frozenset(name for name, _add, relaxable in FAMILIES if relaxable)


def add_objective(m: pyo.ConcreteModel, data: DesignData) -> None:
    """Maximise effective tokens/s, or minimise capex/TCO. Elastic mode minimises slack."""
    if m.elastic:
        m.objective = pyo.Objective(expr=pyo.quicksum(m.slack_terms), sense=pyo.minimize)
        return
    if data.objective == "max_effective_throughput":
        m.objective = pyo.Objective(expr=m.effective_tokens_per_s, sense=pyo.maximize)
    elif data.objective == "min_tco":
        m.objective = pyo.Objective(expr=m.tco_musd, sense=pyo.minimize)
    elif data.objective == "min_usd_per_million_tokens":
        m.objective = pyo.Objective(expr=m.usd_per_million_tokens, sense=pyo.minimize)
    else:
        m.objective = pyo.Objective(expr=m.capex_musd, sense=pyo.minimize)


def build_model(data: DesignData, elastic: bool = False) -> pyo.ConcreteModel:
    """The design MILP for `data`; in elastic mode relaxable families get penalised slack."""
    if not data.candidates:
        raise ValueError("no candidate designs to choose from")
    m = pyo.ConcreteModel(name="clusterplan-design")
    add_core(m, data, elastic)
    for _name, add, _relaxable in FAMILIES:
        add(m, data)
    add_objective(m, data)
    return m


def add_lexicographic_tiebreak(m: pyo.ConcreteModel, data: DesignData, best: float,
                               rel_tol: float = 1e-9) -> None:
    """Second stage: keep the optimum of stage one, then take the cheapest such design.

    max-throughput: effective_tokens_per_s >= best (1 - rel_tol), minimise capex.
    min-cost:       cost <= best (1 + rel_tol), maximise effective_tokens_per_s.
    """
    m.objective.deactivate()
    if data.objective == "max_effective_throughput":
        m.stage_one = pyo.Constraint(expr=m.effective_tokens_per_s >= best * (1 - rel_tol))
        m.objective_tiebreak = pyo.Objective(expr=m.capex_musd, sense=pyo.minimize)
    else:
        cost = (m.tco_musd if data.objective == "min_tco" else m.usd_per_million_tokens
                if data.objective == "min_usd_per_million_tokens" else m.capex_musd)
        m.stage_one = pyo.Constraint(expr=cost <= best * (1 + rel_tol))
        m.objective_tiebreak = pyo.Objective(expr=m.effective_tokens_per_s, sense=pyo.maximize)


def chosen_candidate(m: pyo.ConcreteModel) -> Candidate:
    """The candidate of a solved model: the last built step of the built configuration."""
    config = max(m.CONFIGS, key=lambda c: pyo.value(m.build[c, 0]))
    steps = [j for j in range(len(m.ladders[config])) if pyo.value(m.build[config, j]) > 0.5]
    return m.ladders[config][max(steps)]
