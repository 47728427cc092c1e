"""Typed results of the pipeline and the one vocabulary of statuses."""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Outcome of a solve or a placement (the ``status`` of every JSON document)."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    """A limit was hit; the incumbent is kept (no proof of optimality)."""
    INFEASIBLE = "infeasible"
    """No design (or placement) meets the limits; a diagnosis says why."""
    NO_SOLUTION = "no_solution"
    """Nothing found within the time limit."""

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)
