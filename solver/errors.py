"""Exception hierarchy; each error carries the CLI exit code of the contract."""

from __future__ import annotations


class ClusterplanError(Exception):
    exit_code = 1


class UsageError(ClusterplanError):
    exit_code = 2


class InvalidInstance(ClusterplanError):
    """Bad input: every problem is listed as 'field.path: message'."""

    exit_code = 3

    def __init__(self, problems: list[str], source: str = "instance"):
        self.problems = problems
        self.source = source
        super().__init__(f"{source}: {len(problems)} problem(s)\n" + "\n".join(
            f"  - {p}" for p in problems))


class Infeasible(ClusterplanError):
    exit_code = 4


class NoSolution(ClusterplanError):
    exit_code = 5
