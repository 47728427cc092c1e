"""Independent checker: re-derive the chosen design from the resolved instance and the
analytic models (never from MILP values) and confirm every limit of the instance.

Independent on purpose: it keeps its own arithmetic for what it checks (media cost and
power per link, parts capex and power, building loads, its own tolerance REL_TOL)
instead of calling the formulas that built the design (models.power_cost,
models.design), so a mistake there shows up as a failed check. Racks and block slots
are re-derived with the space model placement uses (models.space), from the fabric
re-built here: the placement stage is their independent test. What the limits are is
not its own: it checks every entry of models.design.limits.LIMITS.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models.design.candidates import design_space, lengths_m, link_lengths, node_power_w, su_racks
from models.design.chosen import ChosenDesign
from models.design.data import Candidate, DesignData
from models.design.inputs import Inputs
from models.design.limits import LIMITS
from models.fabric import Fabric, FabricSpec, design_fabric
from models.perf.flops import arch_of
from models.reliability import checkpoint_size_gb, param_count

REL_TOL = 1e-6


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    value: float
    limit: float
    detail: str = ""


@dataclass(frozen=True)
class CheckResult:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> list[str]:
        return [f"{c.name}: {c.detail or f'{c.value:g} vs limit {c.limit:g}'}"
                for c in self.checks if not c.ok]


def _le(name: str, value: float, limit: float, detail: str = "") -> Check:
    return Check(name, value <= limit * (1 + REL_TOL) + 1e-9, value, limit, detail)


def check_design(inputs: Inputs, design: ChosenDesign, data: DesignData,
                 exact: Candidate) -> CheckResult:
    """The design recomputed (fabric, media reach, parts cost and power, what is placed in
    the buildings), then every limit of models.design.limits.LIMITS by its LIMIT_CHECKS
    entry. `exact`: the chosen candidate with throughput and goodput evaluated exactly."""
    cand, cfg = design.candidate, design.config
    parts = inputs.config(cfg.key)
    total_nodes = cand.nodes + cand.spare_nodes
    fabric = design_fabric(parts.fabric_spec(total_nodes))
    checks = [
        Check("fabric_switches", fabric.switches_per_tier == cand.switches_per_tier,
              fabric.switches_total, sum(cand.switches_per_tier), "switch counts per tier "
              f"{cand.switches_per_tier} differ from the fabric model {fabric.switches_per_tier}"),
        Check("fabric_endpoints", fabric.links_per_tier[0] == total_nodes * parts.gpu.nics_per_node,
              fabric.links_per_tier[0], total_nodes * parts.gpu.nics_per_node,
              "every NIC port attached"),
    ]
    lengths = lengths_m(inputs, parts, fabric)
    assigned = {a.link_class: inputs.medium[a.medium] for a in cfg.media}
    media_usd = media_w = 0.0
    for lc in fabric.link_classes:
        medium = assigned.get(lc.name)
        ok = (medium is not None and medium.reach_m >= lengths[lc.name]
              and medium.gbps == parts.nic.port_gbps
              and parts.switch.family in medium.switch_families)
        checks.append(Check(f"reach[{lc.name}]", ok, medium.reach_m if medium else 0,
                            lengths[lc.name], f"{lc.name}: no medium at {parts.nic.port_gbps}G "
                            f"reaching {lengths[lc.name]:g} m for {parts.switch.family} "
                            "assigned"))
        if medium is not None:
            per_link_ends = 2 / medium.links_per_module
            end_usd = medium.price_usd_per_end / medium.links_per_module
            switch_usd = (end_usd if medium.switch_end_price_usd is None
                          else medium.switch_end_price_usd)
            media_usd += lc.links * (switch_usd + (end_usd if lc.tier == 1 else switch_usd)
                                     + (medium.fiber_usd_per_link if medium.kind in
                                        ("multimode", "singlemode", "coherent") else 0))
            media_w += lc.links * per_link_ends * medium.power_w_per_end
    checks += _parts_checks(inputs, design, parts, fabric, media_usd, media_w)
    pc = design.power_cost(inputs)
    checks += _facility_checks(inputs, design, parts, pc.equipment_power_w)
    checks += _placed_in_buildings(inputs, design, parts, fabric, pc.equipment_power_w)
    about = Checked(inputs, design, data, exact, parts, fabric, pc)
    for limit in LIMITS:
        checks += LIMIT_CHECKS[limit.name](about)
    return CheckResult(tuple(checks))


@dataclass(frozen=True)
class Checked:
    """What the limit checks read: the design, its exact re-evaluation (``exact``), its
    parts and its power and cost (models.power_cost.PowerCost)."""

    inputs: Inputs
    design: ChosenDesign
    data: DesignData
    exact: Candidate
    parts: Any
    fabric: Fabric
    """The fabric re-built here from the design's node count (models.fabric)."""
    pc: Any


