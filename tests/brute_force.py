"""Brute-force reference for the design MILP: enumerate every candidate design and
re-derive its feasibility and objective from first principles.

Independent of models.design.prune, models.design.milp and the checker: only the list of
candidate (configuration, size) pairs comes from models.design.candidates.build_design_data, and
it is generated on a copy of the instance whose limits are loosened (power and budget x4,
no GPU range, no requirement), so the pipeline's own pre-bounding of the size ladder is
not trusted either. For every candidate this module recomputes, from the catalog:

  nodes       total = nodes + ceil(spare_fraction * nodes)
  fabric      models.fabric.design_fabric (switches per tier, links per class)
  media       per link: 2 * price_per_end / links_per_module + fibre  [USD],
              2 * power_per_end / links_per_module  [W]; reach >= the class's length
  equipment   total * (node + NICs + storage) + racks * rack_usd + switches + media
              + checkpoint GB/s * usd per GB/s + the cold-spare pool [USD]
              total * (GPUs * gpu_w + rest + NICs * nic_w) + switches * switch_w + media
              + checkpoint GB/s * W per GB/s [W]
  facility    IT = (1 + f_ns) * equipment W; capex = equipment + build_usd_per_mw * IT MW;
              TCO = capex + years * IT * PUE * 8760 h * price/kWh
  spares      per part class (GPUs, NIC ports, switches, cables, transceivers) the
              smallest stock s with P(Poisson(units * rate * lead time) <= s) >= fill
              (scipy), at the part's price (no power)
  throughput  GPUs * dense peak * assumed_mfu / FLOPs per token, times (1 - overhead)
  buildings   every split of the scalable units (k/2 nodes, both layouts) over the
              buildings (SU power and racks whole), network power and racks filling the
              leftovers
and keeps the best feasible design: highest effective tokens/s (ties within TOL: lowest
capex), or lowest capex/TCO (ties within TOL: highest effective tokens/s).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from scipy.stats import poisson

from models.design.candidates import build_design_data
from models.design.data import DesignData
from models.design.evaluate import default_evaluators
from models.fabric import FabricSpec, design_fabric
from models.space import space_layout
from solver.prepare import prepare, site_halls
from solver.reliability_inputs import reliability_rates
from solver.schema import Instance

TOL = 1e-9
"""Relative tolerance of a limit (floating-point noise only)."""

PER_NODE_SUPPORT = {"support_networks": "per-node", "non_server_it_fraction": 0.07,
                    "checkpoint_storage_usd_per_gbyte_s": 0.0,
                    "checkpoint_storage_w_per_gbyte_s": 0.0}
"""The catalog facility overlay this enumeration re-derives: the 'per-node' support
shortcut (a storage and front-end share per node at 0 W, 7% of unitemised IT) with the
checkpoint storage at no cost. The support networks sized from the design
(models.support) are checked in tests/test_support.py, not here."""


def per_node_support(doc: dict) -> dict:
    """Instance document ``doc`` (changed in place and returned) on PER_NODE_SUPPORT."""
    doc.setdefault("catalog", {}).setdefault("facility", {}).update(PER_NODE_SUPPORT)
    return doc


@dataclass(frozen=True)
class Design:
    config: str
    gpu: str
    switch: str
    rail_optimized: bool
    nodes: int
    spare_nodes: int
    gpus: int
    switches: int
    equipment_usd: float
    equipment_w: float
    it_w: float
    capex_usd: float
    tco_usd: float
    effective_tokens_per_s: float
    feasible: bool
    violated: tuple[str, ...]


@dataclass(frozen=True)
class Optimum:
    value: float
    """Objective value in the summary's unit (tokens/s or USD)."""
    design: Design
    feasible_count: int
    designs: tuple[Design, ...]


