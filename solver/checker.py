"""Independent checker: re-derive the chosen design from the resolved instance and the
analytic models (never from MILP values) and confirm every limit of the instance.

Independent on purpose: it keeps its own arithmetic for what it checks (media cost and
power per link, the 42 U network racks, parts capex and power, building loads, its own
tolerance REL_TOL) instead of calling the formulas that built the design
(models.power_cost, models.design), so a mistake there shows up as a failed check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import poisson

from models.design.candidates import lengths_m, node_power_w
from models.design.chosen import ChosenDesign
from models.design.data import Candidate, DesignData
from models.design.inputs import Inputs
from models.fabric import FabricSpec, design_fabric
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
    """Every limit, recomputed: fabric, media reach, parts cost and power, power, budget,
    buildings (power and racks), GPU range and the requirements. `exact`: the chosen
    candidate with throughput and goodput evaluated exactly."""
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
    lengths = lengths_m(inputs, fabric)
    assigned = {a.link_class: inputs.medium[a.medium] for a in cfg.media}
    media_usd = media_w = 0.0
    for lc in fabric.link_classes:
        medium = assigned.get(lc.name)
        ok = (medium is not None and medium.reach_m >= lengths[lc.name]
              and medium.gbps == parts.nic.port_gbps)
        checks.append(Check(f"reach[{lc.name}]", ok, medium.reach_m if medium else 0,
                            lengths[lc.name], f"{lc.name}: no medium at {parts.nic.port_gbps}G "
                            f"reaching {lengths[lc.name]:g} m assigned"))
        if medium is not None:
            per_link_ends = 2 / medium.links_per_module
            media_usd += lc.links * (per_link_ends * medium.price_usd_per_end
                                     + (medium.fiber_usd_per_link if medium.kind in
                                        ("multimode", "singlemode", "coherent") else 0))
            media_w += lc.links * per_link_ends * medium.power_w_per_end
    checks += _parts_checks(inputs, design, parts, fabric, media_usd, media_w)
    pc = design.power_cost(inputs)
    checks += _facility_checks(inputs, design, parts, pc.equipment_power_w)
    lim = inputs.limits
    checks.append(_le("it_power", pc.it_power_w / 1e6, lim.it_power_mw,
                      f"IT power {pc.it_power_w / 1e6:.3f} MW > {lim.it_power_mw:g} MW"))
    spend = pc.tco_usd if lim.budget_basis == "tco" else pc.capex_usd
    checks.append(_le("budget", spend, lim.budget_usd,
                      f"{lim.budget_basis} ${spend:,.0f} > budget ${lim.budget_usd:,.0f}"))
    checks.append(Check("min_gpus", cand.gpus >= lim.min_gpus, cand.gpus, lim.min_gpus,
                        f"{cand.gpus} GPUs < min_gpus {lim.min_gpus}"))
    if lim.max_gpus is not None:
        checks.append(_le("max_gpus", cand.gpus, lim.max_gpus))
    checks += _building_checks(inputs, design, parts, pc.equipment_power_w)
    need = data.required_effective_tokens_per_s
    if need > 0:
        value = exact.effective_tokens_per_s
        checks.append(Check("required_throughput", value >= need * (1 - REL_TOL), value, need,
                            f"exactly re-evaluated {value:,.0f} effective tokens/s < "
                            f"{need:,.0f} required"))
    if data.min_goodput > 0:
        value = exact.goodput
        checks.append(Check("min_goodput", value >= data.min_goodput * (1 - REL_TOL), value,
                            data.min_goodput, f"exact goodput {value:.4f} < "
                            f"reliability.min_goodput {data.min_goodput:g}"))
    if inputs.reliability.max_blast_radius_gpus is not None:
        checks.append(_le("max_blast_radius", parts.gpu.gpus_per_node,
                          inputs.reliability.max_blast_radius_gpus))
    return CheckResult(tuple(checks))


def _parts_checks(inputs: Inputs, design: ChosenDesign, parts, fabric, media_usd: float,
                  media_w: float) -> list[Check]:
    """Equipment capex and power from first principles against the BOM's totals."""
    g, fac, cand = parts.gpu, inputs.facility, design.candidate
    n = cand.nodes + cand.spare_nodes
    racks = math.ceil(n / _rack_nodes(inputs, parts)) + math.ceil(
        fabric.switches_total * parts.switch.rack_units / 42)
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
    failures of one lead time with the fill probability (scipy's Poisson quantile), at
    the part's price."""
    rates = inputs.rates.get(parts.gpu.generation)
    if rates is None:
        return 0.0
    fac, g = inputs.facility, parts.gpu
    hours = 24 * fac.spare_lead_time_days
    pool = [(n * g.gpus_per_node, rates.gpu.per_h, g.node_price_usd / g.gpus_per_node),
            (n * g.nics_per_node, rates.nic.per_h, parts.nic.price_usd),
            (fabric.switches_total, rates.switch.per_h, parts.switch.price_usd)]
    assigned = {a.link_class: inputs.medium[a.medium] for a in media}
    for lc in fabric.link_classes:
        m = assigned[lc.name]
        if m.kind not in rates.link:
            continue
        per_h = rates.link[m.kind].per_h
        if m.kind in ("multimode", "singlemode", "coherent"):
            modules = math.ceil(lc.links / m.links_per_module)
            modules += (math.ceil(lc.links / 2) if parts.nic_attachment == "twin" else lc.links
                        ) if lc.tier == 1 else modules
            pool.append((modules, per_h / 2, 2 * lc.links * m.price_usd_per_end
                         / m.links_per_module / modules))
        else:
            cables = math.ceil(lc.links / m.links_per_module)
            pool.append((cables, per_h, 2 * lc.links * m.price_usd_per_end
                         / m.links_per_module / cables))
    return sum(poisson.ppf(fac.spare_fill_rate, units * per_h * hours) * usd
               for units, per_h, usd in pool if units * per_h > 0)


def _rack_nodes(inputs: Inputs, parts) -> int:
    """Nodes per compute rack: the catalog's, or fewer when the cooling's rack power
    cannot take them."""
    g = parts.gpu
    if parts.cooling not in inputs.facility.cooling_max_rack_kw:
        return g.max_nodes_per_rack
    node_w = (g.gpus_per_node * g.gpu_power_w + g.node_other_power_w
              + g.nics_per_node * parts.nic.power_w)
    return min(g.max_nodes_per_rack,
               int(inputs.facility.cooling_max_rack_kw[parts.cooling] * 1000 // node_w))


def _facility_checks(inputs: Inputs, design: ChosenDesign, parts, equipment_w: float
                     ) -> list[Check]:
    """The facility re-derived: $/MW x IT in the shortcut mode; else electrical by
    redundancy, cooling by technology, shell over every rack with its support space, the
    PUE, and the site availability target."""
    fac, built = inputs.facility, design.candidate.facility
    it_mw = equipment_w * (1 + fac.non_server_it_fraction) / 1e6
    if fac.facility_cost_mode == "per-mw":
        usd, pue = fac.build_usd_per_mw * it_mw, fac.pue
    else:
        r, t = parts.redundancy, parts.cooling
        racks = sum(x.quantity for x in design.bom() if x.category in ("rack", "rack-support"))
        usd = ((fac.electrical_usd_per_mw[r] + fac.cooling_usd_per_mw[t]) * it_mw
               + fac.shell_usd_per_m2 * fac.white_space_m2_per_rack * racks
               * (1 + fac.support_space_ratio))
        pue = (1 + fac.electrical_loss_fraction[r] + fac.cooling_overhead_fraction[t]
               + fac.other_overhead_fraction)
    out = [Check("facility_capex", built is not None and math.isclose(
        built.capex_usd, usd, rel_tol=1e-9), built.capex_usd if built else 0, usd,
        f"facility capex differs from the re-derived ${usd:,.0f}"),
        Check("pue", built is not None and math.isclose(built.pue, pue, rel_tol=1e-12),
              built.pue if built else 0, pue, f"PUE differs from the re-derived {pue:.4f}")]
    target = inputs.reliability.site_availability_target
    if fac.facility_cost_mode == "parts" and target is not None:
        a = fac.site_availability[parts.redundancy]
        out.append(Check("site_availability", a >= target, a, target,
                         f"{parts.redundancy} gives {a:.5f} < target {target:g}"))
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
    lengths = lengths_m(inputs, fe)
    fe_usd = fe.switches_total * sw.price_usd
    fe_w = fe.switches_total * sw.power_w
    for lc in fe.link_classes:
        def per_link(m):
            fibre = m.fiber_usd_per_link if m.kind in ("multimode", "singlemode",
                                                      "coherent") else 0.0
            return (2 * m.price_usd_per_end / m.links_per_module + fibre,
                    2 * m.power_w_per_end / m.links_per_module, m.id)
        best = min(per_link(m) for m in inputs.medium.values()
                   if m.gbps == port and m.reach_m >= lengths[lc.name])
        fe_usd += lc.links * best[0]
        fe_w += lc.links * best[1]
    support_racks = math.ceil((fe.switches_total * sw.rack_units + control
                               + appliances * fac.storage_appliance_rack_units) / 42)
    mgmt = racks + support_racks
    aggregation = math.ceil(fac.management_uplinks_per_switch * mgmt
                            / fac.management_aggregation_ports)
    by_cat = {
        "frontend": fe_usd,
        "storage": appliances * fac.storage_appliance_usd,
        "control-plane": control * fac.control_plane_usd,
        "management": (mgmt * (fac.management_switch_usd + fac.management_uplinks_per_switch
                               * fac.management_uplink_usd)
                       + aggregation * fac.management_aggregation_usd),
        "rack-support": support_racks * fac.rack_usd,
    }
    watts = (fe_w + appliances * fac.storage_appliance_w + control * fac.control_plane_w
             + mgmt * fac.management_switch_w + aggregation * fac.management_aggregation_w)
    return {"usd": sum(by_cat.values()), "w": watts, "usd_by_category": by_cat,
            "racks": support_racks}


def _building_checks(inputs: Inputs, design: ChosenDesign, parts, equipment_w: float
                     ) -> list[Check]:
    """SUs placed in buildings, building power with the network power split as reported."""
    cand, f_ns = design.candidate, inputs.facility.non_server_it_fraction
    su_total = math.ceil((cand.nodes + cand.spare_nodes) / design.config.su_nodes)
    checks = [Check("scalable_units_placed", sum(design.su_per_building.values()) == su_total,
                    sum(design.su_per_building.values()), su_total)]
    server_w = (cand.nodes + cand.spare_nodes) * node_power_w(parts)
    network_w = equipment_w - server_w
    placed_w = sum(design.network_w_per_building.values())
    checks.append(Check("network_power_placed", math.isclose(placed_w, network_w, rel_tol=1e-5,
                                                             abs_tol=1.0), placed_w, network_w))
    su_w = design.config.su_nodes * node_power_w(parts)
    for b in inputs.site.buildings:
        load = (1 + f_ns) * (design.su_per_building[b.name] * su_w
                             + design.network_w_per_building[b.name])
        checks.append(_le(f"building_power[{b.name}]", load / 1e6, b.it_power_mw,
                          f"building {b.name}: {load / 1e6:.3f} MW > {b.it_power_mw:g} MW"))
    compute_racks = math.ceil(design.config.su_nodes / _rack_nodes(inputs, parts))
    network_racks = math.ceil(fabric_switches(design) * parts.switch.rack_units / 42)
    if inputs.facility.support_networks == "sized":
        n = cand.nodes + cand.spare_nodes
        network_racks += support_networks(
            inputs, parts, cand.nodes, n,
            math.ceil(n / _rack_nodes(inputs, parts)) + network_racks)["racks"]
    checks.append(Check("network_racks_placed", math.isclose(
        sum(design.network_racks_per_building.values()), network_racks, abs_tol=1e-6),
        sum(design.network_racks_per_building.values()), network_racks))
    for b in inputs.site.buildings:
        if b.max_racks is not None:
            racks = (design.su_per_building[b.name] * compute_racks
                     + design.network_racks_per_building[b.name])
            checks.append(_le(f"space[{b.name}]", racks, b.max_racks,
                              f"building {b.name}: {racks:,.1f} racks > max_racks "
                              f"{b.max_racks:,}"))
    return checks


def fabric_switches(design: ChosenDesign) -> int:
    return sum(design.candidate.switches_per_tier)
