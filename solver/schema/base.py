"""Base types of the instance schema: the strict frozen model and constrained numbers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$", max_length=64)]
# strict: a number must be written as a number (no `true` for 1, no "3" for 3); an
# integer field takes no 5.0; a float field takes an integer.
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
NonNegativeFloat = Annotated[float, Field(ge=0, allow_inf_nan=False, strict=True)]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False, strict=True)]
PositiveInt = Annotated[int, Field(gt=0, strict=True)]
Bool = Annotated[bool, Field(strict=True)]
"""A flag written true or false (not "yes", not 1)."""


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


Generation = Literal["ampere", "hopper", "blackwell", "blackwell-ultra", "cdna3"]
