"""The solve summary (the `--json` document, solver.results.SolveSummary), binding limits
and pandas tables (pandas is imported by `tables` only: a sweep's workers, which solve
without them, never import it, solver.sweep_worker)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from models.design import prune
from models.design.candidates import cold_spares, media_lines, next_size
from models.design.chosen import ChosenDesign
from models.design.data import Candidate, DesignData
from models.design.evaluate import Evaluators, ModelGoodput
from models.design.inputs import Inputs
from models.design.milp import pod_node_mw
from models.design.prune import fits_buildings
from models.fabric import MediaLine, design_fabric
from models.facility import RACK_CATEGORIES, FacilityCost, facility_cost
from models.power_cost import BomLine, PowerCost, it_power_w, power_cost
from models.reliability import placed_media
from models.support import management_lines
from models.tco import AnnualCost, annual_cost
from solver.backends.highs import MilpOutcome
from solver.checker import CheckResult, placed_spares_check
from solver.report_html import facility_labels
from solver.results import (
    BindingRow,
    BomRow,
    Cost,
    DesignEstimate,
    DesignSection,
    FacilityBuild,
    MediaRow,
    MilpThroughput,
    Objective,
    Power,
    RunnerUp,
    SolverInfo,
    SolveSummary,
    SparesPool,
    Throughput,
    Verification,
)

if TYPE_CHECKING:
    import pandas as pd

OBJECTIVE_UNITS = {"max_effective_throughput": ("effective_tokens_per_s", "tokens/s"),
                   "min_capex": ("capex_usd", "USD"), "min_tco": ("tco_usd", "USD"),
                   "min_usd_per_million_tokens": ("usd_per_million_tokens", "USD/Mtoken")}


def binding_limits(inputs: Inputs, evaluators: Evaluators, design: ChosenDesign,
                   data: DesignData, it_power_cap_w: float | None = None,
                   unplaced: tuple[tuple[Candidate, str], ...] = ()) -> list[BindingRow]:
    """Each limit with its slack; `binding` when the next size of the chosen configuration
    (one more scalable unit) would break it: the limit that stops the design growing.
    The next size is built as its ladder would (models.design.candidates.next_size,
    whether or not the limits cut the ladder before it); where the fabric cannot grow to
    it or gains a tier there, it is scaled from this one.
    When every larger size of the configuration is worse, that is reported too.
    ``it_power_cap_w``: the design stage's critical IT held below ``limits.it_power_mw``
    by the placed surplus of a larger design (solver.api.placed_and_re_solved); the campus
    limit is then judged against that hold, which it sets (:func:`held_power_row`).
    ``unplaced``: candidates placement refused, with its diagnosis (the same loop); the
    smallest larger than this design is what placement stopped (:func:`unplaced_row`)."""
    cand = design.candidate
    pc = design.power_cost(inputs)
    lim = inputs.limits
    spend = pc.tco_usd if lim.budget_basis == "tco" else pc.capex_usd
    bigger = next_size(inputs, evaluators, data, cand)
    if bigger is not None:  # the next size, as its ladder builds it
        next_it_w, next_gpus = prune.it_power_w(data, bigger), bigger.gpus
        next_spend = (prune.tco_usd(data, bigger) if lim.budget_basis == "tco"
                      else prune.capex_usd(data, bigger))
    else:  # the fabric cannot grow to it: scaled from this size
        next_nodes = cand.nodes + design.config.su_nodes
        scale = (next_nodes + cand.spare_nodes) / (cand.nodes + cand.spare_nodes)
        next_it_w, next_spend = pc.it_power_w * scale, spend * scale
        next_gpus = next_nodes * cand.gpus // cand.nodes
    rows = [
        _row("limits.it_power_mw", pc.it_power_w / 1e6, lim.it_power_mw, "MW",
             next_it_w > lim.it_power_mw * 1e6)
        if it_power_cap_w is None or it_power_cap_w >= lim.it_power_mw * 1e6
        else held_power_row(pc.it_power_w, lim.it_power_mw, it_power_cap_w, next_it_w,
                            next_gpus),
        _row("limits.budget_usd", spend, lim.budget_usd, "USD", next_spend > lim.budget_usd),
    ]
    if lim.max_gpus is not None:
        rows.append(_row("limits.max_gpus", cand.gpus, lim.max_gpus, "GPUs",
                         next_gpus > lim.max_gpus))
    larger = [c for c in data.candidates if c.config == cand.config and c.nodes > cand.nodes]
    if (data.objective == "max_effective_throughput" and larger
            and max(c.effective_tokens_per_s_upper for c in larger)
            <= cand.effective_tokens_per_s):
        top = max(c.gpus for c in larger)
        rows.append(BindingRow(
            "effective throughput peaks at this size", cand.gpus, top, "GPUs",
            top - cand.gpus, True, note="no larger size of this configuration reaches more "
            "effective tokens/s: goodput falls faster than throughput grows"))
    rows += _requirement_rows(design, data)
    rows += _building_rows(inputs, design, data, bigger)
    larger_unplaced = [(k, why) for k, why in unplaced if k.gpus > cand.gpus]
    if larger_unplaced:
        rows.append(unplaced_row(cand, larger_unplaced))
    return rows


def unplaced_row(cand: Candidate, unplaced: list[tuple[Candidate, str]]) -> BindingRow:
    """Placement stopped growth: the smallest design it refused that is larger than
    ``cand`` (and how many of that size), with its diagnosis; binding."""
    top, why = min(unplaced, key=lambda u: (u[0].gpus, u[0].key))
    same = sum(1 for k, _ in unplaced if k.gpus == top.gpus)
    return BindingRow(
        "placement: a larger design could not be placed", cand.gpus, top.gpus, "GPUs",
        top.gpus - cand.gpus, True,
        note=f"placement refused {same} design{'s' * (same > 1)} of {top.gpus:,} GPUs "
             f"({top.key}{', ...' if same > 1 else ''}): {why}; the design stage was "
             "re-solved without them")


def held_power_row(it_w: float, limit_mw: float, cap_w: float, next_it_w: float,
                   next_gpus: int) -> BindingRow:
    """The campus limit's row when the design stage was held to ``cap_w`` = P - s below
    it, s being the surplus a larger design's placed media drew over its estimate: the
    limit (through the hold) stops growth when the next size's estimate is over ``cap_w``,
    i.e. it would be over P once placed with the same surplus [W]."""
    surplus_w = limit_mw * 1e6 - cap_w
    stops = next_it_w > cap_w
    return dataclasses.replace(
        _row("limits.it_power_mw", it_w / 1e6, limit_mw, "MW", stops),
        note=f"the design stage was held to {cap_w / 1e6:.6f} MW, this limit less the "
             f"placed surplus of {surplus_w / 1e3:,.1f} kW (a larger design's placed media "
             "drew that much more than its estimate); the next size, "
             f"{next_gpus:,} GPUs at {next_it_w / 1e6:.6f} MW estimated, "
             + ("is over the hold (once placed, over this limit): this limit stops growth"
                if stops else "is within the hold"))


def _requirement_rows(design: ChosenDesign, data: DesignData) -> list[BindingRow]:
    """When cost is minimised the requirements bind: the next smaller size misses them."""
    if data.objective == "max_effective_throughput":
        return []
    cand = design.candidate
    smaller = [c for c in data.candidates if c.config == cand.config and c.nodes < cand.nodes]
    below = max(smaller, key=lambda c: c.nodes) if smaller else None
    rows = []
    if data.required_effective_tokens_per_s > 0:
        rows.append(_row("required effective tokens/s (objective or deadline)",
                         cand.effective_tokens_per_s, data.required_effective_tokens_per_s,
                         "tokens/s", below is None or below.effective_tokens_per_s
                         < data.required_effective_tokens_per_s))
    if data.min_gpus > 0:
        rows.append(_row("limits.min_gpus", cand.gpus, data.min_gpus, "GPUs",
                         below is None or below.gpus < data.min_gpus))
    return rows


def _building_rows(inputs: Inputs, design: ChosenDesign, data: DesignData,
                   bigger: Candidate | None) -> list[BindingRow]:
    """Each building's power (and racks where limited); binding when the next size
    cannot be placed because of that resource (models.design.prune.fits_buildings)."""
    power_stops = space_stops = False
    if bigger is not None and not fits_buildings(data, bigger):
        power_stops = not fits_buildings(data, bigger, space=False)
        space_stops = not fits_buildings(data, bigger, power=False)
    cfg, rows = design.config, []
    for b in inputs.site.buildings:
        used = design.su_per_building[b.name]
        power_mw = _building_mw(inputs, design, data, b.name)
        full = b.it_power_mw - power_mw < _su_mw(inputs, design)
        rows.append(dataclasses.replace(
            _row(f"site.buildings[{b.name}].it_power_mw", power_mw, b.it_power_mw, "MW",
                 power_stops and full), scalable_units=used))
        if b.max_racks is not None:
            racks = used * cfg.su_racks + design.network_racks_per_building[b.name]
            rows.append(_row(f"site.buildings[{b.name}].max_racks", racks, b.max_racks,
                             "racks", space_stops and b.max_racks - racks < cfg.su_racks))
    return rows


def _su_mw(inputs: Inputs, design: ChosenDesign) -> float:
    """Critical IT power of one full scalable unit of nodes [MW]."""
    f = 1 + inputs.facility.non_server_it_fraction
    return f * design.config.su_nodes * design.config.node_power_w / 1e6


def _building_mw(inputs: Inputs, design: ChosenDesign, data: DesignData,
                 building: str) -> float:
    """Critical IT power placed in a building, as the design MILP counts it
    (models.design.milp.add_building_power): its scalable units, or with pods aligned
    with the site the nodes of its pods (pod_node_mw), and its network [MW]."""
    f = 1 + inputs.facility.non_server_it_fraction
    nodes_mw = (f * pod_node_mw(data, design.config.key, building,
                                lambda quantity: quantity(design.candidate))
                if design.config.pods_in_buildings
                else design.su_per_building[building] * _su_mw(inputs, design))
    return nodes_mw + f * design.network_w_per_building[building] / 1e6


RUNNER_UPS = 6
"""Runner-up designs listed in the summary (the best of each other configuration)."""


def runner_ups(data: DesignData, design: ChosenDesign, summary: SolveSummary
               ) -> tuple[RunnerUp, ...]:
    """The best buildable design of every other technology choice (GPU, switch, tiers,
    pods, oversubscription, rail-optimized, NIC attachment, recovery), best first, with
    how much it loses on the objective against the chosen design and how much more capex
    it takes (a tie on the objective goes to the cheaper design), like with like: against
    the chosen design's design-stage figures (``summary`` before placement; placement is
    not re-compared, its media are not the runner-ups'); figures of a candidate not
    evaluated exactly (``exact`` false) are the ladder's interpolation."""
    def family(c: Candidate) -> tuple:
        f = data.configs[c.config]
        return (f.gpu, f.switch, c.tiers, f.pods, f.oversubscription, f.rail_optimized,
                f.nic_attachment, f.recovery)

    chosen = family(design.candidate)
    index = prune.buildable_index(data)
    value = dict(zip(index.tolist(), prune.objective_values(data, index), strict=True))
    best: dict[tuple, int] = {}  # family: index of its best candidate
    for i in sorted(value, key=lambda i: data.candidates[i].key):
        f = family(data.candidates[i])
        if f != chosen and (f not in best or value[i] > value[best[f]]):
            best[f] = i
    rows = []
    for i in sorted(best.values(), key=lambda i: (-value[i], data.candidates[i].key)
                    )[:RUNNER_UPS]:
        c = data.candidates[i]
        f = data.configs[c.config]
        rows.append(RunnerUp(
            f.gpu, f.switch, c.tiers, f.pods, c.extra["wired_oversubscription"],
            f.oversubscription, f.rail_optimized, f.nic_attachment, f.recovery, c.gpus,
            c.effective_tokens_per_s,
            prune.capex_usd(data, c), prune.it_power_w(data, c) / 1e6, c.exact,
            0.0, 0.0, 0.0, abs(float(value[i]))))
    return compared_runner_ups(tuple(rows), summary.objective, summary.cost)