def flops_per_token(inst: Instance) -> float:
    """6 (L (attention + MLP) + V h) + 12 L h s for a dense transformer (Narayanan 2021)."""
    w = inst.workload
    assert w.moe is None, "the brute force handles dense workloads only"
    h, L = w.hidden, w.layers
    kv_share = (w.kv_heads or w.heads) / w.heads
    attention = 2 * h * h + 2 * h * h * kv_share
    mlp = (3 if w.gated_mlp else 2) * h * (w.ffn_hidden or 4 * h)
    return 6.0 * (L * (attention + mlp) + w.vocab * h) + 12.0 * L * h * w.seq_len


def effective_tokens_per_s(inst: Instance, gpu, gpus: int) -> float:
    obj = inst.objective
    assert obj.performance == "assumed_mfu" and obj.reliability_model == "overhead"
    assert inst.workload.precision == "bf16", "the brute force handles bf16 workloads only"
    peak = gpu.bf16_tflops * 1e12
    return gpus * peak * obj.assumed_mfu / flops_per_token(inst) * (1 - obj.overhead_fraction)


def required_tokens_per_s(inst: Instance) -> float:
    need = inst.objective.required_tokens_per_s or 0.0
    if inst.limits.deadline_days:
        need = max(need, inst.workload.train_tokens / (inst.limits.deadline_days * 86400))
    return need


def link_length_m(inst: Instance, link_class: str, rail_optimized: bool,
                  joins_pods: bool = False) -> float:
    """Typical length of a class; the class joining pods, the top class of a tree of 3 or
    more tiers and any class above spine-core span the campus (between_buildings_m) on a
    site of several buildings."""
    cl = inst.site.cable_lengths
    if len(inst.site.buildings) > 1 and joins_pods:
        return cl.between_buildings_m
    if link_class == "node-leaf":
        return cl.node_leaf_rail_optimized_m if rail_optimized else cl.node_leaf_middle_of_rack_m
    if link_class == "leaf-spine":
        return cl.leaf_spine_m
    if link_class == "spine-core" or len(inst.site.buildings) == 1:
        return cl.spine_core_m
    return cl.between_buildings_m


def fits_buildings(inst: Instance, su_count: int, su_w: float, su_racks: int,
                   network_w: float, network_racks: int,
                   pods: list[tuple[int, float]] | None = None) -> bool:
    """Some whole-SU split over the buildings leaves room for the network equipment. Pods
    aligned with the site (``pods``: the units and server power of each building's pods):
    that split alone, each building drawing its pods' server power."""
    f = 1 + inst.catalog.facility.non_server_it_fraction
    blds = inst.site.buildings
    for split in itertools.product(range(su_count + 1), repeat=len(blds)):
        if sum(split) != su_count or (pods is not None
                                      and list(split) != [u for u, _ in pods]):
            continue
        server_w = [w for _, w in pods] if pods else [u * su_w for u in split]
        power_ok = all(f * w <= b.it_power_mw * 1e6 * (1 + TOL)
                       for w, b in zip(server_w, blds, strict=True))
        racks_ok = all(b.max_racks is None or u * su_racks <= b.max_racks
                       for u, b in zip(split, blds, strict=True))
        left_w = sum(b.it_power_mw * 1e6 / f - w for w, b in zip(server_w, blds, strict=True))
        left_racks = (math.inf if any(b.max_racks is None for b in blds) else
                      sum(b.max_racks - u * su_racks for u, b in zip(split, blds, strict=True)))
        if power_ok and racks_ok and left_w >= network_w * (1 - TOL) \
                and left_racks >= network_racks:
            return True
    return False


