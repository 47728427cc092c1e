"""Schema of a design.json read back as the input of ``clusterplan place``.

design.json is the ``solve`` document (solver.results.SolveSummary). ``place`` reads
from it only the instance it belongs to (``instance``, ``instance_sha256``) and the
design's decisions and counts (``design``), each within physical bounds; every other
section (cost, throughput, bom, ...) is ignored: placement re-derives what it needs from
the instance and the decisions (solver.design_file).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from solver.schema.base import Slug

MAX_NODES = 2_000_000
"""More nodes than any design the solver makes (1M+ GPUs at 1 GPU a node)."""
MAX_TIERS = 6
MAX_MEDIA_PER_CLASS = 64
"""Media one link class of a placed design is split over (by routed length)."""
MAX_PODS = 4096
MAX_OVERSUBSCRIPTION = 64.0
"""As ``clusterplan fabric --oversubscription``."""
MAX_LENGTH_M = 100_000.0
"""A link longer than 100 km is no campus link."""
MAX_COUNT = 10**9
"""Switches or links of one tier."""

Count = Annotated[int, Field(ge=0, le=MAX_COUNT, strict=True)]


class DesignFileModel(BaseModel):
    """Known fields are typed and bounded; unknown ones are ignored (design.json is the
    whole solve document)."""

    model_config = ConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)


class MediaChoice(DesignFileModel):
    link_class: Annotated[str, Field(min_length=1, max_length=64)]
    medium: Slug
    """Catalog id of the medium built on every link of the class."""
    kind: Annotated[str, Field(max_length=32)]
    length_m: Annotated[float, Field(gt=0, le=MAX_LENGTH_M, allow_inf_nan=False)]
    links: Count


class FacilityDecisions(DesignFileModel):
    """The design's facility: redundancy level and cooling technology ('per-mw' for both
    in the $/MW shortcut mode)."""

    redundancy: Literal["N", "N+1", "2N", "per-mw"]
    cooling: Literal["air", "rdhx", "dlc", "per-mw"]


class DesignDecisions(DesignFileModel):
    """The ``design`` section: decisions (GPU system, switch, NIC, layout, pods,
    oversubscription, recovery, facility, checkpoint storage, nodes, media) and counts
    the fabric model re-derives (gpus, spare_nodes, tiers, switches and links per tier),
    compared on load."""

    gpu: Slug
    switch: Slug
    nic: Slug
    nodes: Annotated[int, Field(ge=1, le=MAX_NODES, strict=True)]
    """Training nodes."""
    spare_nodes: Annotated[int, Field(ge=0, le=MAX_NODES, strict=True)]
    gpus: Annotated[int, Field(ge=1, le=64 * MAX_NODES, strict=True)]
    tiers: Annotated[int, Field(ge=1, le=MAX_TIERS, strict=True)]
    pods: Annotated[int, Field(ge=1, le=MAX_PODS, strict=True)]
    oversubscription: Annotated[float, Field(gt=0, le=MAX_OVERSUBSCRIPTION,
                                             allow_inf_nan=False)]
    """The ratio between pods as wired, checked against the one the requested ratio wires
    (below 1 where uplinks round up past a pod's endpoints); a file written before the
    wired ratio was reported has the requested one here (then >= 1)."""
    oversubscription_requested: Annotated[float | None, Field(
        ge=1, le=MAX_OVERSUBSCRIPTION, allow_inf_nan=False)] = None
    """The fabric choice's ratio, the decision (None: ``oversubscription`` is it)."""
    rail_optimized: StrictBool
    nic_attachment: Literal["single", "twin"]
    recovery: Literal["storage", "in-memory"] = "storage"
    pods_in_buildings: StrictBool = False
    """One pod per building of the site (a fabric choice with pods_per = 'building')."""
    pod_join: Literal["super", "mesh"] = "super"
    """How the pods are joined (a fabric choice's pod_join)."""
    pods_in_halls: StrictBool = False
    """One pod per hall of the site (a fabric choice with pods_per = 'hall')."""
    facility: FacilityDecisions | None = None
    """None (a design.json without one): the instance's first configuration matching the
    other decisions."""
    checkpoint_storage_gbytes_per_s_per_node: Annotated[
        float, Field(ge=0, le=1e4, allow_inf_nan=False)] | None = None
    switches_per_tier: Annotated[list[Count], Field(min_length=1, max_length=MAX_TIERS)]
    links_per_tier: Annotated[list[Count], Field(min_length=1, max_length=MAX_TIERS)]
    media: Annotated[list[MediaChoice], Field(
        min_length=1, max_length=MAX_TIERS * MAX_MEDIA_PER_CLASS)]
    """One medium per link class; of a placed design, each (link class, medium) placement
    built (the decisions are then ``design_estimate.media``, one per class)."""

    @model_validator(mode="after")
    def _requested_at_least_one(self) -> DesignDecisions:
        if self.oversubscription_requested is None and self.oversubscription < 1:
            raise ValueError(f"design.oversubscription {self.oversubscription:g} is below 1, "
                             "and without design.oversubscription_requested it is the ratio "
                             "asked for (>= 1)")
        return self

    @property
    def requested_oversubscription(self) -> float:
        """The fabric choice's ratio between pods (the decision)."""
        return (self.oversubscription if self.oversubscription_requested is None
                else self.oversubscription_requested)


class DesignStageEstimate(DesignFileModel):
    """A placed design.json's ``design_estimate``: the design stage's medium per link
    class (its ``design.media`` holds the placed media, by routed length)."""

    media: Annotated[list[MediaChoice], Field(min_length=1, max_length=MAX_TIERS)]


class DesignFile(DesignFileModel):
    """A design.json from ``clusterplan solve``."""

    instance: Slug
    """Name of the instance the design was solved on."""
    instance_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """SHA-256 of that instance document (its catalog included)."""
    design: DesignDecisions
    design_estimate: DesignStageEstimate | None = None

    def decisions(self) -> DesignDecisions:
        """The design stage's decisions: of a placed design, the designed media per link
        class (``design_estimate.media``), not the placed ones."""
        if self.design_estimate is None:
            return self.design
        return self.design.model_copy(update={"media": self.design_estimate.media})

    @property
    def media_field(self) -> str:
        """Where :meth:`decisions` read the media from (for messages naming the field)."""
        return "design.media" if self.design_estimate is None else "design_estimate.media"
