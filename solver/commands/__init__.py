"""CLI command modules; each exposes `register(app)` and is listed in solver.cli.COMMAND_MODULES."""