def compared_runner_ups(rows: tuple[RunnerUp, ...], objective: Objective, cost: Cost
                        ) -> tuple[RunnerUp, ...]:
    """``rows`` compared with the chosen design's design-stage objective and capex:
    capex_more = capex - capex_chosen; loss = v_chosen - v (maximised) or v - v_chosen
    (minimised), loss_fraction = loss / |v_chosen|."""
    top, sign = objective.value, 1.0 if objective.unit == "tokens/s" else -1.0
    return tuple(dataclasses.replace(
        r, capex_more_usd=r.capex_usd - cost.capex_usd,
        loss=sign * (top - r.objective_value),
        loss_fraction=sign * (top - r.objective_value) / abs(top) if top else 0.0)
        for r in rows)


def placed_limits(inputs: Inputs, design: ChosenDesign, binding: tuple[BindingRow, ...],
                  pc: PowerCost, placement: dict[str, Any]) -> tuple[BindingRow, ...]:
    """The limit rows re-stated on the placed design: critical IT and spend from the
    placed BOM, each building's critical IT from its placed racks (x (1 + non-server IT
    share)), its compute nodes (``nodes``, in place of the design stage's scalable units)
    and its racks (``max_racks``) counted. ``binding`` (the next size up breaks
    the limit) stays the design stage's verdict, re-judged for a building: binding when
    its placed headroom is less than one scalable unit."""
    f = 1 + inputs.facility.non_server_it_fraction
    spend = pc.tco_usd if inputs.limits.budget_basis == "tco" else pc.capex_usd
    by_building: dict[str, float] = {}
    racks_in: dict[str, int] = {}
    nodes_in: dict[str, int] = {}
    for h in placement.get("halls", []):
        b = h["hall"].split("/")[0]
        by_building[b] = by_building.get(b, 0.0) + f * h["power_kw"] / 1e3
        racks_in[b] = racks_in.get(b, 0) + h["racks"]
        nodes_in[b] = nodes_in.get(b, 0) + h["nodes"]
    su_mw = _su_mw(inputs, design)
    out = []
    for row in binding:
        name, value = row.name, None
        if name == "limits.it_power_mw":
            value = pc.it_power_w / 1e6
        elif name == "limits.budget_usd":
            value = spend
        elif name.startswith("site.buildings[") and name.endswith("].it_power_mw"):
            building = name[len("site.buildings["):-len("].it_power_mw")]
            value, nodes = by_building.get(building, 0.0), nodes_in.get(building, 0)
            row = dataclasses.replace(
                row, binding=row.limit - value < su_mw, scalable_units=None, nodes=nodes,
                note=(f"{nodes:,} compute nodes placed; placed rack power x (1 + non-server "
                      f"IT share {f - 1:g}), as the design stage counts it; the placement "
                      "caps rack power per hall"))
        elif name.startswith("site.buildings[") and name.endswith("].max_racks"):
            value = racks_in.get(name[len("site.buildings["):-len("].max_racks")], 0)
            row = dataclasses.replace(row, binding=row.limit - value < design.config.su_racks,
                                      note="racks placement stood up in the building")
        out.append(row if value is None else dataclasses.replace(
            row, value=value, slack=row.limit - value, basis="placed"))
    return tuple(out)


