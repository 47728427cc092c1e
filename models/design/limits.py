"""What is a limit: the one list of the instance's limits and requirements.

Each entry names where the instance sets it, how it reaches the design MILP, and the
check of the independent checker (solver.checker) that confirms it. Read by:
- models.design.candidates.with_limits: the DesignData fields a new set of limits
  replaces (``LIMIT_FIELDS``);
- solver.sweeps: the instance paths whose scenarios share candidate designs
  (``shared_paths``);
- solver.checker: one check per limit (its ``LIMIT_CHECKS`` table is keyed by ``name``).
tests/test_limits.py fails when any of them drifts from this list or from the instance
schema.
"""

from __future__ import annotations

from dataclasses import dataclass

BUILDING = "site.buildings[*]"
"""Path prefix of a per-building limit (``*``: every building, by name)."""


@dataclass(frozen=True)
class Limit:
    name: str
    """The checker's check name (``name[building]`` per building) and the MILP family."""
    paths: tuple[str, ...]
    """Instance fields that set it."""
    data_fields: tuple[str, ...]
    """DesignData fields that carry it to the MILP; empty: applied when the
    configurations are resolved (solver.prepare)."""
    shared: bool
    """Candidates built for a larger value (a larger power or budget cap, a smaller
    requirement) contain every candidate of this value, so sweep scenarios that vary
    only such paths share one candidate set (solver.sweeps)."""
    qualifiers: tuple[str, ...] = ()
    """Instance fields that qualify it without being limits (budget_basis)."""


LIMITS: tuple[Limit, ...] = (
    Limit("it_power", ("limits.it_power_mw",), ("it_power_cap_w",), shared=True),
    Limit("budget", ("limits.budget_usd",), ("budget_usd", "budget_basis"), shared=True,
          qualifiers=("limits.budget_basis",)),
    Limit("min_gpus", ("limits.min_gpus",), ("min_gpus",), shared=True),
    Limit("max_gpus", ("limits.max_gpus",), ("max_gpus",), shared=True),
    Limit("building_power", (f"{BUILDING}.it_power_mw",), ("buildings",), shared=True),
    Limit("space", (f"{BUILDING}.max_racks",), ("buildings",), shared=True),
    Limit("required_throughput", ("objective.required_tokens_per_s", "limits.deadline_days"),
          ("required_effective_tokens_per_s",), shared=True),
    Limit("min_goodput", ("reliability.min_goodput",), ("min_goodput",), shared=False),
    Limit("max_blast_radius", ("reliability.max_blast_radius_gpus",), (), shared=False),
    Limit("site_availability", ("reliability.site_availability_target",),
          ("min_site_availability",), shared=False),
)
"""Every limit and requirement of an instance. A building's power is shared only while
its halls stay the same (a building that lists no halls has them derived from its power,
and the candidates read the halls: solver.sweeps.shares_candidates). min_goodput is not
shared by sweeps yet (the candidates do not depend on it, but no test covers sharing
it); site_availability is not shared (the redundancy levels a target rules out are
pruned from the candidates, solver.prepare.facility_options)."""

LIMIT_FIELDS: tuple[str, ...] = (
    *dict.fromkeys(f for limit in LIMITS for f in limit.data_fields), "objective")
"""DesignData fields replaced when a candidate set gets new limits; the objective kind
travels with them (it decides whether the requirements bind)."""


def shared_paths() -> tuple[str, ...]:
    """Instance paths whose scenarios can share candidate designs."""
    return tuple(p for limit in LIMITS if limit.shared for p in limit.paths)
