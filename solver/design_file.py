"""A design.json read back for ``clusterplan place``: validated (solver.schema.design_file),
checked to belong to the instance it is placed on, and re-derived from that instance.

Trust: only the design's decisions are read (GPU system, switch, NIC, layout, NIC
attachment, pods, oversubscription, recovery, training nodes, the medium of each link
class). Everything that follows from them is derived again from the resolved instance,
never read: the hot spares (the reliability model), the fabric (switches and links per
tier, tiers), GPUs, the BOM and TCO (the cost rate placement prices failures with) and
the reliability figures. A derived count in the file that disagrees is refused; its
cost, power and throughput sections are ignored.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.design.candidates import bom_lines, design_space, lengths_m, links_of, support_of
from models.design.data import MediaAssignment
from models.design.evaluate import Evaluators, default_evaluators
from models.design.inputs import ConfigParts, Inputs
from models.fabric import Fabric, design_fabric
from models.facility import facility_cost
from models.placement.assemble import DesignToPlace
from models.placement.economics import cost_usd_per_hour, lost_hours_per_interruption
from models.power_cost import it_power_w, power_cost
from solver.errors import InvalidInstance
from solver.loading import format_validation_error, read_text
from solver.schema.design_file import DesignDecisions, DesignFile


def is_design_file(path: Path) -> bool:
    """A .json file holding a solve document (``design`` and ``instance``), not an
    instance; unreadable or malformed JSON is refused (exit 3)."""
    if path.suffix.lower() != ".json":
        return False
    doc = read_design_document(path)
    return isinstance(doc, dict) and "design" in doc and "instance" in doc


def read_design_file(path: Path, doc: Any = None) -> DesignFile:
    """The design file (its document `doc` when already read, `read_design_document`),
    validated: every problem named with its field and bound (exit 3)."""
    source = f"design {path}"
    try:
        return DesignFile.model_validate(read_design_document(path) if doc is None else doc)
    except ValidationError as err:
        raise InvalidInstance(format_validation_error(err), source) from None


def read_design_document(path: Path) -> Any:
    """The JSON document of `path`, numbers as JSON allows them (no NaN or Infinity);
    unreadable, oversized (solver.loading.read_text) or malformed JSON is refused (exit 3)."""
    text = read_text(path)
    try:
        return json.loads(text, parse_constant=_non_finite)
    except (ValueError, RecursionError) as exc:
        raise InvalidInstance([f"{path}: {exc}"], "design") from None


def _non_finite(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def placeable_design(inputs: Inputs, file: DesignFile) -> DesignToPlace:
    """What placement needs, re-derived from ``inputs`` and the file's decisions.

    Refused (InvalidInstance, exit 3), each reason naming the field: a file solved on
    another instance (name or SHA-256 differ), decisions the instance does not offer, and
    derived counts that differ from the re-derivation."""
    if file.instance != inputs.name or file.instance_sha256 != inputs.sha256:
        raise InvalidInstance([
            f"instance: the design was solved on '{file.instance}' (sha256 "
            f"{file.instance_sha256[:12]}...), not on '{inputs.name}' (sha256 "
            f"{inputs.sha256[:12]}...); solve this instance or place the design on its own "
            "instance (--instance)"], "design")
    d, field = file.decisions(), file.media_field
    evaluators = default_evaluators(inputs)
    media = _media(inputs, d, field)
    parts, spares, fabric = _built(inputs, evaluators, d, media)
    media = _check_media(inputs, parts, d, media, fabric, field)
    links = links_of(inputs, parts, media, fabric)
    racks = design_space(inputs, parts, fabric).racks
    support = support_of(inputs, parts, d.nodes, spares, racks)
    lines = bom_lines(inputs, parts, d.nodes, spares, fabric, links, racks, support)
    built = facility_cost(inputs.facility, parts.redundancy, parts.cooling,
                          it_power_w(sum(x.power_w for x in lines), inputs.facility),
                          racks + (support.support_racks if support else 0))
    pc = power_cost(lines, inputs.facility, inputs.years, built)
    rel = evaluators.goodput(inputs, parts, fabric, d.nodes, spares, links)
    return DesignToPlace(parts.gpu.id, parts.switch.id, d.nodes + spares, fabric.tiers,
                         d.pods, d.requested_oversubscription, d.rail_optimized, d.nic_attachment,
                         lost_hours_per_interruption(rel.details),
                         cost_usd_per_hour(pc.tco_usd, pc.years),
                         tuple(fabric.switches_per_tier), tuple(fabric.links_per_tier),
                         parts.recovery, parts.pods_in_buildings,
                         tuple((m.link_class, m.medium) for m in media), parts.cooling,
                         d.pod_join, d.pods_in_halls,
                         support.support_racks if support else 0,
                         support.power_w if support else 0.0)


def _configurations(inputs: Inputs, d: DesignDecisions) -> list[ConfigParts]:
    """The instance's configurations with the design's decisions (several when fabric
    choices differ only in ``tiers``, which the design's counts tell apart)."""
    wanted = {"gpu": d.gpu, "switch": d.switch, "nic": d.nic, "pods": d.pods,
              "oversubscription": d.requested_oversubscription,
              "rail_optimized": d.rail_optimized,
              "nic_attachment": d.nic_attachment, "recovery": d.recovery,
              "pods_in_buildings": d.pods_in_buildings, "pod_join": d.pod_join,
              "pods_in_halls": d.pods_in_halls}
    if d.facility is not None:
        wanted |= {"redundancy": d.facility.redundancy, "cooling": d.facility.cooling}
    if d.checkpoint_storage_gbytes_per_s_per_node is not None:
        wanted["checkpoint"] = d.checkpoint_storage_gbytes_per_s_per_node

    def offered(p: ConfigParts) -> bool:
        have = {"gpu": p.gpu.id, "switch": p.switch.id, "nic": p.nic.id,
                "pods": p.fabric.pods or 1, "oversubscription": p.fabric.oversubscription,
                "rail_optimized": p.rail_optimized, "nic_attachment": p.nic_attachment,
                "recovery": p.recovery, "pods_in_buildings": p.pods_in_buildings,
                "pod_join": p.fabric_spec(1).pod_join, "pods_in_halls": p.pods_in_halls,
                "redundancy": p.redundancy, "cooling": p.cooling,
                "checkpoint": p.checkpoint_gbytes_per_s_per_node}
        return {k: have[k] for k in wanted} == wanted

    matches = [p for p in inputs.configs if offered(p)]
    if matches:
        return matches
    decisions = ", ".join(f"{k}={v}" for k, v in wanted.items())
    raise InvalidInstance([f"design: no configuration of instance '{inputs.name}' has "
                           f"{decisions}"], "design")


def _built(inputs: Inputs, evaluators: Evaluators, d: DesignDecisions,
           media: tuple[MediaAssignment, ...]) -> tuple[ConfigParts, int, Fabric]:
    """The first configuration with the design's decisions whose fabric, re-derived, has
    the design's counts, with its hot spares and fabric; refused with the first's
    problems when none has."""
    problems: list[str] = []
    for parts in _configurations(inputs, d):
        spares = evaluators.spare_nodes(inputs, parts, d.nodes, media[0].kind)
        try:
            fabric = design_fabric(parts.fabric_spec(d.nodes + spares))
        except ValueError as exc:
            problems = problems or [f"design.nodes: {d.nodes:,} nodes: {exc}"]
            continue
        differ = _count_problems(d, parts, spares, fabric)
        if not differ:
            return parts, spares, fabric
        problems = problems or differ
    raise InvalidInstance(problems, "design")


def _media(inputs: Inputs, d: DesignDecisions, field: str) -> tuple[MediaAssignment, ...]:
    """The file's medium per link class (read from ``field``), with the catalog's kind."""
    problems = [f"{field}.{i}.medium: '{m.medium}' is not in the instance's catalog"
                for i, m in enumerate(d.media) if m.medium not in inputs.medium]
    if problems:
        raise InvalidInstance(problems, "design")
    return tuple(MediaAssignment(m.link_class, i + 1, m.medium, inputs.medium[m.medium].kind,
                                 m.length_m) for i, m in enumerate(d.media))


def _count_problems(d: DesignDecisions, parts: ConfigParts, spares: int, fabric: Fabric
                    ) -> list[str]:
    """Derived counts in the file that differ from the re-derivation, and the wired ratio
    between pods (``oversubscription``) against the one the requested ratio wires (a file
    without ``oversubscription_requested`` has the requested one there)."""
    derived = {"gpus": d.nodes * parts.gpu.gpus_per_node, "spare_nodes": spares,
               "tiers": fabric.tiers, "switches_per_tier": list(fabric.switches_per_tier),
               "links_per_tier": list(fabric.links_per_tier)}
    problems = [f"design.{k}: {getattr(d, k)} differs from {v}, what design.nodes = "
                f"{d.nodes:,} of this configuration gives on this instance"
                for k, v in derived.items() if getattr(d, k) != v]
    wired = fabric.wired_oversubscription
    if (d.oversubscription_requested is not None
            and not math.isclose(d.oversubscription, wired, rel_tol=1e-9)):
        problems.append(f"design.oversubscription: {d.oversubscription:g} differs from "
                        f"{wired:g}, the ratio between pods design.oversubscription_requested "
                        f"= {d.oversubscription_requested:g} wires at design.nodes = "
                        f"{d.nodes:,} on this instance")
    return problems


def _check_media(inputs: Inputs, parts: ConfigParts, d: DesignDecisions,
                 media: tuple[MediaAssignment, ...], fabric: Fabric, field: str
                 ) -> tuple[MediaAssignment, ...]:
    """One medium per link class of the fabric, at the NIC's speed, reaching the class's
    length on this site; lengths re-derived from the site. Problems name ``field`` (where
    the media were read: design.media, or a placed file's design_estimate.media)."""
    lengths = lengths_m(inputs, parts, fabric)
    classes = [lc.name for lc in fabric.link_classes]
    if [m.link_class for m in media] != classes:
        raise InvalidInstance([f"{field}: link classes {[m.link_class for m in media]} "
                               f"differ from the fabric's {classes}"], "design")
    problems = []
    for i, (m, lc) in enumerate(zip(media, fabric.link_classes, strict=True)):
        medium = inputs.medium[m.medium]
        if (medium.gbps != parts.nic.port_gbps or medium.reach_m < lengths[lc.name]
                or parts.switch.family not in medium.switch_families):
            problems.append(f"{field}.{i}.medium: {m.medium} ({medium.gbps}G, reach "
                            f"{medium.reach_m:g} m, for {'/'.join(medium.switch_families)}) "
                            f"cannot build {lc.name} links ({parts.nic.port_gbps}G, "
                            f"{lengths[lc.name]:g} m, {parts.switch.family})")
        if d.media[i].links != lc.links:
            problems.append(f"{field}.{i}.links: {d.media[i].links} differs from the "
                            f"fabric's {lc.links} {lc.name} links")
    if problems:
        raise InvalidInstance(problems, "design")
    return tuple(MediaAssignment(m.link_class, lc.tier, m.medium, m.kind, lengths[lc.name])
                 for m, lc in zip(media, fabric.link_classes, strict=True))

