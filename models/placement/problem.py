"""The zone model's data: halls as zones, switch groups, upper tiers (module doc of
:mod:`models.placement.model` for the mathematics)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Zone:
    """One hall as the model sees it."""

    name: str
    building: str
    ring_slots: tuple[int, ...]
    """Block slots per ring (disjoint), ring order = ``ring_cost`` order."""
    ring_cost: tuple[int, ...]
    """Leaf-spine cost per link of a block in the ring, hub in this hall [cost units]."""
    network_positions: int
    power_cap_w: int


@dataclass(frozen=True)
class Group:
    """The blocks one tier-2 switch group joins, and that group's spine switches."""

    blocks: int
    links_per_block: int
    """Leaf-spine links of one block (all to this group's spines)."""
    spine_switches: int
    spine_racks: int
    spine_power_w: int
    building: str | None = None
    """The building (or hall, ``building/hall``) its hub and blocks must stand in (its
    pod's, when pods are aligned with buildings or halls); None = anywhere."""
    short_w: int = 0
    """What its blocks draw less than as many full blocks: a pod's partly filled last
    block's missing nodes [W]; counted against its site (its hall, or its building's
    halls together) when it is bound to one, else 0 (its blocks may stand anywhere)."""


@dataclass(frozen=True)
class UpperTier:
    """Tier ``t ≥ 3``: its switches and the links arriving at it from tier ``t-1``."""

    name: str
    switches: int
    per_rack: int
    switch_power_w: int
    links: int
    cost: tuple[tuple[int, ...], ...]
    """Cost per link [cost units], lower end in zone ``i``, upper end in zone ``j``."""
    building_switches: tuple[tuple[str, int], ...] = ()
    """(building, switches) each building must hold: a tier inside pods aligned with
    buildings; empty = anywhere."""


@dataclass(frozen=True)
class PlacementProblem:
    zones: tuple[Zone, ...]
    groups: tuple[Group, ...]
    block_power_w: int
    remote_cost: tuple[tuple[int, ...], ...]
    """Leaf-spine cost per link, block in zone ``i``, hub in zone ``j ≠ i``."""
    upper: tuple[UpperTier, ...]
    building_cap_w: dict[str, int]
    support_racks: int = 0
    """Support racks (models.support) to stand in the zones' network positions."""
    support_rack_power_w: int = 0
    """What one support rack draws [W]."""


def upper_coefficients(problem: PlacementProblem) -> list[list[list[int]]]:
    """``round(links_t · cost_t[i][j] / (S_{t-1} · S_t))`` per upper tier and zone pair."""
    below = sum(g.spine_switches for g in problem.groups)
    out = []
    for tier in problem.upper:
        denom = below * tier.switches
        out.append([[round(tier.links * c / denom) if denom else 0 for c in row]
                    for row in tier.cost])
        below = tier.switches
    return out


def group_types(groups: tuple[Group, ...]) -> list[tuple[Group, list[int]]]:
    """Identical groups gathered: (group, indices), in order of first appearance."""
    out: dict[Group, list[int]] = {}
    for g, grp in enumerate(groups):
        out.setdefault(grp, []).append(g)
    return list(out.items())
