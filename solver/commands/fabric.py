"""`clusterplan fabric`: size the scale-out fabric for a GPU count (work in progress)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Attach the `fabric` command to the CLI app (filled in below as it lands)."""