def _row(name: str, value: float, limit: float, unit: str, binding: bool) -> BindingRow:
    return BindingRow(name, value, limit, unit, limit - value, bool(binding))


def summary_document(inputs: Inputs, design: ChosenDesign, exact: Candidate,
                     outcome: MilpOutcome, check: CheckResult, binding: list[BindingRow],
                     runtime_s: float, sha256: str, notes: list[str],
                     mapping: dict[str, Any] | None) -> SolveSummary:
    """The `clusterplan solve --json` contract. Throughput figures are the exact
    re-evaluation of the chosen design; `throughput.milp` holds the MILP's values."""
    cand, cfg = design.candidate, design.config
    pc = design.power_cost(inputs)
    name, unit = OBJECTIVE_UNITS[inputs.objective.kind]
    effective = exact.effective_tokens_per_s
    year = year_cost(pc, inputs, design, effective)
    values = {"effective_tokens_per_s": effective, "capex_usd": pc.capex_usd,
              "tco_usd": pc.tco_usd, "usd_per_million_tokens": year.usd_per_million_tokens}
    train_tokens = inputs.workload.train_tokens
    days = (train_tokens / effective / 86400.0 if train_tokens and effective > 0 else None)
    return SolveSummary(
        status=outcome.status,
        instance=inputs.name,
        instance_sha256=sha256,
        objective=Objective(name, values[name], unit, _model_units(outcome.objective, unit)),
        design=DesignSection(
            gpu=cfg.gpu, gpus=cand.gpus, nodes=cand.nodes, spare_nodes=cand.spare_nodes,
            switch=cfg.switch, nic=cfg.nic, tiers=cand.tiers, pods=cand.extra["pods"],
            oversubscription=cand.extra["wired_oversubscription"],
            oversubscription_requested=cfg.oversubscription, rail_optimized=cfg.rail_optimized,
            nic_attachment=cfg.nic_attachment, recovery=cfg.recovery,
            switches_per_tier=tuple(cand.switches_per_tier),
            links_per_tier=tuple(cand.links_per_tier),
            media=tuple(MediaRow(**m) for m in design.media()),
            scalable_units_per_building=design.su_per_building,
            job_mapping=mapping, pods_in_buildings=cfg.pods_in_buildings,
            pod_join=cfg.pod_join, pods_in_halls=cfg.pods_in_halls,
            checkpoint_storage_gbytes_per_s_per_node=cfg.checkpoint_gbytes_per_s_per_node,
            facility=FacilityBuild.of(cand.facility) if cand.facility else None,
            support=cand.extra.get("support"),
            spares_pool=spares_pool(inputs, design.bom())),
        power=Power.of(pc),
        cost=Cost.of(pc, year),
        throughput=Throughput(
            tokens_per_s=exact.tokens_per_s, effective_tokens_per_s=effective, mfu=exact.mfu,
            goodput=exact.goodput, time_to_train_days=days,
            performance=exact.extra["perf"], reliability=exact.extra["reliability"],
            milp=MilpThroughput(cand.tokens_per_s, cand.goodput, cand.effective_tokens_per_s,
                                cand.mfu)),
        bom=bom_rows(design.bom()),
        binding=tuple(binding),
        verified=check.ok,
        verification=Verification(len(check.checks), tuple(check.failures)),
        notes=tuple(notes),
        solver=SolverInfo("milp-highs", outcome.solver_version, round(runtime_s, 3),
                          round(outcome.runtime_s, 3), outcome.gap,
                          _model_units(outcome.best_bound, unit), outcome.termination),
    )


