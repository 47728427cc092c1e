"""Schema of instances/catalog/reliability.toml: failure rates and recovery figures.

Every figure carries its source inline ({url, kind, by, note}); rates are given as a
mean time to failure in hours per unit named by ``per``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from solver.schema.catalog import Generation, NonNegativeFloat, PositiveFloat, StrictModel


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
    per: Literal["gpu", "gpu-slot", "nic-port", "link", "switch"]
    """The unit the MTTF refers to."""

    @property
    def per_hour(self) -> float:
        return 1.0 / self.mttf_hours


class Figure(SourcedFigure):
    value: NonNegativeFloat
    unit: str


OpticKind = Literal["multimode", "singlemode", "aoc", "coherent"]
CopperKind = Literal["dac", "acc", "aec"]


class Recovery(StrictModel):
    detect_s: Figure
    replace_s: Figure
    init_ref_s: Figure
    init_ref_gpus: Figure
    init_large_s: Figure
    """A second MLPerf init point, at init_large_gpus; with init_ref it sets the exponent."""
    init_large_gpus: Figure
    host_copy_gbytes_per_s_per_gpu: Figure
    node_repair_h: Figure
    switch_replace_h: Figure
    fabric_interrupt_fraction: Figure
    availability_target: Figure


class ReliabilityCatalog(StrictModel):
    gpu: dict[Generation, Rate]
    """Per GPU incl. HBM, by GPU generation."""
    node_rest: Rate
    nic: Rate
    optic: dict[OpticKind, Rate]
    copper: dict[CopperKind, Rate]
    switch: Rate
    recovery: Recovery
