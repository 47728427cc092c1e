"""Schema of the reliability catalog (instances/catalog/reliability.toml, `catalog.reliability`
of an instance): failure rates by class, restart parts by recovery mode, what-if profiles.

Every figure carries its source inline ({url, kind, by, note}). A rate is a mean time to
failure in hours per unit named by ``per`` and carries its range: the 95% Poisson interval
of the ``events`` the source counted, or an explicit ``mttf_range_hours`` when the source
gives no counts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt, model_validator

from solver.schema.base import Generation, NonNegativeFloat, PositiveFloat, StrictModel

RecoveryMode = Literal["storage", "in-memory"]
LinkKind = Literal["multimode", "singlemode", "aoc", "coherent", "dac", "acc", "aec"]


class SourcedFigure(StrictModel):
    url: str = Field(min_length=8)
    """Where the figure comes from (URL, DOI or arXiv address)."""
    kind: Literal["datasheet", "estimate", "derived", "assumption", "override"]
    by: str = Field(min_length=2)
    """Whose figure or estimate."""
    note: str = Field(min_length=8)
    """How the figure was obtained or what it assumes."""


class Rate(SourcedFigure):
    mttf_hours: PositiveFloat
    """Mean time to failure of one unit [h]; the rate is 1 / mttf_hours."""
    per: Literal["gpu", "node", "nic-port", "link", "switch", "job"]
    """The unit the MTTF refers to (node: one server/host)."""
    events: PositiveInt | None = None
    """Failures the source counted: the range is their 95% Poisson interval."""
    mttf_range_hours: tuple[PositiveFloat, PositiveFloat] | None = None
    """[shortest, longest] MTTF [h] when the source gives no counts (an overridden
    mttf_hours outside it widens it)."""

    @model_validator(mode="after")
    def _one_range(self) -> Rate:
        if (self.events is None) == (self.mttf_range_hours is None):
            raise ValueError("give exactly one of events (a Poisson interval) or "
                             "mttf_range_hours")
        if self.mttf_range_hours is not None and self.kind != "override":
            low, high = self.mttf_range_hours
            if not low <= self.mttf_hours <= high:
                raise ValueError(f"mttf_range_hours [{low:g}, {high:g}] must contain "
                                 f"mttf_hours {self.mttf_hours:g}")
        return self


class Figure(SourcedFigure):
    value: NonNegativeFloat
    unit: str


class RestartFigures(StrictModel):
    """The parts of one recovery mode's restart; reinit(G) = reinit_ref_s x
    (G / reinit_ref_gpus) ** reinit_exponent."""

    detect_s: Figure
    hang_detect_s: Figure
    """Detection of a hang or silent corruption, found by a collective timeout."""
    isolate_s: Figure
    replace_s: Figure
    reinit_ref_s: Figure
    reinit_ref_gpus: Figure
    reinit_exponent: Figure
    warmup_s: Figure


class Recovery(StrictModel):
    host_copy_gbytes_per_s_per_gpu: Figure
    node_repair_h: Figure
    switch_replace_h: Figure
    fabric_interrupt_fraction: Figure
    availability_target: Figure
    host_memory_usd_per_gb: Figure
    """Host DRAM bought for in-memory checkpoint copies [USD/GB]."""

    @model_validator(mode="after")
    def _bounds(self) -> Recovery:
        problems = [f"{name}.value: must be positive (got {getattr(self, name).value:g})"
                    for name in ("host_copy_gbytes_per_s_per_gpu", "node_repair_h",
                                 "switch_replace_h")
                    if not getattr(self, name).value > 0]
        for name in ("fabric_interrupt_fraction", "availability_target"):
            v = getattr(self, name).value
            if not 0 <= v <= 1 or (name == "availability_target" and v in (0, 1)):
                bounds = "[0, 1]" if name == "fabric_interrupt_fraction" else "(0, 1)"
                problems.append(f"{name}.value: must lie in {bounds} (got {v:g})")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class RateTables(StrictModel):
    """The failure taxonomy's rates (all optional: a profile overrides some of them)."""

    gpu: dict[Generation, Rate] = {}
    """Per GPU incl. HBM, SRAM and the GPU system processor, by GPU generation."""
    host: Rate | None = None
    nic: Rate | None = None
    link: dict[LinkKind, Rate] = {}
    switch: Rate | None = None
    software: Rate | None = None
    sdc: Rate | None = None
    planned: Rate | None = None


class Profile(RateTables):
    description: str = Field(min_length=8)


class ReliabilityCatalog(RateTables):
    host: Rate
    nic: Rate
    switch: Rate
    software: Rate
    sdc: Rate
    planned: Rate
    restart: dict[RecoveryMode, RestartFigures]
    recovery: Recovery
    profile: dict[str, Profile] = {}
    """Named what-ifs; 'default' is the tables above."""

    @model_validator(mode="after")
    def _complete(self) -> ReliabilityCatalog:
        problems = []
        if not self.gpu:
            problems.append("gpu: needs a rate for at least one GPU generation")
        missing = sorted(set(RecoveryMode.__args__) - set(self.restart))
        if missing:
            problems.append(f"restart: missing recovery modes {', '.join(missing)}")
        if "default" in self.profile:
            problems.append("profile.default: reserved for the catalog's own tables")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def profiles(self) -> list[str]:
        """Known profile names, sorted ('default' included)."""
        return sorted({"default", *self.profile})

    def with_profile(self, name: str) -> ReliabilityCatalog:
        """The catalog with profile `name`'s rates in place of the defaults."""
        if name == "default":
            return self
        p = self.profile[name]
        return self.model_copy(update={
            "gpu": self.gpu | p.gpu, "link": self.link | p.link,
            **{k: getattr(p, k) for k in ("host", "nic", "switch", "software", "sdc",
                                          "planned") if getattr(p, k) is not None}})