def _model_units(value: float | None, unit: str) -> float | None:
    """The MILP states money in millions of USD; report it in the objective's unit."""
    return value * 1e6 if value is not None and unit == "USD" else value


def year_cost(pc: PowerCost, inputs: Inputs, design: ChosenDesign,
              effective_tokens_per_s: float) -> AnnualCost:
    """The full year's cost of the design (models.tco): GPUs bought (spares included)."""
    cand = design.candidate
    return annual_cost(inputs.facility, inputs.years, pc.equipment_capex_usd,
                       pc.facility_capex_usd, pc.annual_opex_usd,
                       (cand.nodes + cand.spare_nodes) * (cand.gpus // cand.nodes),
                       pc.it_power_w, effective_tokens_per_s)


def spares_pool(inputs: Inputs, lines: list[BomLine]) -> SparesPool:
    """The cold-spare pool of a BOM: its 'spares' lines."""
    fac = inputs.facility
    pool = [x for x in lines if x.category == "spares"]
    return SparesPool(fac.spare_lead_time_days, fac.spare_fill_rate,
                      {x.item: x.quantity for x in pool}, sum(x.cost_usd for x in pool))


def bom_rows(lines: list[BomLine]) -> tuple[BomRow, ...]:
    return tuple(BomRow.of(line) for line in lines)


def placed_throughput(inputs: Inputs, summary: SolveSummary, design: ChosenDesign,
                      placement: dict[str, Any]) -> Throughput:
    """The throughput block re-evaluated on the placed media: goodput (the reliability
    model counts each link class's links by the medium placement gave them), effective
    tokens/s and time to train. Unchanged under reliability_model = 'overhead'."""
    t = summary.throughput
    if inputs.objective.reliability_model != "model" or "bom_media" not in placement:
        return t
    cand = design.candidate
    parts = inputs.config(design.config.key)
    fabric = design_fabric(parts.fabric_spec(cand.nodes + cand.spare_nodes))
    rel = ModelGoodput(inputs).goodput(inputs, parts, fabric, cand.nodes, cand.spare_nodes,
                                       placed_media(placement["bom_media"]))
    effective = t.tokens_per_s * rel.goodput
    days = (t.time_to_train_days * t.effective_tokens_per_s / effective
            if t.time_to_train_days is not None and effective > 0 else None)
    return dataclasses.replace(t, goodput=rel.goodput, effective_tokens_per_s=effective,
                               time_to_train_days=days, reliability=rel.details)


def with_placement(inputs: Inputs, summary: SolveSummary, design: ChosenDesign,
                   placed_media: list[MediaLine], racks: int,
                   placement: dict[str, Any]) -> SolveSummary:
    """The summary after placement: the placed media (``placed_media``, by routed length),
    the cold-spare pool sized for them, the compute and network rack count (``racks``;
    the support racks stay their own BOM line) and a management switch in every placed
    rack replace the design's estimates
    in the BOM, media, power and cost are rolled up again, and every limit is re-checked
    and re-stated on them (placed_limits; the pool by the checker's own arithmetic); the
    design's estimate is kept beside in ``design_estimate``."""
    lines = [line for line in design.bom() if line.category not in ("optics", "cable",
                                                                      "spares")]
    lines = [BomLine(x.item, x.category, racks, x.unit_cost_usd, x.unit_power_w)
             if x.category == "rack" else x for x in lines]
    lines = with_placed_management(inputs, lines,
                                   racks + placement.get("racks", {}).get("support", 0))
    lines += [line for m in placed_media
              for line in media_lines(m, inputs.medium[m.medium_id].fiber_usd_per_link)]
    c = design.candidate
    lines += cold_spares(inputs, inputs.config(c.config), c.nodes + c.spare_nodes,
                         sum(c.switches_per_tier), list(placed_media))
    pool = spares_pool(inputs, lines)
    spares_check = CheckResult((placed_spares_check(
        inputs, design, placement.get("bom_media", []), pool.cost_usd),))
    built = placed_facility(inputs, design, lines)
    pc = power_cost(lines, inputs.facility, inputs.years, built)
    lim = inputs.limits
    spend = pc.tco_usd if lim.budget_basis == "tco" else pc.capex_usd
    binding = placed_limits(inputs, design, summary.binding, pc, placement)
    within = {"it_power_mw": prune.within(pc.it_power_w / 1e6, lim.it_power_mw),
              "budget_usd": prune.within(spend, lim.budget_usd)} | {
        row.name: prune.within(row.value, row.limit) for row in binding
        if row.basis == "placed" and row.name.startswith("site.buildings[")}
    placed_media_rows = tuple(MediaRow(m["link_class"], m["medium"], m["kind"],
                                       m["longest_m"], m["links"])
                              for m in placement.get("bom_media", []))
    throughput = placed_throughput(inputs, summary, design, placement)
    cost = Cost.of(pc, year_cost(pc, inputs, design, throughput.effective_tokens_per_s))
    objective = dataclasses.replace(summary.objective, value={
        "effective_tokens_per_s": throughput.effective_tokens_per_s,
        "capex_usd": pc.capex_usd, "tco_usd": pc.tco_usd,
        "usd_per_million_tokens": cost.usd_per_million_tokens}[summary.objective.name])
    return dataclasses.replace(
        summary, design=dataclasses.replace(
            summary.design, media=placed_media_rows or summary.design.media,
            facility=FacilityBuild.of(built) if built else summary.design.facility,
            spares_pool=pool),
        objective=objective,
        bom=bom_rows(lines), power=Power.of(pc), cost=cost,
        binding=binding,
        throughput=throughput,
        design_estimate=DesignEstimate(summary.bom, summary.power, summary.cost,
                                       summary.throughput, summary.binding,
                                       summary.design.media),
        verification=dataclasses.replace(
            summary.verification, checks=summary.verification.checks + 1,
            failures=summary.verification.failures + tuple(spares_check.failures)),
        placement=placement | {"within_limits": within},
        verified=summary.verified and all(within.values()) and spares_check.ok)


def with_placed_management(inputs: Inputs, lines: list[BomLine], racks: int
                           ) -> list[BomLine]:
    """``lines`` with the management network (sized mode) re-stated on the ``racks``
    racks placed, a switch in every one, in place of the design stage's."""
    if not any(x.category == "management" for x in lines):
        return lines
    placed = [x for x in management_lines(inputs.facility, racks) if x.quantity > 0]
    at = next(i for i, x in enumerate(lines) if x.category == "management")
    rest = [x for x in lines if x.category != "management"]
    return rest[:at] + placed + rest[at:]


def placed_facility(inputs: Inputs, design: ChosenDesign, lines: list[BomLine]
                    ) -> FacilityCost | None:
    """The design's facility re-built for the placed BOM: its critical IT and its racks
    (placed and support racks), same redundancy and cooling."""
    built = design.candidate.facility
    if built is None:
        return None
    racks = sum(x.quantity for x in lines if x.category in RACK_CATEGORIES)
    return facility_cost(inputs.facility, built.redundancy, built.cooling,
                         it_power_w(sum(x.power_w for x in lines), inputs.facility), racks)


def facility_terms(f: FacilityBuild | None, facility_capex_usd: float) -> list[dict[str, Any]]:
    """The facility's cost terms: electrical, cooling and shell (report_html's labels)
    [USD]."""
    if f is None:
        return [{"term": "facility build", "cost_usd": facility_capex_usd}]
    return [{"term": term, "cost_usd": usd} for term, usd in zip(
        facility_labels(f.redundancy, f.cooling), (f.electrical_usd, f.cooling_usd, f.shell_usd),
        strict=True)]


def tables(summary: SolveSummary) -> dict[str, pd.DataFrame]:
    """bom, power, cost and binding tables with unit-suffixed columns, all from
    ``summary`` (after placement: the placed, re-checked figures)."""
    import pandas as pd

    bom = pd.DataFrame([row.to_dict() for row in summary.bom])
    p, c = summary.power, summary.cost
    power = pd.DataFrame([
        {"component": cat, "power_kw": grp["power_w"].sum() / 1e3}
        for cat, grp in bom.groupby("category", sort=True)
    ] + [{"component": "non-server IT", "power_kw": p.it_mw * 1e3 - bom["power_w"].sum() / 1e3},
         {"component": "critical IT total", "power_kw": p.it_mw * 1e3},
         {"component": "facility (PUE)", "power_kw": p.facility_mw * 1e3}])
    cost = pd.DataFrame([
        {"term": cat, "cost_usd": grp["cost_usd"].sum()}
        for cat, grp in bom.groupby("category", sort=True)
    ] + facility_terms(summary.design.facility, c.facility_capex_usd) + [
        {"term": "capex total", "cost_usd": c.capex_usd},
        {"term": f"opex x {c.tco_years} years", "cost_usd": c.tco_years * c.annual_opex_usd},
        {"term": "tco total", "cost_usd": c.tco_usd}])
    return {"bom": bom, "power": power, "cost": cost,
            "binding": pd.DataFrame([row.to_dict() for row in summary.binding])}
