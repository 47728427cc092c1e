"""From the resolved inputs (models.design.inputs) to the design MILP's data: configurations
and candidate sizes.

For every combination of the instance's choices (GPU system x fabric option x layout x
NIC attachment) that the hardware allows, and every combination of non-dominated media
that reach each link class, the candidate sizes are the multiples of the scalable unit
up to the largest size power, budget and max_gpus allow. Each candidate is evaluated
exactly: fabric (models.fabric), spares and goodput, throughput (models.design.evaluate).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import math
from collections.abc import Callable, Sequence

from models.design.data import (
    BuildingData,
    Candidate,
    Config,
    DesignData,
    LimitColumns,
    MediaAssignment,
)
from models.design.evaluate import Evaluators, GoodputEstimate, grid_bracket, grid_points
from models.design.inputs import ConfigParts, Inputs
from models.design.limits import LIMIT_FIELDS
from models.design.prune import columns, to_refine
from models.fabric import (
    Fabric,
    MediaLine,
    design_fabric,
    media_for,
    media_line,
    media_reaching,
    non_dominated_media,
    scalable_unit_nodes,
)
from models.facility import facility_cost
from models.perf.flops import arch_of
from models.perf.types import GpuSystemLike
from models.power_cost import BomLine, it_power_w
from models.space import (
    SpaceLayout,
    node_power_w,
    nodes_per_rack,
    rack_power_by_building,
    space_layout,
)
from models.spares_pool import spare_pool_lines
from models.support import SUPPORT_CATEGORIES, SupportDesign, support_core, with_management


def link_lengths(lengths, fabric: Fabric,
                 single_building: bool = False) -> dict[str, float]:
    """Routed length [m] of every link class of ``fabric`` from the site's typical
    lengths (``CableLengths``): node-leaf by layout (rail-optimized: leaves at the end of
    the row; middle-of-rack: copper in the rack group), leaf-spine, spine-core; a 4th
    tier, the tier joining pods, and the top class of a tree of 3 or more tiers span the
    buildings of a campus (``between_buildings_m``; ``spine_core_m`` on a single-building
    site). Pods aligned with buildings keep every class but the joining one inside a
    building. Priced whole at campus reach: placement finds about (B-1)/B of a campus
    class's links crossing between B buildings and re-cables the rest."""
    by_class = {
        "node-leaf": (lengths.node_leaf_rail_optimized_m if fabric.spec.rail_optimized
                      else lengths.node_leaf_middle_of_rack_m),
        "leaf-spine": lengths.leaf_spine_m,
        "spine-core": lengths.spine_core_m,
    }
    top = lengths.spine_core_m if single_building else lengths.between_buildings_m
    out = {c.name: by_class.get(c.name, top) for c in fabric.link_classes}
    if fabric.pods > 1 or fabric.tiers >= 3:  # the pods' joining class; a campus tree's top
        out[fabric.link_classes[-1].name] = top
    return out


def lengths_m(inputs: Inputs, p: ConfigParts, fabric: Fabric) -> dict[str, float]:
    """Routed length of each link class of `fabric` on the instance's site [m]: node-leaf
    from the block geometry placement builds (models.space: its longest node-leaf run),
    the others from the site's typical lengths."""
    out = link_lengths(inputs.site.cable_lengths, fabric, inputs.single_building)
    node_link = design_space(inputs, p, fabric).node_link_m
    if node_link and "node-leaf" in out:
        out["node-leaf"] = node_link
    return out


def max_nodes(inputs: Inputs, p: ConfigParts, relax_limits: bool = False) -> int:
    """Largest training node count the power and budget limits and max_gpus could allow
    (network ignored: an upper bound; the MILP holds capex, or TCO, within the budget
    whatever the objective).

    relax_limits (diagnosis): power and budget are ignored up to 4x their size or the
    min_gpus requirement, so the elastic model can say how much more they need (the budget
    only when it is the objective's own limit, max_effective_throughput: a cost objective's
    ladder reaches 4x the power, where a required throughput may need it)."""
    fac = inputs.facility
    per_node_w = node_power_w(p) * (1 + fac.non_server_it_fraction)
    cap = inputs.limits.it_power_mw * 1e6 / per_node_w
    if not relax_limits or inputs.objective.kind == "max_effective_throughput":
        # whatever the objective, capex (<= TCO) <= budget: the node, its NICs and the
        # facility without its shell (>= 0; from parts, or at build_usd_per_mw as a phased
        # build-out charges it: the lower) bound the cost per node from below
        facility_usd = min(facility_cost(fac, p.redundancy, p.cooling, per_node_w, 0).capex_usd,
                           fac.build_usd_per_mw * per_node_w / 1e6)
        per_node_usd = p.gpu.node_price_usd + p.gpu.nics_per_node * p.nic.price_usd + facility_usd
        cap = min(cap, inputs.limits.budget_usd / per_node_usd)
    if relax_limits:
        cap = max(4 * cap, math.ceil(inputs.limits.min_gpus / p.gpu.gpus_per_node))
    if inputs.limits.max_gpus is not None:
        cap = min(cap, inputs.limits.max_gpus / p.gpu.gpus_per_node)
    return max(int(cap), 0)


def storage_power_w(inputs: Inputs, p: ConfigParts, nodes: int) -> float:
    """Power of the checkpoint storage tier bought for `nodes` nodes in the 'per-node'
    shortcut mode [W] (sized mode: in `support_of`'s lines)."""
    if inputs.facility.support_networks == "sized":
        return 0.0
    return (nodes * p.checkpoint_gbytes_per_s_per_node
            * inputs.facility.checkpoint_storage_w_per_gbyte_s)