def cold_spares_usd(inst: Instance, gpu, nic, switch, total: int, fabric,
                    media: dict, twin: bool) -> float:
    """The cold-spare pool of ``total`` nodes and the fabric (``media``: the medium of each
    link class): per class the Poisson stock at the fill rate over the lead time; a
    cable's rate is its link's, a transceiver's half its link's, two a link (a twin-port
    NIC cage serves two node links)."""
    fac = inst.catalog.facility
    if gpu.generation not in inst.catalog.reliability.gpu:
        return 0.0
    rates = reliability_rates(inst.catalog.reliability, gpu.generation,
                              inst.reliability.profile)
    m = inst.reliability.failure_rate_multipliers
    hours = 24 * fac.spare_lead_time_days
    pool = [(total * gpu.gpus_per_node, rates.gpu.per_h * m.gpu,
             gpu.node_price_usd / gpu.gpus_per_node),
            (total * gpu.nics_per_node, rates.nic.per_h * m.nic, nic.price_usd),
            (fabric.switches_total, rates.switch.per_h * m.switch, switch.price_usd)]
    for lc in fabric.link_classes:
        med = media[lc.name]
        if med.kind not in rates.link:
            continue
        optical = med.kind in ("multimode", "singlemode", "coherent")
        per_h = rates.link[med.kind].per_h * (
            m.copper if med.kind in ("dac", "acc", "aec") else m.optics)
        end_usd = med.price_usd_per_end / med.links_per_module
        switch_usd = end_usd if med.switch_end_price_usd is None else med.switch_end_price_usd
        usd = lc.links * (switch_usd + (end_usd if lc.tier == 1 else switch_usd))
        if optical:
            switch_modules = math.ceil(lc.links / med.links_per_module)
            node_modules = (math.ceil(lc.links / 2) if twin else lc.links) \
                if lc.tier == 1 else switch_modules
            units, per_h = switch_modules + node_modules, per_h / 2
        else:
            units = math.ceil(lc.links / med.links_per_module)
        pool.append((units, per_h, usd / units))
    return sum(poisson.ppf(fac.spare_fill_rate, units * rate * hours) * usd
               for units, rate, usd in pool if units * rate > 0)


