"""Resolve an instance once into typed, frozen inputs: the first stage of the pipeline.

instance (validated, catalog overrides applied) -> ``models.design.inputs.Inputs``: the
workload, limits, site (its halls generated where none are given), choices, objective and
reliability settings; the catalog items (GPU systems, switches, NICs, media, facility);
every allowed hardware configuration with its NIC chosen by the one rule
``solver.fabric_inputs.backend_nic``; and the failure rates per GPU generation with the
instance's what-if multipliers (under either reliability model: they also size the
cold-spare pool). After this stage nothing reads the raw instance or a
catalog file again. Invalid combinations found here (duplicate hall names) raise
InvalidInstance naming the field.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from types import MappingProxyType

from models.design.inputs import ConfigParts, Inputs
from models.facility import SHORTCUT, hall_cooling
from models.reliability import ReliabilityRates, scaled_rates
from models.space import rack_nodes
from solver.errors import InvalidInstance
from solver.fabric_inputs import backend_nic
from solver.reliability_inputs import reliability_rates, workload_checkpoint_gb
from solver.schema import FabricChoice, Instance
from solver.schema.site import Hall, default_halls, unique_hall_names


def prepare(inst: Instance) -> Inputs:
    """Resolve `inst` (the pipeline's first stage)."""
    cat = inst.catalog
    configs, notes = enumerate_configs(inst)
    rates: dict[str, ReliabilityRates] = {}
    m = inst.reliability.failure_rate_multipliers
    for gen in sorted({p.gpu.generation for p in configs}):
        # The cold-spare pool is procurement: sized from the failure rates whichever way
        # goodput is modelled. Under the 'overhead' model a generation without rates in
        # the catalog buys no pool (the reliability model needs them and says so).
        if inst.objective.reliability_model == "model" or gen in cat.reliability.gpu:
            rates[gen] = scaled_rates(
                reliability_rates(cat.reliability, gen, inst.reliability.profile),
                gpu=m.gpu, host=m.node, nic=m.nic, optics=m.optics, copper=m.copper,
                switch=m.switch, software=m.software)
    halls = site_halls(inst)
    return Inputs(
        name=inst.name, sha256=instance_sha256(inst), workload=inst.workload,
        limits=inst.limits, site=inst.site, choices=inst.choices, objective=inst.objective,
        reliability=inst.reliability, years=inst.years, facility=cat.facility,
        gpu=MappingProxyType(dict(cat.gpu)), switch=MappingProxyType(dict(cat.switch)),
        nic=MappingProxyType(dict(cat.nic)), medium=MappingProxyType(dict(cat.medium)),
        configs=tuple(configs), config_notes=tuple(notes), rates=MappingProxyType(rates),
        reliability_catalog=cat.reliability,
        checkpoint_gb=workload_checkpoint_gb(inst.workload), halls=halls,
        cooled_halls=MappingProxyType(cooled_halls(halls, inst)))


def instance_sha256(inst: Instance) -> str:
    return hashlib.sha256(json.dumps(inst.model_dump(mode="json"), sort_keys=True)
                          .encode()).hexdigest()


def config_key(gpu: str, fabric: FabricChoice, rail: bool, attachment: str,
               checkpoint_gbytes_per_s: float, recovery: str,
               facility: tuple[str, str] = (SHORTCUT, SHORTCUT)) -> str:
    tiers = f"t{fabric.tiers}" if fabric.tiers else "tmin"
    pods = f"-p{fabric.pods}x{fabric.oversubscription:g}" if fabric.pods else ""
    if fabric.pods_per is not None:
        pods = f"-per-{fabric.pods_per}-x{fabric.oversubscription:g}"
        if fabric.pod_join == "mesh":
            pods += "-mesh"
    layout = "rail" if rail else "mor"
    built = "" if facility[1] == SHORTCUT else f"/{facility[0]}-{facility[1]}"
    return (f"{gpu}/{fabric.switch}-{tiers}{pods}/{layout}/{attachment}/"
            f"ckpt{checkpoint_gbytes_per_s:g}/{recovery}{built}")


def facility_options(inst: Instance, gpu) -> tuple[list[tuple[str, str]], list[str]]:
    """(redundancy, cooling) options of a GPU system: the shortcut alone in 'per-mw'
    mode; else every allowed level x every allowed technology that cools one node
    (direct liquid only for liquid-cooled systems)."""
    fac = inst.catalog.facility
    if fac.facility_cost_mode == "per-mw":
        return [(SHORTCUT, SHORTCUT)], []
    nic_w = inst.catalog.nic[gpu.default_nic].power_w * gpu.nics_per_node
    node_w = gpu.gpus_per_node * gpu.gpu_power_w + gpu.node_other_power_w + nic_w
    cooling, notes = [], []
    for t in sorted(set(inst.choices.cooling)):
        if hall_cooling(t) == "liquid" and not gpu.liquid_cooled:
            notes.append(f"{gpu.id}: {t} cooling needs cold plates (an air-cooled system "
                         f"sends its heat to the room air); skipped")
        elif rack_nodes(gpu, node_w, fac.cooling_max_rack_kw[t], hall_cooling(t) == "liquid"):
            cooling.append(t)
        else:
            notes.append(f"{gpu.id}: {t} cooling ({hall_cooling(t)}, "
                         f"{fac.cooling_max_rack_kw[t]:g} kW per rack) cannot cool one "
                         f"{node_w / 1e3:.1f} kW node; skipped")
    target = inst.reliability.site_availability_target or 0.0
    energy = (inst.objective.kind in ("min_tco", "min_usd_per_million_tokens")
              or inst.limits.budget_basis == "tco")
    # A level or technology no better on any count the instance weighs is never optimal:
    # costs per MW, PUE share (only when energy enters the objective or budget), and for
    # cooling the rack power it allows (the space model's racks, block widths and row
    # caps never get worse with more power per rack). Only a level that meets
    # the site availability target can beat another (the MILP's site_availability family
    # rules out the rest), and a level below it is never built at all when one meets it
    # (the family is a requirement the diagnosis never relaxes, so no design of such a
    # level can be chosen; when none meets it, every level stays for the diagnosis).
    allowed = sorted(set(inst.choices.redundancy))
    meets = [r for r in allowed if fac.site_availability[r] >= target]
    levels = non_dominated(
        meets or allowed,
        lambda r: (fac.electrical_usd_per_mw[r], fac.electrical_loss_fraction[r] if energy
                   else 0), lambda r: fac.site_availability[r] >= target)
    kept = non_dominated(sorted(cooling), lambda t: (
        fac.cooling_usd_per_mw[t], fac.cooling_overhead_fraction[t] if energy else 0,
        -fac.cooling_max_rack_kw[t]))
    return [(r, t) for r in levels for t in kept], notes


def non_dominated(options: list[str], counts, may_beat=lambda _o: True) -> list[str]:
    """Options no other option (for which `may_beat`) matches or beats on every count
    (smaller is better; of equal ones the first is kept)."""
    def beats(a: str, b: str) -> bool:
        return may_beat(a) and all(x <= y for x, y in zip(counts(a), counts(b), strict=True))

    return [o for i, o in enumerate(options)
            if not any(beats(p, o) and (counts(p) != counts(o) or j < i)
                       for j, p in enumerate(options) if j != i)]


def enumerate_configs(inst: Instance) -> tuple[list[ConfigParts], list[str]]:
    """All allowed configurations, sorted by key, and notes on combinations skipped."""
    cat, parts, skipped = inst.catalog, [], []
    halls = site_halls(inst)
    blast = inst.reliability.max_blast_radius_gpus
    for gpu_id in sorted(set(inst.choices.gpus)):
        gpu = cat.gpu[gpu_id]
        if blast is not None and gpu.gpus_per_node > blast:
            skipped.append(f"{gpu_id}: one failed part stops {gpu.gpus_per_node} GPUs, above "
                           f"reliability.max_blast_radius_gpus {blast}")
            continue
        facilities, notes = facility_options(inst, gpu)
        skipped += notes
        for choice in inst.choices.fabrics:
            fabric = pods_per_building(choice, len(inst.site.buildings), len(halls))
            if fabric is None:
                skipped.append(f"{gpu_id} with {choice.switch}: pods per {choice.pods_per} "
                               f"need a site of two or more {choice.pods_per}s")
                continue
            switch = cat.switch[fabric.switch]
            nic = backend_nic(cat, gpu, switch)
            if switch.family not in nic.families:
                skipped.append(f"{gpu_id} with {switch.id}: NIC {nic.id} does not speak "
                               f"{switch.family}")
                continue
            if nic.port_gbps not in switch.radix_by_gbps:
                skipped.append(f"{gpu_id} with {switch.id}: no {nic.port_gbps}G ports for NIC "
                               f"{nic.id}")
                continue
            for rail, attachment, storage, recovery, facility in itertools.product(
                    sorted(set(inst.choices.rail_optimized), reverse=True),
                    sorted(set(inst.choices.nic_attachment)),
                    sorted(set(inst.choices.checkpoint_storage_gbytes_per_s_per_node)),
                    sorted(set(inst.choices.recovery)), facilities):
                key = config_key(gpu_id, fabric, rail, attachment, storage, recovery,
                                 facility)
                parts.append(ConfigParts(key, gpu, switch, nic, fabric, rail, attachment,
                                         storage, recovery, *facility))
    return sorted(parts, key=lambda p: p.key), skipped


def pods_per_building(fabric: FabricChoice, buildings: int, halls: int = 1
                      ) -> FabricChoice | None:
    """The fabric choice with its pods resolved: ``pods_per = 'building'`` gives one pod per
    building, ``'hall'`` one per hall (None on a site of one, where it is the campus
    fabric)."""
    if fabric.pods_per is None:
        return fabric
    pods = buildings if fabric.pods_per == "building" else halls
    if pods < 2:
        return None
    return fabric.model_copy(update={"pods": pods})


def site_halls(inst: Instance) -> tuple[tuple[str, Hall], ...]:
    """(building, hall) in site order; generated halls for buildings that list none.
    Each hall's power is what its racks may draw: its IT power less the non-server IT
    share (storage, front-end, management: ``facility.non_server_it_fraction``), so that
    racks placed within it keep the building's IT power as the design stage counts it,
    (1 + share) x rack power <= building MW."""
    out, problems = [], []
    share = 1 + inst.catalog.facility.non_server_it_fraction
    for bi, b in enumerate(inst.site.buildings):
        halls = [h.model_copy(update={"power_kw": h.hall_cap_kw / share})
                 for h in b.halls or default_halls(b.it_power_mw, inst.site.rack_power_kw)]
        dupes = unique_hall_names(list(halls))
        if dupes:
            problems.append(f"site.buildings[{bi}].halls: duplicate hall names "
                            f"{', '.join(dupes)}")
        out += [(b.name, h) for h in halls]
    if problems:
        raise InvalidInstance(problems)
    return tuple(out)


def cooled_halls(halls: tuple[tuple[str, Hall], ...], inst: Instance
                 ) -> dict[str, tuple[tuple[str, Hall], ...]]:
    """The halls as each allowed cooling technology equips them (facility_cost_mode =
    'parts'; none in 'per-mw' mode): rack power ``cooling_max_rack_kw``, hall cooling
    ``models.facility.hall_cooling``; a row's busway, where the site gives none, is every
    position at that rack power."""
    fac = inst.catalog.facility
    if fac.facility_cost_mode == "per-mw":
        return {}
    return {t: tuple((b, h.model_copy(update={"rack_power_kw": fac.cooling_max_rack_kw[t],
                                               "cooling": hall_cooling(t)}))
                     for b, h in halls)
            for t in sorted(set(inst.choices.cooling))}