def _it_power(c: Checked) -> list[Check]:
    lim = c.inputs.limits
    return [_le("it_power", c.pc.it_power_w / 1e6, lim.it_power_mw,
                f"IT power {c.pc.it_power_w / 1e6:.3f} MW > {lim.it_power_mw:g} MW")]


def _budget(c: Checked) -> list[Check]:
    lim = c.inputs.limits
    spend = c.pc.tco_usd if lim.budget_basis == "tco" else c.pc.capex_usd
    return [_le("budget", spend, lim.budget_usd,
                f"{lim.budget_basis} ${spend:,.0f} > budget ${lim.budget_usd:,.0f}")]


def _min_gpus(c: Checked) -> list[Check]:
    gpus, least = c.design.candidate.gpus, c.inputs.limits.min_gpus
    return [Check("min_gpus", gpus >= least, gpus, least, f"{gpus} GPUs < min_gpus {least}")]


def _max_gpus(c: Checked) -> list[Check]:
    most = c.inputs.limits.max_gpus
    return [] if most is None else [_le("max_gpus", c.design.candidate.gpus, most)]


def _building_power(c: Checked) -> list[Check]:
    """Each building's load: its scalable units (with one pod per building, the nodes of
    its pod) and its share of the network power."""
    f_ns = c.inputs.facility.non_server_it_fraction
    su_w = c.design.config.su_nodes * node_power_w(c.parts)
    aligned = c.design.config.pods_in_buildings
    nodes = _pod_nodes(c.design) if aligned else None
    mine = _building_pods(c.inputs, c.design) if aligned else None
    checks = []
    for b in c.inputs.site.buildings:
        servers = (sum(nodes[i] for i in mine[b.name]) * node_power_w(c.parts) if aligned
                   else c.design.su_per_building[b.name] * su_w)
        load = (1 + f_ns) * (servers + c.design.network_w_per_building[b.name])
        checks.append(_le(f"building_power[{b.name}]", load / 1e6, b.it_power_mw,
                          f"building {b.name}: {load / 1e6:.3f} MW > {b.it_power_mw:g} MW"))
    return checks