def evaluate(inst: Instance, config, cand) -> Design:
    """One candidate re-derived from the catalog, with the limits it violates."""
    cat, fac, lim = inst.catalog, inst.catalog.facility, inst.limits
    assert fac.support_networks == "per-node", "the brute force prices the per-node shortcut"
    gpu, switch, nic = cat.gpu[config.gpu], cat.switch[config.switch], cat.nic[config.nic]
    assert nic.id == (switch.required_nic or gpu.default_nic)
    spares = math.ceil(inst.reliability.spare_fraction * cand.nodes)
    assert cand.spare_nodes == spares
    total = cand.nodes + spares
    radix = switch.radix_by_gbps[nic.port_gbps]
    fabric = design_fabric(FabricSpec(total, gpu.nics_per_node, radix, config.tiers,
                                      config.pods, config.oversubscription,
                                      config.rail_optimized, config.pod_join))
    switches = fabric.switches_total
    node_w = gpu.gpus_per_node * gpu.gpu_power_w + gpu.node_other_power_w \
        + gpu.nics_per_node * nic.power_w
    # racks, blocks and block slots: the space model placement uses (tests/test_space.py
    # checks it by hand and against placed layouts)
    space = space_layout(fabric, gpu, switch, node_w,
                         [m for m in cat.medium.values() if m.gbps == nic.port_gbps
                          and switch.family in m.switch_families],
                         site_halls(inst))
    media = {a.link_class: cat.medium[a.medium] for a in config.media}
    media_usd = media_w = 0.0
    violated = []
    for lc in fabric.link_classes:
        m = media[lc.name]
        length = (space.node_link_m if lc.name == "node-leaf"
                  else link_length_m(inst, lc.name, config.rail_optimized,
                                     (fabric.pods > 1 or fabric.tiers >= 3)
                                     and lc == fabric.link_classes[-1]))
        if m.gbps != nic.port_gbps or m.reach_m < length:
            violated.append(f"reach[{lc.name}]")
        end_usd = m.price_usd_per_end / m.links_per_module
        switch_usd = end_usd if m.switch_end_price_usd is None else m.switch_end_price_usd
        media_usd += lc.links * (switch_usd + (end_usd if lc.tier == 1 else switch_usd)
                                 + m.fiber_usd_per_link)
        media_w += lc.links * 2 * m.power_w_per_end / m.links_per_module
    checkpoint = total * config.checkpoint_gbytes_per_s_per_node  # GB/s bought
    network_w = (switches * switch.power_w + media_w
                 + checkpoint * fac.checkpoint_storage_w_per_gbyte_s)
    network_racks = space.network_racks
    racks = space.racks
    equipment_usd = (total * (gpu.node_price_usd + gpu.nics_per_node * nic.price_usd
                              + fac.storage_usd_per_node)
                     + racks * fac.rack_usd + switches * switch.price_usd + media_usd
                     + checkpoint * fac.checkpoint_storage_usd_per_gbyte_s
                     + cold_spares_usd(inst, gpu, nic, switch, total, fabric, media,
                                       config.nic_attachment == "twin"))
    equipment_w = total * node_w + network_w
    it_w = (1 + fac.non_server_it_fraction) * equipment_w
    capex = equipment_usd + fac.build_usd_per_mw * it_w / 1e6
    years = inst.objective.years or fac.years
    tco = capex + years * it_w * fac.pue * 8760 / 1e3 * fac.electricity_usd_per_kwh
    gpus = cand.nodes * gpu.gpus_per_node
    eff = effective_tokens_per_s(inst, gpu, gpus)
    su = radix // 2  # both layouts are built and placed in rail-optimized units (k/2 nodes)
    shapes = [h.shape for h in space.halls if h.shape is not None]
    su_racks = max(-(-su // space.su_nodes) * s.racks(space.su_nodes) for s in shapes)
    if it_w > lim.it_power_mw * 1e6 * (1 + TOL):
        violated.append("it_power")
    if (tco if lim.budget_basis == "tco" else capex) > lim.budget_usd * (1 + TOL):
        violated.append("budget")
    if gpus < lim.min_gpus or (lim.max_gpus is not None and gpus > lim.max_gpus):
        violated.append("gpu_range")
    if eff < required_tokens_per_s(inst) * (1 - TOL):
        violated.append("required_throughput")
    def racks_w(b) -> float:  # placement caps a building's racks at P_b / (1 + f_ns)
        return b.it_power_mw * 1e6 / (1 + fac.non_server_it_fraction)

    room = [min(space.block_slots_by_building().get(b.name, 0),
                math.floor(racks_w(b) / space.block_power_w * (1 + TOL)))
            for b in inst.site.buildings]
    # pods aligned with the site: pod i (its block_count / pods blocks with the nodes it
    # has and every block's leaves, the switches above its leaves, every switch at the
    # conservative power placement counts) in building i, or in hall i with one pod per
    # hall; a building's pods within its slots and power, each pod within its site's power
    # (and a hall's pod within the hall's slots)
    halls = site_halls(inst)
    hall_w = {b.name: 0.0 for b in inst.site.buildings}
    for b, h in halls:
        hall_w[b] += h.hall_cap_kw * 1e3
    su_count, pods, pods_fit = math.ceil(total / su), None, True
    if config.pods_in_buildings:
        # a pod alone in its hall is powered whole there (pod_w below): its hall's rows
        # are its slots, not ⌊hall kW / block kW⌋ of full blocks
        by_power = not space.pods_own_halls(True, config.pods_in_halls)
        per_pod = space.block_count // fabric.pods
        size = math.ceil(total / fabric.pods)
        units = math.ceil(size / su)
        su_count = fabric.pods * units
        if config.pods_in_halls:
            sites = [(b, h.hall_cap_kw * 1e3, slots) for (b, h), slots
                     in zip(halls, space.block_slots_by_hall(by_power), strict=True)]
        else:
            sites = [(b.name, min(racks_w(b), hall_w[b.name]), per_pod)
                     for b in inst.site.buildings]
        leaves_w = per_pod * space.leaves_per_block * space.leaf_power_w
        blocks_w = [max(0, min(size, total - i * size)) * node_w + leaves_w
                    for i in range(fabric.pods)]
        pod_w = blocks_w[0] + sum(
            fabric.switches_per_tier[1:fabric.pod_tiers]) // fabric.pods * space.leaf_power_w
        pods_fit = all(pod_w <= cap * (1 + TOL) and per_pod <= slots
                       for _, cap, slots in sites)
        pods = []
        for b in inst.site.buildings:
            mine = [i for i, (where, _, _) in enumerate(sites) if where == b.name]
            pods_fit &= per_pod * len(mine) <= space.block_slots_by_building(
                by_power).get(b.name, 0)
            pods_fit &= sum(blocks_w[i] for i in mine) <= min(
                racks_w(b), hall_w[b.name]) * (1 + TOL)
            pods.append((units * len(mine), sum(max(0, min(size, total - i * size))
                                                for i in mine) * node_w))
    # the largest tier-2 group's spines stand whole in one building h (placement hubs
    # them in one hall), which then takes ⌊(cap_h - G) / block W⌋ blocks by power
    hub_w = max(space.blocks()[2]) * space.leaf_power_w
    caps = [min(racks_w(b), hall_w[b.name]) for b in inst.site.buildings]
    hub_room = max((sum(room) - r + min(r, math.floor((cap - hub_w) / space.block_power_w
                                                       * (1 + TOL)))
                    for r, cap in zip(room, caps, strict=True)
                    if hub_w <= cap * (1 + TOL)), default=-1)
    if not fits_buildings(inst, su_count, su * node_w, su_racks, network_w,
                          network_racks, pods) \
            or (space.block_count > hub_room and not config.pods_in_buildings) \
            or not pods_fit:
        violated.append("buildings")
    return Design(config.key, gpu.id, switch.id, config.rail_optimized, cand.nodes, spares,
                  gpus, switches, equipment_usd, equipment_w, it_w, capex, tco, eff,
                  not violated, tuple(violated))


def loosened(inst: Instance) -> Instance:
    """The instance with limits that bound nothing the real limits allow."""
    lim = inst.limits.model_copy(update={
        "budget_usd": inst.limits.budget_usd * 4, "it_power_mw": inst.limits.it_power_mw * 4,
        "min_gpus": 0, "max_gpus": None, "deadline_days": None})
    obj = inst.objective.model_copy(update={"required_tokens_per_s": None})
    return inst.model_copy(update={"limits": lim, "objective": obj})


def design_data(inst: Instance) -> DesignData:
    """The pipeline's candidate designs of `inst` (unpruned)."""
    inputs = prepare(inst)
    return build_design_data(inputs, default_evaluators(inputs))[0]


def all_designs(inst: Instance) -> list[Design]:
    data = design_data(loosened(inst))
    return [evaluate(inst, data.configs[k.config], k) for k in data.candidates]


def objective_value(inst: Instance, d: Design) -> float:
    kind = inst.objective.kind
    if kind == "max_effective_throughput":
        return d.effective_tokens_per_s
    return d.tco_usd if kind == "min_tco" else d.capex_usd


def brute_force(inst: Instance) -> Optimum | None:
    """The optimum over every candidate design, or None when none is feasible."""
    designs = all_designs(inst)
    ok = [d for d in designs if d.feasible]
    if not ok:
        return None
    if inst.objective.kind == "max_effective_throughput":
        top = max(d.effective_tokens_per_s for d in ok)
        best = min((d for d in ok if d.effective_tokens_per_s >= top * (1 - TOL)),
                   key=lambda d: (d.capex_usd, d.config, d.nodes))
    else:
        low = min(objective_value(inst, d) for d in ok)
        best = max((d for d in ok if objective_value(inst, d) <= low * (1 + TOL)),
                   key=lambda d: (d.effective_tokens_per_s, d.config, -d.nodes))
    return Optimum(objective_value(inst, best), best, len(ok), tuple(designs))
