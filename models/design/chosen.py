"""A chosen design as the user sees it: the candidate, its building plan, its bill of
materials, and power/cost rolled up by models.power_cost (not read off the MILP)."""

from __future__ import annotations

from dataclasses import dataclass

from models.design.data import Candidate, Config
from models.design.inputs import Inputs
from models.power_cost import BomLine, PowerCost, power_cost


@dataclass(frozen=True)
class ChosenDesign:
    config: Config
    candidate: Candidate
    su_per_building: dict[str, int]
    network_w_per_building: dict[str, float]
    network_racks_per_building: dict[str, float]
    blocks_per_building: dict[str, int] | None = None
    """Placement blocks (models.space) per building, within its halls' block slots; None
    for a design that is not to be placed (a phased build-out's period cluster)."""

    def bom(self) -> list[BomLine]:
        """Every part with quantity, unit cost and unit power (the facility is not a part)."""
        return list(self.candidate.lines)

    def media(self) -> list[dict]:
        """Medium, length and link count of every link class the design has."""
        return [{"link_class": a.link_class, "medium": a.medium, "kind": a.kind,
                 "length_m": a.length_m, "links": self.candidate.links_by_class[a.link_class]}
                for a in self.config.media if a.link_class in self.candidate.links_by_class]

    def power_cost(self, inputs: Inputs) -> PowerCost:
        return power_cost(self.bom(), inputs.facility, inputs.years, self.candidate.facility)