def design_space(inputs: Inputs, p: ConfigParts, fabric: Fabric,
                 media: list | None = None) -> SpaceLayout:
    """Blocks, racks and block slots per hall of ``fabric`` on the instance's halls as the
    configuration's cooling equips them (``Inputs.halls_for``): the space model placement
    uses (models.space), with the media of the link speed (``media``: media_for's, if
    already known)."""
    if media is None:
        media = media_for(inputs.medium.values(), p.nic.port_gbps, p.switch.family)
    return space_layout(fabric, p.gpu, p.switch, node_power_w(p), media,
                        inputs.halls_for(p.cooling))


def space_figures(space: SpaceLayout, by_power: bool) -> dict:
    """What a candidate's ``extra`` reads of its space layout (the same for every
    candidate of the layout): blocks, block slots by building and by hall (``by_power``:
    capped by the hall's power, SpaceLayout.block_slots_by_hall), block, pod and network
    powers [W] and the largest tier-2 group's spine power [W]."""
    return {"blocks": space.block_count,
            "block_slots": space.block_slots_by_building(by_power),
            "hall_block_slots": space.block_slots_by_hall(by_power),
            "block_power_w": space.block_power_w, "pod_power_w": space.pod_power_w,
            "pod_blocks_power_w": space.pod_blocks_power_w,
            "network_power_w": space.network_power_w,
            "group_spine_power_w": space.group_spine_power_w}