def _pod_nodes(design: ChosenDesign) -> list[int]:
    """Nodes of each building's pod, re-derived here: pods of ``s = ⌈n/P⌉`` nodes filled in
    order, pod i holding ``min(s, n - i s)`` of the ``n`` nodes and spares."""
    n = design.candidate.nodes + design.candidate.spare_nodes
    size = -(-n // design.config.pods)
    return [max(0, min(size, n - i * size)) for i in range(design.config.pods)]


def _building_pods(inputs: Inputs, design: ChosenDesign) -> dict[str, list[int]]:
    """The pods each building holds: pod i in building i, or with one pod per hall the
    pods of its halls (halls in site order)."""
    if not design.config.pods_in_halls:
        return {b.name: [i] for i, b in enumerate(inputs.site.buildings)}
    out: dict[str, list[int]] = {b.name: [] for b in inputs.site.buildings}
    for i, (building, _hall) in enumerate(inputs.halls):
        out[building].append(i)
    return out


def _space(c: Checked) -> list[Check]:
    """Each building's racks: its scalable units' compute racks and its network racks."""
    compute_racks = su_racks(c.inputs, c.parts, c.fabric, c.design.config.su_nodes)
    checks = []
    for b in c.inputs.site.buildings:
        if b.max_racks is not None:
            racks = (c.design.su_per_building[b.name] * compute_racks
                     + c.design.network_racks_per_building[b.name])
            checks.append(_le(f"space[{b.name}]", racks, b.max_racks,
                              f"building {b.name}: {racks:,.1f} racks > max_racks "
                              f"{b.max_racks:,}"))
    return checks


def _required_throughput(c: Checked) -> list[Check]:
    need, value = c.data.required_effective_tokens_per_s, c.exact.effective_tokens_per_s
    if need <= 0:
        return []
    return [Check("required_throughput", value >= need * (1 - REL_TOL), value, need,
                  f"exactly re-evaluated {value:,.0f} effective tokens/s < {need:,.0f} "
                  "required")]


def _min_goodput(c: Checked) -> list[Check]:
    least, value = c.data.min_goodput, c.exact.goodput
    if least <= 0:
        return []
    return [Check("min_goodput", value >= least * (1 - REL_TOL), value, least,
                  f"exact goodput {value:.4f} < reliability.min_goodput {least:g}")]


def _max_blast_radius(c: Checked) -> list[Check]:
    most = c.inputs.reliability.max_blast_radius_gpus
    return [] if most is None else [_le("max_blast_radius", c.parts.gpu.gpus_per_node, most)]


def _site_availability(c: Checked) -> list[Check]:
    """The facility's redundancy level gives the site availability target (parts mode)."""
    target, fac = c.inputs.reliability.site_availability_target, c.inputs.facility
    if fac.facility_cost_mode != "parts" or target is None:
        return []
    a = fac.site_availability[c.parts.redundancy]
    return [Check("site_availability", a >= target, a, target,
                  f"{c.parts.redundancy} gives {a:.5f} < target {target:g}")]


LIMIT_CHECKS: dict[str, Callable[[Checked], list[Check]]] = {
    "it_power": _it_power, "budget": _budget, "min_gpus": _min_gpus, "max_gpus": _max_gpus,
    "building_power": _building_power, "space": _space,
    "required_throughput": _required_throughput, "min_goodput": _min_goodput,
    "max_blast_radius": _max_blast_radius, "site_availability": _site_availability,
}
"""The check of every limit of models.design.limits.LIMITS, by its name."""


def _parts_checks(inputs: Inputs, design: ChosenDesign, parts, fabric, media_usd: float,
                  media_w: float) -> list[Check]:
    """Equipment capex and power from first principles against the BOM's totals; the
    support networks and storage by BOM category and the cold-spare pool re-derived."""
    g, fac, cand = parts.gpu, inputs.facility, design.candidate
    n = cand.nodes + cand.spare_nodes
    racks = design_space(inputs, parts, fabric).racks
    storage = n * parts.checkpoint_gbytes_per_s_per_node
    # in-memory recovery: host DRAM for each node's own and a peer's checkpoint shard
    shard_gb = (checkpoint_size_gb(param_count(inputs.workload), inputs.workload.precision)
                / cand.nodes)
    memory_gb = n * 2 * shard_gb if parts.recovery == "in-memory" else 0.0
    if fac.support_networks == "sized":
        support = support_networks(inputs, parts, cand.nodes, n, racks)
        storage_usd, storage_w = support["usd"], support["w"]
    else:
        storage_usd = (n * fac.storage_usd_per_node
                       + storage * fac.checkpoint_storage_usd_per_gbyte_s)
        storage_w = storage * fac.checkpoint_storage_w_per_gbyte_s
    spares_usd = cold_spares_usd(inputs, parts, n, fabric, design.config.media)
    usd = (n * (g.node_price_usd + g.nics_per_node * parts.nic.price_usd)
           + racks * fac.rack_usd + storage_usd + spares_usd
           + fabric.switches_total * parts.switch.price_usd + media_usd
           + memory_gb * inputs.reliability_catalog.recovery.host_memory_usd_per_gb.value)
    watts = (n * node_power_w(parts) + fabric.switches_total * parts.switch.power_w + media_w
             + storage_w)
    bom = design.bom()
    bom_usd, bom_w = sum(x.cost_usd for x in bom), sum(x.power_w for x in bom)
    bom_spares = sum(x.cost_usd for x in bom if x.category == "spares")
    support_checks = [Check("cold_spares", math.isclose(bom_spares, spares_usd, rel_tol=1e-9,
                                                        abs_tol=1e-6), bom_spares, spares_usd,
                            f"BOM cold spares differ from the re-derived ${spares_usd:,.0f}")]
    if fac.support_networks == "sized":
        support_checks += [
            Check(f"support[{cat}]", math.isclose(sum(x.cost_usd for x in bom
                                                      if x.category == cat), want,
                                                  rel_tol=1e-6, abs_tol=1e-6),
                  sum(x.cost_usd for x in bom if x.category == cat), want,
                  f"BOM {cat} lines differ from the re-derived ${want:,.0f}")
            for cat, want in sorted(support["usd_by_category"].items())]
    return support_checks + [
        Check("bom_capex", math.isclose(bom_usd, usd, rel_tol=1e-6), bom_usd, usd,
              f"BOM capex ${bom_usd:,.0f} differs from the parts' ${usd:,.0f}"),
        Check("bom_power", math.isclose(bom_w, watts, rel_tol=1e-6), bom_w, watts,
              f"BOM power {bom_w:,.0f} W differs from the parts' {watts:,.0f} W"),
    ]


def cold_spares_usd(inputs: Inputs, parts, n: int, fabric, media) -> float:
    """The cold-spare pool re-derived: for each part class, the stock covering the
    failures of one lead time with the fill probability (poisson_quantile), at
    the part's price; ``media``: the medium of each link class (design stage)."""
    assigned = {a.link_class: a.medium for a in media}
    return spares_pool_usd(inputs, parts, n, fabric, [
        (lc.tier, assigned[lc.name], lc.links) for lc in fabric.link_classes])


def placed_spares_check(inputs: Inputs, design: ChosenDesign, placed_media: list[dict],
                        bom_spares_usd: float) -> Check:
    """The placed BOM's cold-spare pool against the pool re-derived from the placed
    media (``placement['bom_media']``: links of each link class and medium)."""
    parts = inputs.config(design.candidate.config)
    c = design.candidate
    fabric = design_fabric(parts.fabric_spec(c.nodes + c.spare_nodes))
    tier = {lc.name: lc.tier for lc in fabric.link_classes}
    want = spares_pool_usd(inputs, parts, c.nodes + c.spare_nodes, fabric, [
        (tier[m["link_class"]], m["medium"], m["links"]) for m in placed_media])
    return Check("placed_cold_spares", math.isclose(bom_spares_usd, want, rel_tol=1e-9,
                                                    abs_tol=1e-6), bom_spares_usd, want,
                 f"placed BOM cold spares differ from the re-derived ${want:,.0f}")


def spares_pool_usd(inputs: Inputs, parts, n: int, fabric,
                    links: list[tuple[int, str, int]]) -> float:
    """The pool of n nodes, the fabric's switches and ``links`` (tier, medium id, links of
    that medium) [USD] (cold_spares_usd)."""
    rates = inputs.rates.get(parts.gpu.generation)
    if rates is None:
        return 0.0
    fac, g = inputs.facility, parts.gpu
    hours = 24 * fac.spare_lead_time_days
    pool = [(n * g.gpus_per_node, rates.gpu.per_h, g.node_price_usd / g.gpus_per_node),
            (n * g.nics_per_node, rates.nic.per_h, parts.nic.price_usd),
            (fabric.switches_total, rates.switch.per_h, parts.switch.price_usd)]
    for tier, medium_id, count in links:
        m = inputs.medium[medium_id]
        if m.kind not in rates.link:
            continue
        per_h = rates.link[m.kind].per_h
        end_usd = m.price_usd_per_end / m.links_per_module
        switch_usd = end_usd if m.switch_end_price_usd is None else m.switch_end_price_usd
        ends_usd = count * (switch_usd + (end_usd if tier == 1 else switch_usd))
        if m.kind in ("multimode", "singlemode", "coherent"):
            modules = math.ceil(count / m.links_per_module)
            modules += (math.ceil(count / 2) if parts.nic_attachment == "twin" else count
                        ) if tier == 1 else modules
            pool.append((modules, per_h / 2, ends_usd / modules))
        else:
            cables = math.ceil(count / m.links_per_module)
            pool.append((cables, per_h, ends_usd / cables))
    return sum(poisson_quantile(fac.spare_fill_rate, units * per_h * hours) * usd
               for units, per_h, usd in pool if units * per_h > 0)


def poisson_quantile(fill: float, mu: float) -> int:
    """Smallest s with sum_{k<=s} e^-mu mu^k / k! >= fill, summed from k = 0 with each
    term from lgamma (a route of its own beside models.spares_pool's); past the mean,
    a sum that no longer grows ends the search."""
    total, k, log_mu = 0.0, 0, math.log(mu)
    while True:
        term = math.exp(k * log_mu - mu - math.lgamma(k + 1))
        if total + term >= fill or (k > mu and total + term == total):
            return k
        total, k = total + term, k + 1


def _facility_checks(inputs: Inputs, design: ChosenDesign, parts, equipment_w: float
                     ) -> list[Check]:
    """The facility re-derived part by part: in the shortcut mode $/MW x IT split by the
    catalog's build shares; else electrical by redundancy, cooling by technology, and a
    shell of site and plant space per MW plus white space over every rack; and the PUE."""
    fac, built = inputs.facility, design.candidate.facility
    it_mw = equipment_w * (1 + fac.non_server_it_fraction) / 1e6
    if fac.facility_cost_mode == "per-mw":
        want = {part: fac.build_usd_per_mw * it_mw * share
                for part, share in fac.build_shares.items()}
        pue = fac.pue
    else:
        r, t = parts.redundancy, parts.cooling
        racks = sum(x.quantity for x in design.bom() if x.category in ("rack", "rack-support"))
        want = {"electrical": fac.electrical_usd_per_mw[r] * it_mw,
                "cooling": fac.cooling_usd_per_mw[t] * it_mw,
                "shell": (fac.shell_usd_per_mw * it_mw
                          + fac.white_space_usd_per_m2 * fac.white_space_m2_per_rack * racks)}
        pue = (1 + fac.electrical_loss_fraction[r] + fac.cooling_overhead_fraction[t]
               + fac.other_overhead_fraction)
    out = []
    for part, usd in sorted(want.items()):
        got = getattr(built, f"{part}_usd") if built else 0.0
        out.append(Check(f"facility[{part}]", built is not None and math.isclose(
            got, usd, rel_tol=1e-9), got, usd,
            f"facility {part} differs from the re-derived ${usd:,.0f}"))
    usd = sum(want.values())
    out += [Check("facility_capex", built is not None and math.isclose(
        built.capex_usd, usd, rel_tol=1e-9), built.capex_usd if built else 0, usd,
        f"facility capex differs from the re-derived ${usd:,.0f}"),
        Check("pue", built is not None and math.isclose(built.pue, pue, rel_tol=1e-12),
              built.pue if built else 0, pue, f"PUE differs from the re-derived {pue:.4f}")]
    return out


def support_networks(inputs: Inputs, parts, training_nodes: int, n: int, racks: int
                     ) -> dict:
    """Front-end/storage network, storage appliances, control plane and out-of-band
    management re-derived from the catalog (own arithmetic, see models/support.py for the
    rules): cost and power in total and cost by BOM category."""
    fac, g, wl = inputs.facility, parts.gpu, inputs.workload
    gpus = training_nodes * g.gpus_per_node
    arch = arch_of(wl)
    read = gpus * g.peak_tflops(wl.precision) * 1e12 / arch.model_flops_per_token \
        * fac.dataset_bytes_per_token / 1e9
    write = n * parts.checkpoint_gbytes_per_s_per_node
    tb = (fac.checkpoints_retained * inputs.checkpoint_gb / 1000
          + (wl.train_tokens or 0) * fac.dataset_bytes_per_token / 1e12)
    appliances = max(1, math.ceil(write / fac.storage_appliance_write_gbytes_per_s),
                     math.ceil(read / fac.storage_appliance_read_gbytes_per_s),
                     math.ceil(tb / fac.storage_appliance_usable_tb))
    port = fac.frontend_port_gbps
    ports = max(math.ceil(g.frontend_gbps_per_node / port),
                math.ceil(8 * (parts.checkpoint_gbytes_per_s_per_node + read / n) / port))
    control = max(fac.control_plane_min_servers,
                  math.ceil(n / fac.control_plane_nodes_per_server))
    sw = inputs.switch[fac.frontend_switch]
    fe = design_fabric(FabricSpec(n * ports + appliances * fac.storage_appliance_ports
                                  + control, 1, sw.radix(port), rail_optimized=False))
    lengths = link_lengths(inputs.site.cable_lengths, fe, inputs.single_building)
    fe_usd = fe.switches_total * sw.price_usd
    fe_w = fe.switches_total * sw.power_w
    for lc in fe.link_classes:
        def per_link(m, tier=lc.tier):
            end = m.price_usd_per_end / m.links_per_module
            switch_end = end if m.switch_end_price_usd is None else m.switch_end_price_usd
            fibre = m.fiber_usd_per_link if m.kind in ("multimode", "singlemode",
                                                      "coherent") else 0.0
            return (switch_end + (end if tier == 1 else switch_end) + fibre,
                    2 * m.power_w_per_end / m.links_per_module, m.id)
        best = min(per_link(m) for m in inputs.medium.values()
                   if m.gbps == port and m.reach_m >= lengths[lc.name]
                   and sw.family in m.switch_families)
        fe_usd += lc.links * best[0]
        fe_w += lc.links * best[1]
    # racks for the rack units, then one more while the support power exceeds what the
    # halls' smallest rack power feeds
    rack_w = min(h.rack_power_kw for _, h in inputs.halls_for(parts.cooling)) * 1e3
    support_racks = math.ceil((fe.switches_total * sw.rack_units + control
                               + appliances * fac.storage_appliance_rack_units) / 42)
    while True:
        mgmt = racks + support_racks
        aggregation = math.ceil(fac.management_uplinks_per_switch * mgmt
                                / fac.management_aggregation_ports)
        watts = (fe_w + appliances * fac.storage_appliance_w + control * fac.control_plane_w
                 + mgmt * fac.management_switch_w + aggregation * fac.management_aggregation_w)
        if watts <= support_racks * rack_w:
            break
        support_racks += 1
    by_cat = {
        "frontend": fe_usd,
        "storage": appliances * fac.storage_appliance_usd,
        "control-plane": control * fac.control_plane_usd,
        "management": (mgmt * (fac.management_switch_usd + fac.management_uplinks_per_switch
                               * fac.management_uplink_usd)
                       + aggregation * fac.management_aggregation_usd),
        "rack-support": support_racks * fac.rack_usd,
    }
    return {"usd": sum(by_cat.values()), "w": watts, "usd_by_category": by_cat,
            "racks": support_racks}


def _placed_in_buildings(inputs: Inputs, design: ChosenDesign, parts, fabric: Fabric,
                         equipment_w: float) -> list[Check]:
    """Every scalable unit, the network power, the network racks and the scalable-unit
    blocks are placed in the buildings, the blocks within their halls' slots (the
    buildings' limits are checked by _building_power and _space)."""
    cand = design.candidate
    su_total = math.ceil((cand.nodes + cand.spare_nodes) / design.config.su_nodes)
    if design.config.pods_in_buildings:  # each pod's units, in its own building
        su_total = design.config.pods * math.ceil(max(_pod_nodes(design))
                                                  / design.config.su_nodes)
    checks = [Check("scalable_units_placed", sum(design.su_per_building.values()) == su_total,
                    sum(design.su_per_building.values()), su_total)]
    server_w = (cand.nodes + cand.spare_nodes) * node_power_w(parts)
    network_w = equipment_w - server_w
    placed_w = sum(design.network_w_per_building.values())
    checks.append(Check("network_power_placed", math.isclose(placed_w, network_w, rel_tol=1e-5,
                                                             abs_tol=1.0), placed_w, network_w))
    space = design_space(inputs, parts, fabric)
    network_racks = space.network_racks
    if inputs.facility.support_networks == "sized":  # the support racks sit with them
        n = cand.nodes + cand.spare_nodes
        network_racks += support_networks(inputs, parts, cand.nodes, n, space.racks)["racks"]
    by_power = not space.pods_own_halls(design.config.pods_in_buildings,
                                        design.config.pods_in_halls)
    slots = space.block_slots_by_building(by_power)
    if design.blocks_per_building is not None:  # a design to place
        blocks = design.blocks_per_building
        checks.append(Check("blocks_placed", sum(blocks.values()) == space.block_count,
                            sum(blocks.values()), space.block_count))
        checks += [_le(f"block_slots[{b}]", n, slots.get(b, 0),
                       f"building {b}: {n} scalable-unit blocks, its halls' rows offer "
                       f"{slots.get(b, 0)} block slots")
                   for b, n in sorted(blocks.items())]
        if design.config.pods_in_buildings:  # building i holds its pods' blocks, no more
            per_pod = space.block_count // fabric.pods
            mine = _building_pods(inputs, design)
            checks += [Check(f"pod_blocks[{b.name}]",
                             blocks.get(b.name, 0) == per_pod * len(mine[b.name]),
                             blocks.get(b.name, 0), per_pod * len(mine[b.name]))
                       for b in inputs.site.buildings]
            if design.config.pods_in_halls:  # and hall i's slots take pod i's blocks
                checks += [_le(f"pod_hall_slots[{b}/{h.name}]", per_pod, room,
                               f"hall {b}/{h.name}: a pod's {per_pod} blocks, its rows "
                               f"offer {room} block slots")
                           for (b, h), room in zip(inputs.halls,
                                                   space.block_slots_by_hall(by_power),
                                                   strict=True)]
    checks.append(Check("network_racks_placed", math.isclose(
        sum(design.network_racks_per_building.values()), network_racks, abs_tol=1e-6),
        sum(design.network_racks_per_building.values()), network_racks))
    return checks