def su_racks(inputs: Inputs, p: ConfigParts, fabric: Fabric, su: int) -> int:
    """Racks of ``su`` nodes in full blocks of ``fabric``'s layout (models.space)."""
    space = design_space(inputs, p, fabric)
    shapes = [h.shape for h in space.halls if h.shape is not None]
    if not shapes:
        return 0
    return max(-(-su // space.su_nodes) * s.racks(space.su_nodes) for s in shapes)


def support_of(inputs: Inputs, p: ConfigParts, nodes: int, spares: int, racks: int,
               cache: dict | None = None) -> SupportDesign | None:
    """Front-end/storage network, storage, management and control plane of a candidate
    whose compute and back-end network take ``racks`` racks, in support racks of at most
    :func:`support_rack_power_w` (models.support); None in the 'per-node' shortcut mode.
    ``cache``: a dict kept across the candidates of one instance, of the part that does
    not depend on the racks (by GPU system, checkpoint GB/s per node, nodes, nodes with
    spares) and of the whole design (the same and the racks, the support rack power
    [W])."""
    fac = inputs.facility
    if fac.support_networks != "sized":
        return None
    g = p.gpu
    total = nodes + spares
    cache = {} if cache is None else cache
    key = (g.id, p.checkpoint_gbytes_per_s_per_node, nodes, total)
    whole = ("with management", *key, racks, support_rack_power_w(inputs, p))
    if whole in cache:
        return cache[whole]
    if key not in cache:
        switch = inputs.switch[fac.frontend_switch]
        cache[key] = support_core(
            fac, switch,
            media_for(inputs.medium.values(), fac.frontend_port_gbps, switch.family),
            lambda fabric: link_lengths(inputs.site.cable_lengths, fabric,
                                        inputs.single_building),
            total, nodes * g.gpus_per_node,
            g.frontend_gbps_per_node, p.checkpoint_gbytes_per_s_per_node,
            g.peak_tflops(inputs.workload.precision),
            arch_of(inputs.workload).model_flops_per_token, inputs.checkpoint_gb,
            inputs.workload.train_tokens)
    cache[whole] = with_management(fac, cache[key], racks, whole[-1])
    return cache[whole]


def support_rack_power_w(inputs: Inputs, p: ConfigParts) -> float:
    """What a support rack may draw: the smallest rack power of the halls the
    configuration's cooling equips (placement may stand it in any of them) [W]."""
    return min(h.rack_power_kw for _, h in inputs.halls_for(p.cooling)) * 1e3


def recovery_memory_gb(inputs: Inputs, p: ConfigParts, nodes: int) -> float:
    """Host memory in-memory recovery keeps per node [GB]: its own and a peer's checkpoint
    shard, 2 S / nodes (0 for storage recovery)."""
    if p.recovery != "in-memory":
        return 0.0
    return 2.0 * inputs.checkpoint_gb / nodes


def base_lines(inputs: Inputs, p: ConfigParts, nodes: int, spares: int,
               switches: int, racks: int, support: SupportDesign | None) -> list[BomLine]:
    """BOM lines of a candidate besides back-end media: nodes, NICs, switches, ``racks``
    racks (models.space), the host memory of in-memory recovery, and the support networks
    and storage (``support``, sized mode) or the per-node storage/front-end shortcut
    (None)."""
    g, fac = p.gpu, inputs.facility
    total = nodes + spares
    lines = [
        BomLine(f"{g.id} node", "compute", total, g.node_price_usd,
                g.gpus_per_node * g.gpu_power_w + g.node_other_power_w),
        BomLine(f"{p.nic.id} NIC", "nic", total * g.nics_per_node, p.nic.price_usd,
                p.nic.power_w),
        BomLine(f"{p.switch.id} switch", "switch", switches, p.switch.price_usd,
                p.switch.power_w),
        BomLine("rack and power distribution", "rack",
                racks, fac.rack_usd),
        BomLine("in-memory checkpoint host memory [GB]", "recovery",
                total * recovery_memory_gb(inputs, p, nodes),
                inputs.reliability_catalog.recovery.host_memory_usd_per_gb.value),
    ]
    if support is not None:
        return lines + list(support.lines)
    return lines + [
        BomLine("storage and front-end share", "storage", total, fac.storage_usd_per_node),
        BomLine("checkpoint storage write bandwidth [GB/s]", "storage",
                total * p.checkpoint_gbytes_per_s_per_node,
                fac.checkpoint_storage_usd_per_gbyte_s, fac.checkpoint_storage_w_per_gbyte_s),
    ]


def cold_spares(inputs: Inputs, p: ConfigParts, total_nodes: int, switches: int,
                links: list[MediaLine], cache: dict | None = None) -> list[BomLine]:
    """The cold-spare parts pool (models.spares_pool) from the catalog's failure rates
    (under either reliability model; none for a GPU generation the catalog has no rates
    for under reliability_model = 'overhead'). ``cache``: a dict
    kept across the candidates of one instance."""
    if p.gpu.generation not in inputs.rates:
        return []
    key = (p.gpu.id, p.nic.id, p.switch.id, total_nodes, switches, tuple(links))
    if cache is not None and key in cache:
        return cache[key]
    fac = inputs.facility
    lines = spare_pool_lines(
        inputs.rates[p.gpu.generation], p.gpu, p.nic, p.switch, total_nodes, switches,
        [(x, inputs.medium[x.medium_id].fiber_usd_per_link) for x in links],
        fac.spare_lead_time_days, fac.spare_fill_rate)
    if cache is not None:
        cache[key] = lines
    return lines


def bom_lines(inputs: Inputs, p: ConfigParts, nodes: int, spares: int, fabric: Fabric,
              links: list[MediaLine], racks: int, support: SupportDesign | None,
              spares_cache: dict | None = None) -> list[BomLine]:
    """The bill of materials of a configuration at one size: base_lines (with ``racks``,
    design_space's, and ``support``, support_of's), every link class's media (``links``,
    from links_of) and the cold-spare pool (``spares_cache``: cold_spares's)."""
    lines = base_lines(inputs, p, nodes, spares, fabric.switches_total, racks, support)
    for line in links:
        lines += media_lines(line, inputs.medium[line.medium_id].fiber_usd_per_link)
    return lines + cold_spares(inputs, p, nodes + spares, fabric.switches_total, links,
                               spares_cache)


@functools.lru_cache(maxsize=1 << 14)
def media_lines(line: MediaLine, fiber_usd_per_link: float) -> tuple[BomLine, ...]:
    """Transceivers and fibre, or cable assemblies, of one link class; the lines sum to
    the MediaLine's capex and power. Kept per line: configurations that differ only in
    recovery or facility build the same links."""
    where = f"({line.link_class}, {line.length_m:g} m)"
    if not line.transceivers:
        return (BomLine(f"{line.medium_id} cable {where}", "cable", line.cables,
                        line.capex_usd / line.cables, line.power_w / line.cables),)
    fibre_usd = line.links * fiber_usd_per_link
    out = [BomLine(f"{line.medium_id} transceiver {where}", "optics", line.transceivers,
                   (line.capex_usd - fibre_usd) / line.transceivers,
                   line.power_w / line.transceivers)]
    if fibre_usd > 0:
        out.append(BomLine(f"{line.medium_id} fibre {where}", "cable", line.links,
                           fiber_usd_per_link))
    return tuple(out)


def _media_combos(inputs: Inputs, p: ConfigParts, fabric: Fabric
                  ) -> tuple[list[tuple[MediaAssignment, ...]], str | None]:
    """Every combination of non-dominated reaching media over the link classes of the
    largest fabric of a configuration; or a note when a class has no medium that reaches."""
    lengths = lengths_m(inputs, p, fabric)
    media = media_for(inputs.medium.values(), p.nic.port_gbps, p.switch.family)
    per_class = []
    for lc in fabric.link_classes:
        options = non_dominated_media(media_reaching(media, p.nic.port_gbps, lengths[lc.name]),
                                      lc.tier)
        if not options:
            return [], (f"{p.key}: no {p.nic.port_gbps}G medium reaches {lengths[lc.name]:g} m "
                        f"for {lc.name} links")
        per_class.append([MediaAssignment(lc.name, lc.tier, md.id, md.kind, lengths[lc.name])
                          for md in options])
    return [tuple(combo) for combo in itertools.product(*per_class)], None


@dataclasses.dataclass
class SharedWork:
    """What configurations that differ only in recovery mode, redundancy or cooling share
    while their candidates are built (one build of one instance): fabrics and their
    link-class shapes by spec, space layouts and the candidate figures read from them (by
    GPU system, switch, NIC, cooling and fabric spec), the media of a link speed (by port
    Gb/s and switch family), size ladders (size_ladder), throughput by (GPU system,
    switch, NIC, fabric spec, GPUs), cold-spare pools, support designs and media lines."""

    fabrics: dict = dataclasses.field(default_factory=dict)
    spaces: dict = dataclasses.field(default_factory=dict)
    throughput: dict = dataclasses.field(default_factory=dict)
    spares: dict = dataclasses.field(default_factory=dict)
    support: dict = dataclasses.field(default_factory=dict)
    media: dict = dataclasses.field(default_factory=dict)
    speed_media: dict = dataclasses.field(default_factory=dict)
    space_figures: dict = dataclasses.field(default_factory=dict)
    shapes: dict = dataclasses.field(default_factory=dict)
    ladders: dict = dataclasses.field(default_factory=dict)

    def fabric(self, spec) -> Fabric:
        """design_fabric(spec), once per spec (its ValueError raised again)."""
        if spec not in self.fabrics:
            try:
                self.fabrics[spec] = design_fabric(spec)
            except ValueError as exc:
                self.fabrics[spec] = exc
        found = self.fabrics[spec]
        if isinstance(found, ValueError):
            raise found
        return found

    def shape(self, inputs: Inputs, p: ConfigParts, fabric: Fabric
              ) -> tuple[tuple[str, float], ...]:
        """_shape, once per fabric spec (the instance's site lengths are the build's)."""
        if fabric.spec not in self.shapes:
            self.shapes[fabric.spec] = _shape(inputs, p, fabric)
        return self.shapes[fabric.spec]

    def links(self, inputs: Inputs, p: ConfigParts, combo: tuple[MediaAssignment, ...],
              fabric: Fabric) -> list[MediaLine]:
        """links_of, once per (media combination, fabric spec, NIC attachment)."""
        key = (combo, fabric.spec, p.nic_attachment)
        if key not in self.media:
            self.media[key] = links_of(inputs, p, combo, fabric)
        return self.media[key]

    def space(self, inputs: Inputs, p: ConfigParts, fabric: Fabric) -> SpaceLayout:
        """design_space, once per (GPU system, switch, NIC, cooling, fabric spec)."""
        key = self._space_key(p, fabric)
        if key not in self.spaces:
            speed = (p.nic.port_gbps, p.switch.family)  # media_for's arguments
            if speed not in self.speed_media:
                self.speed_media[speed] = media_for(inputs.medium.values(), *speed)
            self.spaces[key] = design_space(inputs, p, fabric, self.speed_media[speed])
        return self.spaces[key]

    def figures(self, inputs: Inputs, p: ConfigParts, fabric: Fabric) -> dict:
        """space_figures of the configuration's space layout, once per (space key, whether
        the halls' slots are capped by power); a fresh copy of its block_slots dict."""
        space = self.space(inputs, p, fabric)
        by_power = not space.pods_own_halls(p.pods_in_buildings, p.pods_in_halls)
        key = (self._space_key(p, fabric), by_power)
        if key not in self.space_figures:
            self.space_figures[key] = space_figures(space, by_power)
        found = self.space_figures[key]
        return found | {"block_slots": dict(found["block_slots"])}

    @staticmethod
    def _space_key(p: ConfigParts, fabric: Fabric) -> tuple:
        """What design_space depends on besides the instance: GPU system (and its NIC's
        power, by NIC id), switch, cooling and fabric spec."""
        return (p.gpu.id, p.switch.id, p.nic.id, p.cooling, fabric.spec)


def build_design_data(inputs: Inputs, evaluators: Evaluators, relax_limits: bool = False
                      ) -> tuple[DesignData, list[str]]:
    """Configurations, exactly evaluated candidates and limits; plus notes for the user."""
    return assemble_design_data(inputs, build_configs(inputs, evaluators, inputs.configs,
                                                      relax_limits))


@dataclasses.dataclass(frozen=True)
class ConfigCandidates:
    """What one configuration of the choices contributes: a Config per media combination,
    their candidates, and notes on what was skipped."""

    configs: dict[str, Config]
    candidates: list[Candidate]
    notes: list[str]


def build_configs(inputs: Inputs, evaluators: Evaluators, parts: Sequence[ConfigParts],
                  relax_limits: bool = False) -> dict[str, ConfigCandidates]:
    """The candidates of the configurations ``parts`` (a group of inputs.configs), by key;
    :func:`assemble_design_data` makes the design data of one or more such groups."""
    shared = SharedWork()
    return {p.key: _config_candidates(inputs, evaluators, p, shared, relax_limits)
            for p in parts}


def assemble_design_data(inputs: Inputs, built: dict[str, ConfigCandidates]
                         ) -> tuple[DesignData, list[str]]:
    """The design data and notes of the configurations ``built`` (by key, from
    :func:`build_configs`), in the order of inputs.configs: equal to one build of them."""
    configs: dict[str, Config] = {}
    candidates: list[Candidate] = []
    notes = list(inputs.config_notes)
    for p in inputs.configs:
        if p.key in built:
            configs |= built[p.key].configs
            candidates += built[p.key].candidates
            notes += built[p.key].notes
    return _design_data(inputs, configs, candidates), notes


def _config_candidates(inputs: Inputs, evaluators: Evaluators, p: ConfigParts,
                       shared: SharedWork, relax_limits: bool) -> ConfigCandidates:
    """The media combinations of configuration ``p`` and their candidate sizes."""
    configs: dict[str, Config] = {}
    candidates: list[Candidate] = []
    notes: list[str] = []
    if not p.rail_optimized and p.gpu.nics_per_node > p.radix // 2:
        notes.append(f"{p.key}: middle-of-rack needs at most {p.radix // 2} NIC ports per "
                     f"node ({p.gpu.id} has {p.gpu.nics_per_node}); skipped")
        return ConfigCandidates(configs, candidates, notes)
    no_rack = no_hall_takes_a_node(inputs, p)
    if no_rack:
        notes.append(no_rack)
        return ConfigCandidates(configs, candidates, notes)
    # Both layouts grow in the rail-optimized scalable unit (k/2 nodes), so they are
    # compared at equal sizes.
    su = scalable_unit_nodes(p.radix, p.gpu.nics_per_node, rail_optimized=True)
    top = max_nodes(inputs, p, relax_limits)
    first = su
    if relax_limits:  # a diagnosis needs at least one size to say what it lacks
        top = max(top, su)
        # sizes below limits.min_gpus cannot meet it: a diagnosis starts at the first
        # that can (else min_gpus = 1e9 walks millions of sizes)
        first = min(su * max(1, math.ceil(inputs.limits.min_gpus / p.gpu.gpus_per_node
                                          / su)), su * (top // su))
    ladders = {None: size_ladder(inputs, evaluators, p, su, top, None, first, shared)}
    sized, stop = ladders[None]
    if stop:
        notes.append(stop)
    if not sized:
        notes.append(f"{p.key}: not even one scalable unit ({su} nodes) fits the limits")
        return ConfigCandidates(configs, candidates, notes)
    for largest, combos, problem in _combos_by_shape(inputs, p, sized, shared):
        if problem:
            notes.append(problem)
            continue
        for combo in combos:
            key = f"{p.key}/" + "+".join(a.medium for a in combo)
            configs[key] = Config(
                key=key, gpu=p.gpu.id, switch=p.switch.id, nic=p.nic.id,
                tiers=p.fabric.tiers, pods=p.fabric.pods or 1,
                oversubscription=p.fabric.oversubscription,
                rail_optimized=p.rail_optimized, nic_attachment=p.nic_attachment,
                su_nodes=su, node_power_w=node_power_w(p),
                su_racks=su_racks(inputs, p, largest, su),
                checkpoint_gbytes_per_s_per_node=p.checkpoint_gbytes_per_s_per_node,
                media=combo, recovery=p.recovery, pods_in_buildings=p.pods_in_buildings,
                redundancy=p.redundancy, cooling=p.cooling,
                pod_join=p.fabric_spec(1).pod_join, pods_in_halls=p.pods_in_halls)
            node_kind = combo[0].kind  # hot spares follow the node links' failure rate
            if node_kind not in ladders:
                ladders[node_kind] = size_ladder(inputs, evaluators, p, su, top, node_kind,
                                                 first, shared)
            candidates += _combo_candidates(inputs, evaluators, p, key, combo, su,
                                            ladders[node_kind][0], shared,
                                            0 if relax_limits else inputs.limits.min_gpus)
    return ConfigCandidates(configs, candidates, notes)


def no_hall_takes_a_node(inputs: Inputs, p: ConfigParts) -> str | None:
    """Why no hall the configuration's cooling equips takes one of its nodes (a rack draws
    at most ``rack_power_kw``; a liquid-cooled system needs a liquid-cooled hall,
    models.space.rack_nodes), naming the field that sets the rack power; None if one
    does."""
    halls = [h for _, h in inputs.halls_for(p.cooling)]
    node_w = node_power_w(p)
    if any(nodes_per_rack(p.gpu, node_w, h) for h in halls):
        return None
    field = (f"catalog.facility.cooling_max_rack_kw.{p.cooling}" if inputs.cooled_halls
             else "site.rack_power_kw (or the halls' rack_power_kw)")
    liquid = " and a liquid-cooled hall" if p.gpu.liquid_cooled else ""
    return (f"{p.key}: no hall takes one {p.gpu.id} node, which needs {node_w / 1e3:,.1f} kW "
            f"a rack{liquid}: {field} lets a rack draw at most "
            f"{max(h.rack_power_kw for h in halls):g} kW; skipped")


def _combos_by_shape(inputs: Inputs, p: ConfigParts, sized: list[tuple[int, int, Fabric]],
                     shared: SharedWork
                     ) -> list[tuple[Fabric, list[tuple[MediaAssignment, ...]], str | None]]:
    """Per link-class shape of the ladder's fabrics (their classes and each class's
    length: a class's length depends on whether it is the campus class, so a ladder
    that gains a tier changes shape), its largest fabric and the media combinations of
    :func:`_media_combos` over it."""
    largest: dict = {}
    for _, _, fabric in sized:
        largest[shared.shape(inputs, p, fabric)] = fabric
    return [(f, *_media_combos(inputs, p, f)) for f in largest.values()]


def _shape(inputs: Inputs, p: ConfigParts, fabric: Fabric) -> tuple[tuple[str, float], ...]:
    """The link classes of ``fabric`` with their typical lengths (node-leaf excluded: its
    length is the block's, the same at every size)."""
    lengths = link_lengths(inputs.site.cable_lengths, fabric, inputs.single_building)
    return tuple((c, m) for c, m in lengths.items() if c != "node-leaf")


def _combo_shape(combo: tuple[MediaAssignment, ...]) -> tuple[tuple[str, float], ...]:
    """The link classes a media combination is for, with their lengths (:func:`_shape`)."""
    return tuple((a.link_class, a.length_m) for a in combo if a.link_class != "node-leaf")


def next_size(inputs: Inputs, evaluators: Evaluators, data: DesignData, k: Candidate
              ) -> Candidate | None:
    """Candidate k one scalable unit larger (``k.nodes + su`` nodes, the next size of its
    ladder), as :func:`size_ladder` and :func:`_candidate` build it: the candidate of
    `data` when the ladder reached it, else built now, so that what the next size needs
    does not depend on where the limits cut the ladder. None where the fabric cannot
    grow to it or gains a tier there (its media combination has no such size).
    Throughput and goodput are estimated (:func:`exact_candidate` refines them)."""
    cfg = data.configs[k.config]
    nodes = k.nodes + cfg.su_nodes
    built = [c for c in data.candidates if c.config == k.config and c.nodes == nodes]
    if built:
        return built[0]
    p = inputs.config(k.config)
    spares = evaluators.spare_nodes(inputs, p, nodes, cfg.media[0].kind)
    try:
        fabric = design_fabric(p.fabric_spec(nodes + spares))
    except ValueError:
        return None
    if _shape(inputs, p, fabric) != _combo_shape(cfg.media):
        return None
    links = links_of(inputs, p, cfg.media, fabric)
    rel = evaluators.goodput(inputs, p, fabric, nodes, spares, links, band=False)
    return _candidate(inputs, evaluators, p, k.config, nodes, spares, fabric, cfg.su_nodes,
                      links, rel, SharedWork())


def _combo_candidates(inputs: Inputs, evaluators: Evaluators, p: ConfigParts, key: str,
                      combo: tuple[MediaAssignment, ...], su: int,
                      ladder: list[tuple[int, int, Fabric]], shared: SharedWork,
                      least_gpus: int = 0) -> list[Candidate]:
    """The candidates of one media combination: the ladder's sizes of its shape from the
    largest with fewer than ``least_gpus`` training GPUs (nodes x GPUs per node;
    limits.min_gpus: no smaller size can be chosen; that one is the chosen size's next
    smaller in the report's requirement rows). The ladder and its goodput points stay
    whole, so a size built is the same whatever ``least_gpus``."""
    shape = _combo_shape(combo)
    sized = [s for s in ladder if shared.shape(inputs, p, s[2]) == shape]
    if not sized:
        return []
    links = [shared.links(inputs, p, combo, fabric) for _, _, fabric in sized]
    goodputs = ladder_goodput(inputs, evaluators, p, combo, sized, links)
    below = sum(nodes * p.gpu.gpus_per_node < least_gpus for nodes, _, _ in sized)
    return [_candidate(inputs, evaluators, p, key, nodes, spares, fabric, su,
                       size_links, rel, shared)
            for (nodes, spares, fabric), size_links, rel
            in list(zip(sized, links, goodputs, strict=True))[max(0, below - 1):]]


def config_groups(inputs: Inputs, parts: int) -> list[tuple[ConfigParts, ...]]:
    """The configurations of `inputs` in at most `parts` groups of about equal size, to
    build their candidates in parallel (`build_design_data` on `inputs` with one group's
    configurations each, then `merge_design_data`). Configurations of one GPU system, NIC
    and layout stay together: they share hot-spare ladders and throughput evaluations,
    which each group's evaluators compute once."""
    families: dict[tuple, list[ConfigParts]] = {}
    for p in inputs.configs:
        families.setdefault((p.gpu.id, p.nic.id, p.rail_optimized), []).append(p)
    groups: list[list[ConfigParts]] = [[] for _ in range(max(1, min(parts, len(families))))]
    for family in sorted(families.values(), key=len, reverse=True):
        min(groups, key=len).extend(family)
    return [tuple(g) for g in groups if g]


def throughput_points(inputs: Inputs) -> list[tuple[GpuSystemLike, int]]:
    """The (GPU system, GPU count) points the interpolated throughput of the candidate
    sizes su, 2su, ... <= max_nodes of every configuration reads (evaluate.grid_bracket),
    in order of system id and count; a superset when a ladder stops early."""
    points = {}
    for p in inputs.configs:
        su = scalable_unit_nodes(p.radix, p.gpu.nics_per_node, rail_optimized=True)
        for nodes in range(su, max_nodes(inputs, p) + 1, su):
            for gpus in grid_bracket(p.gpu.gpus_per_node, nodes * p.gpu.gpus_per_node):
                points[(p.gpu.id, gpus)] = p.gpu
    return [(points[key], key[1]) for key in sorted(points)]


def merge_design_data(inputs: Inputs, parts: list[DesignData]) -> DesignData:
    """One design data from `parts` built for `inputs` over disjoint groups of its
    configurations (`config_groups`): equal to `build_design_data` over all of them
    (configurations in the order of inputs.configs, candidates sorted as always). The
    parts' limit columns are joined when every part has its own."""
    order = {p.key: i for i, p in enumerate(inputs.configs)}
    configs = sorted((item for d in parts for item in d.configs.items()),
                     key=lambda item: order[inputs.config(item[0]).key])
    joined = all(d.columns is not None and d.columns.candidates is d.candidates
                 for d in parts)
    return _design_data(inputs, dict(configs), [c for d in parts for c in d.candidates],
                        [d.columns for d in parts] if joined else None)


def size_ladder(inputs: Inputs, evaluators: Evaluators, p: ConfigParts, su: int, top: int,
                node_kind: str | None, first: int | None = None,
                shared: SharedWork | None = None
                ) -> tuple[list[tuple[int, int, Fabric]], str | None]:
    """Sizes first (default su), first + su, ... <= top nodes with their hot spares (for
    node links of `node_kind`; None: the layout's usual kind) and exact fabric; and a note
    where the fabric cannot grow further. Kept in ``shared`` per (fabric spec but its
    nodes, GPU system, NIC, node_kind, su, top, first): configurations that differ only in
    recovery, redundancy or cooling climb the same ladder (hot spares depend on the GPU
    system, NIC, layout and node links; the fabric on its spec)."""
    shared = shared or SharedWork()
    key = (p.fabric_spec(0), p.gpu.id, p.nic.id, node_kind, su, top, first)
    if key not in shared.ladders:
        shared.ladders[key] = _climb(inputs, evaluators, p, su, top, node_kind, first, shared)
    sized, failed = shared.ladders[key]
    if failed is None:
        return list(sized), None
    nodes, exc = failed
    if not sized:
        return [], f"{p.key} cannot reach {nodes:,} nodes: {exc}"
    return list(sized), f"{p.key} stops at {nodes - su} nodes: {exc}"


def _climb(inputs: Inputs, evaluators: Evaluators, p: ConfigParts, su: int, top: int,
           node_kind: str | None, first: int | None, shared: SharedWork
           ) -> tuple[tuple[tuple[int, int, Fabric], ...], tuple[int, ValueError] | None]:
    """:func:`size_ladder`'s sizes, and the first size (nodes) whose fabric cannot be
    built with design_fabric's error (None if every size up to top can)."""
    sized = []
    for nodes in range(first or su, top + 1, su):
        spares = evaluators.spare_nodes(inputs, p, nodes, node_kind)
        try:
            sized.append((nodes, spares, shared.fabric(p.fabric_spec(nodes + spares))))
        except ValueError as exc:
            return tuple(sized), (nodes, exc)
    return tuple(sized), None


def links_of(inputs: Inputs, p: ConfigParts, combo: tuple[MediaAssignment, ...],
             fabric: Fabric) -> list[MediaLine]:
    """Every link class of `fabric` built with the medium `combo` assigns it."""
    by_class = {a.link_class: a for a in combo}
    return [media_line(lc, inputs.medium[by_class[lc.name].medium],
                       by_class[lc.name].length_m, p.nic_attachment == "twin")
            for lc in fabric.link_classes]


def ladder_goodput(inputs: Inputs, evaluators: Evaluators, p: ConfigParts,
                   combo: tuple[MediaAssignment, ...], sized: list[tuple[int, int, Fabric]],
                   links: list[list[MediaLine]]) -> list[GoodputEstimate]:
    """Goodput along a size ladder: exact at the first size and at every size where the
    ladder crosses a point of the global grid ceil(1.05^i) nodes, linear in nodes in
    between (past the end, the next crossing size is evaluated too). Goodput varies
    smoothly with size and its model costs ~1 ms a call (a third of it without the
    goodput band, which the ladder does not report). The exact points do not depend on
    where the ladder ends, so a size gets the same goodput whatever the limits."""
    grid = grid_points(1)

    def crosses(a: int, b: int) -> bool:
        return bisect.bisect_right(grid, b) > bisect.bisect_right(grid, a)

    points = [(nodes, spares, fabric, size_links) for (nodes, spares, fabric), size_links
              in zip(sized, links, strict=True)]
    step = sized[1][0] - sized[0][0] if len(sized) > 1 else 0
    ends_at_crossing = not step
    while not ends_at_crossing:
        ends_at_crossing = crosses(points[-2][0], points[-1][0])
        if ends_at_crossing:
            break
        nodes = points[-1][0] + step
        spares = evaluators.spare_nodes(inputs, p, nodes, combo[0].kind)
        try:
            fabric = design_fabric(p.fabric_spec(nodes + spares))
        except ValueError:  # the fabric cannot grow: evaluate the ladder's tail exactly
            break
        if {lc.name for lc in fabric.link_classes} != {a.link_class for a in combo}:
            break  # the next size gains a tier (another shape): the tail is exact
        points.append((nodes, spares, fabric, links_of(inputs, p, combo, fabric)))
    crossing = [0] + [i for i in range(1, len(points))
                      if crosses(points[i - 1][0], points[i][0])]
    if not ends_at_crossing:
        crossing += list(range(crossing[-1] + 1, len(points)))
    at = {i: evaluators.goodput(inputs, p, points[i][2], points[i][0], points[i][1],
                                points[i][3], band=False) for i in crossing}
    out = []
    for i, (nodes, _, _) in enumerate(sized):
        if i in at:
            out.append(at[i])
            continue
        j = bisect.bisect_left(crossing, i)
        lo, hi = crossing[j - 1], crossing[j]
        t = (nodes - points[lo][0]) / (points[hi][0] - points[lo][0])
        near = at[lo] if t < 0.5 else at[hi]
        out.append(GoodputEstimate((1 - t) * at[lo].goodput + t * at[hi].goodput,
                                   near.details | {"interpolated_between_nodes":
                                                   [points[lo][0], points[hi][0]]},
                                   exact=False))
    return out


def _candidate(inputs: Inputs, evaluators: Evaluators, p: ConfigParts, key: str,
               nodes: int, spares: int, fabric: Fabric, su: int, links: list[MediaLine],
               rel: GoodputEstimate, shared: SharedWork) -> Candidate:
    """One configuration at one size."""
    space = shared.space(inputs, p, fabric)
    support = support_of(inputs, p, nodes, spares, space.racks, shared.support)
    lines = bom_lines(inputs, p, nodes, spares, fabric, links, space.racks, support,
                      shared.spares)
    gpus = nodes * p.gpu.gpus_per_node
    job = (p.gpu.id, p.switch.id, p.nic.id, fabric.spec, gpus)  # what the job sees
    if job not in shared.throughput:
        shared.throughput[job] = evaluators.throughput(inputs, p, fabric, gpus)
    perf = shared.throughput[job]
    support_w = support.power_w if support else 0.0
    support_racks = support.support_racks if support else 0
    racks = space.racks + support_racks
    it_w = it_power_w(sum(line.power_w for line in lines), inputs.facility)
    figures = shared.figures(inputs, p, fabric)
    return Candidate(
        config=key, nodes=nodes, spare_nodes=spares, gpus=gpus, tiers=fabric.tiers,
        switches_per_tier=fabric.switches_per_tier, links_per_tier=fabric.links_per_tier,
        links_by_class={lc.name: lc.links for lc in fabric.link_classes},
        lines=tuple(line for line in lines if line.quantity > 0),
        network_power_w=(fabric.switches_total * p.switch.power_w
                         + sum(line.power_w for line in links)
                         + storage_power_w(inputs, p, nodes + spares) + support_w),
        network_racks=space.network_racks + support_racks,
        tokens_per_s=perf.tokens_per_s, goodput=rel.goodput, mfu=perf.mfu,
        tokens_per_s_upper=perf.upper,
        exact=perf.exact and rel.exact,
        extra={"su_count": su_count(nodes + spares, su, fabric.pods, p.pods_in_buildings),
               "perf": perf.details,
               "reliability": rel.details, "pods": fabric.pods, "blocks": figures["blocks"],
               "wired_oversubscription": fabric.wired_oversubscription,
               "block_slots": figures["block_slots"],
               "hall_block_slots": figures["hall_block_slots"],
               "block_power_w": figures["block_power_w"],
               "pod_power_w": figures["pod_power_w"],
               "pod_blocks_power_w": figures["pod_blocks_power_w"],
               # placement stands the support racks in network rows (solver.placement)
               "network_rack_power_w": figures["network_power_w"] + sum(
                   line.power_w for line in lines if line.category in SUPPORT_CATEGORIES),
               "group_spine_power_w": figures["group_spine_power_w"],
               **({"support": support.summary()} if support else {})},
        facility=facility_cost(inputs.facility, p.redundancy, p.cooling, it_w, racks),
    )


def su_count(nodes: int, su: int, pods: int, pods_in_buildings: bool) -> int:
    """Scalable units of ``nodes`` nodes (spares included): ``⌈n/su⌉``; with one pod per
    building each pod's ``⌈⌈n/P⌉/su⌉`` (a pod's units stand in its building, a pod smaller
    than one unit, or a partial last unit, takes a unit of its own)."""
    if pods_in_buildings:
        return pods * math.ceil(math.ceil(nodes / pods) / su)
    return math.ceil(nodes / su)


ExactAll = Callable[[DesignData, list[Candidate]], list[Candidate]]
"""The exact candidates (exact_candidate) of a list of candidates of a design data, in
order; e.g. evaluated in more than one process."""


def refine(inputs: Inputs, evaluators: Evaluators, data: DesignData,
           exact_all: ExactAll | None = None) -> DesignData:
    """Evaluate exactly every candidate whose bounds could change the optimum
    (models.design.prune.to_refine), until none is left; ``exact_all`` evaluates each
    round's candidates (default: one by one with ``evaluators``, `exact_in_turn`)."""
    exact_all = exact_all or functools.partial(exact_in_turn, inputs, evaluators)
    while targets := to_refine(data):
        exact = {k.key: e for k, e in zip(targets, exact_all(data, targets), strict=True)}
        changed = [i for i, k in enumerate(data.candidates) if k.key in exact]
        candidates = list(data.candidates)
        for i in changed:
            candidates[i] = exact[candidates[i].key]
        # an exact evaluation changes throughput and goodput only (exact_candidate): the
        # limit columns, and the limits' masks, stay the candidates'
        refined = tuple(candidates)
        data = dataclasses.replace(data, candidates=refined,
                                   columns=columns(data).refined(refined, changed))
    return data


def exact_in_turn(inputs: Inputs, evaluators: Evaluators, data: DesignData,
                  targets: list[Candidate]) -> list[Candidate]:
    """The exact candidates of `targets`, evaluated one by one in order of GPUs (fewest
    first; most first in a process of odd ``evaluators.memo.rank``). Two processes that
    share a memo (solver.sweeps) and refine overlapping candidates at the same time then
    compute different ones first and read the rest from each other, rather than one
    waiting on each that the other computes; and the candidates of one GPU count, which
    share the perf model's feasible set there, are mostly evaluated in one process."""
    order = sorted(targets, key=lambda k: k.gpus, reverse=bool(evaluators.memo.rank % 2))
    exact = {k.key: exact_candidate(inputs, evaluators, data, k) for k in order}
    return [exact[k.key] for k in targets]


def exact_candidate(inputs: Inputs, evaluators: Evaluators, data: DesignData,
                    k: Candidate) -> Candidate:
    """Candidate k with throughput and goodput evaluated exactly."""
    parts = inputs.config(k.config)
    fabric = design_fabric(parts.fabric_spec(k.nodes + k.spare_nodes))
    perf = evaluators.exact_throughput(inputs, parts, fabric, k.gpus)
    rel = evaluators.goodput(inputs, parts, fabric, k.nodes, k.spare_nodes,
                             links_of(inputs, parts, data.configs[k.config].media, fabric))
    return dataclasses.replace(
        k, tokens_per_s=perf.tokens_per_s, tokens_per_s_upper=perf.tokens_per_s,
        mfu=perf.mfu, goodput=rel.goodput, exact=True,
        extra=k.extra | {"perf": perf.details, "reliability": rel.details})


def required_effective_tokens_per_s(inputs: Inputs) -> float:
    need = inputs.objective.required_tokens_per_s or 0.0
    if inputs.limits.deadline_days and inputs.workload.train_tokens:
        need = max(need, inputs.workload.train_tokens / (inputs.limits.deadline_days * 86400.0))
    return need


def with_limits(data: DesignData, inputs: Inputs) -> DesignData:
    """`data` with the limits, requirements and objective of `inputs` (same choices/catalog);
    the fields are models.design.limits.LIMIT_FIELDS."""
    limits = _design_data(inputs, data.configs, [])
    return dataclasses.replace(data, **{f: getattr(limits, f) for f in LIMIT_FIELDS})


def _design_data(inputs: Inputs, configs: dict[str, Config], candidates: list[Candidate],
                 parts: list[LimitColumns] | None = None) -> DesignData:
    """The design data of `candidates` (sorted by configuration and size) and the limits
    of `inputs`; `parts`: the columns of the candidates, part after part (merging built
    parts, `merge_design_data`), else they are laid out here."""
    fac = inputs.facility
    rack_power = rack_power_by_building(inputs.halls)
    share = 1 + fac.non_server_it_fraction
    order = sorted(range(len(candidates)),
                   key=lambda i: (candidates[i].config, candidates[i].nodes))
    ordered = tuple(candidates[i] for i in order)
    return DesignData(
        configs=configs,
        candidates=ordered,
        columns=(LimitColumns.joined(parts, order, ordered) if parts
                 else LimitColumns.of(configs, ordered)),
        buildings=tuple(BuildingData(b.name, b.it_power_mw * 1e6, b.max_racks,
                                     min(rack_power.get(b.name, 0.0),
                                         b.it_power_mw * 1e6 / share),
                                     tuple(h.hall_cap_kw * 1e3 for name, h in inputs.halls
                                           if name == b.name),
                                     tuple(h.name for name, h in inputs.halls if name == b.name))
                        for b in inputs.site.buildings),
        it_power_cap_w=inputs.limits.it_power_mw * 1e6,
        budget_usd=inputs.limits.budget_usd,
        budget_basis=inputs.limits.budget_basis,
        objective=inputs.objective.kind,
        required_effective_tokens_per_s=required_effective_tokens_per_s(inputs),
        min_gpus=inputs.limits.min_gpus,
        max_gpus=inputs.limits.max_gpus,
        min_goodput=inputs.reliability.min_goodput or 0.0,
        tco_rates=fac,
        min_site_availability=(inputs.reliability.site_availability_target or 0.0
                               if fac.facility_cost_mode == "parts" else 0.0),
        non_server_it_fraction=fac.non_server_it_fraction,
        pue=fac.pue,
        build_usd_per_mw=fac.build_usd_per_mw,
        electricity_usd_per_kwh=fac.electricity_usd_per_kwh,
        years=inputs.years,
    )
