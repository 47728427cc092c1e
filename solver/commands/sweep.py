"""`clusterplan sweep | tornado | pareto | marginal`: scenario sweeps and sensitivity."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from solver.cli_common import JsonFlag, emit_json, run, stderr, stdout
from solver.deadline import MAX_TIME_LIMIT_S

InstanceArg = Annotated[Path | None, typer.Argument(
    help="Instance file; default: the shipped instances/h100-100k.toml.")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", help="Output folder (default results/<instance>/sweeps/<name>/).")]
BackendOpt = Annotated[str, typer.Option(
    "--backend", help="local | processes | dask.")]
SchedulerOpt = Annotated[str | None, typer.Option(
    "--scheduler", help="Dask scheduler address (default: a LocalCluster on loopback).")]
WorkersOpt = Annotated[int, typer.Option("--workers", min=1,
                                         help="Worker processes (processes, local Dask).")]
TimeLimitOpt = Annotated[float, typer.Option(
    "--time-limit", min=0.1, max=MAX_TIME_LIMIT_S,
    help="Wall-clock budget of each scenario, every stage [s].")]
NameOpt = Annotated[str | None, typer.Option(
    "--name", help="Sweep name: one folder name inside the results folder.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="No progress bar.")]
MaxScenariosOpt = Annotated[int, typer.Option(
    "--max-scenarios", min=1, help="Refuse to start a sweep of more scenarios than this.")]


def _run_options(out, backend, scheduler, workers, time_limit, name, quiet) -> dict[str, Any]:
    """Options of `solver.sweeps.run_scenarios` (checked there, before any work)."""
    return {"out": out, "backend": backend, "scheduler": scheduler, "workers": workers,
            "time_limit_s": time_limit, "name": name, "progress": not quiet}


def _contract(attrs: dict[str, Any]) -> dict[str, Any]:
    keys = ("scenarios", "solved", "failed", "errors", "table", "runtime_s", "backend", "csv",
            "folder", "solved_now", "reused", "retried", "warnings", "name")
    return {k: attrs[k] for k in keys}


def _print_warnings(attrs: dict[str, Any]) -> None:
    for warning in attrs.get("warnings", []):
        stderr.print(f"warning: {warning}", highlight=False, markup=False)


def _percent(text: str, option: str) -> float:
    from solver.errors import UsageError

    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise UsageError(f"{option}: a percentage such as 20% (got '{text}')") from None
    return value / 100.0 if text.strip().endswith("%") or value >= 1 else value


def register(app: typer.Typer) -> None:
    @app.command()
    def sweep(
        instance: InstanceArg = None,
        vary: Annotated[list[str] | None, typer.Option(
            "--vary", help="PATH=SPEC: lo:hi:n, a,b,c or ±p%:n; repeat for a grid.")] = None,
        file: Annotated[Path | None, typer.Option(
            "--file", help="Sweep file (TOML) with instance, name and a \\[vary] table.")] = None,
        out: OutOpt = None, backend: Annotated[str | None, typer.Option(
            "--backend", help="local | processes | dask (default local).")] = None,
        scheduler: SchedulerOpt = None,
        workers: Annotated[int | None, typer.Option("--workers", min=1, help=(
            "Worker processes (processes, local Dask; default 2)."))] = None,
        time_limit: Annotated[float | None, typer.Option(
            "--time-limit", min=0.1, max=MAX_TIME_LIMIT_S, help=(
            "Wall-clock budget of each scenario, every stage [s] (default 60)."))] = None,
        name: NameOpt = None, quiet: QuietOpt = False,
        max_scenarios: MaxScenariosOpt = 10_000, as_json: JsonFlag = False,
    ) -> None:
        """Solve every scenario of a grid; one tidy table (parquet + CSV) of the results.

        A failed scenario is a row with status 'error' and its reason; re-running into
        the same folder solves only what is missing or failed."""
        from solver.errors import UsageError
        from solver.scenario import parse_vary
        from solver.sweeps import read_sweep_file
        from solver.sweeps import sweep as run_sweep

        def body():
            spec: dict[str, Any] = read_sweep_file(file) if file is not None else {}
            axes = dict(spec.get("vary", {}))
            varied: set[str] = set()  # a --vary replaces the file's axis of its path
            for text in vary or []:
                path, values = parse_vary(text)
                if path in varied:
                    raise UsageError(f"--vary {path}: given twice; list all its values in "
                                     "one --vary (PATH=a,b,c)")
                varied.add(path)
                axes[path] = values
            if not axes:
                raise UsageError("--vary: give at least one PATH=SPEC (or --file)")
            target = instance if instance is not None else spec.get("instance")
            def given(flag: Any, key: str, default: Any = None) -> Any:
                """A flag as given (an empty one too), else the sweep file's value."""
                return flag if flag is not None else spec.get(key, default)
            options = _run_options(out, given(backend, "backend", "local"), scheduler,
                                   given(workers, "workers", 2),
                                   given(time_limit, "time_limit_s", 60.0),
                                   given(name, "name"), quiet or as_json)
            table = run_sweep(target, axes, max_scenarios=max_scenarios, **options)
            doc = _contract(table.attrs)
            _print_warnings(table.attrs)
            if as_json:
                emit_json(doc)
            else:
                stdout.print(table.drop(columns=["id", "error"]).to_string(index=False),
                             markup=False, highlight=False)
            for _, row in table[table["status"].eq("error")].head(10).iterrows():
                where = ", ".join(f"{p}={row[p]!r}" for p in table.attrs["paths"])
                stderr.print(f"error: {where or 'base'}: {row['error']}", highlight=False,
                             markup=False)
            errors = f", {doc['errors']} failed with an error" if doc["errors"] else ""
            stderr.print(f"{doc['solved']}/{doc['scenarios']} solved{errors} in "
                         f"{doc['runtime_s']:.1f} s; wrote {doc['table']} and {doc['csv']}",
                         highlight=False, markup=False)

        run(body)

    @app.command()
    def tornado(
        instance: InstanceArg = None,
        delta: Annotated[str, typer.Option("--delta", help="Move each input ± this much.")
                         ] = "20%",
        param: Annotated[list[str] | None, typer.Option(
            "--param", help="Input path to move (repeat); default: limits, prices, power.")
                         ] = None,
        out: OutOpt = None, backend: BackendOpt = "local", scheduler: SchedulerOpt = None,
        workers: WorkersOpt = 2, time_limit: TimeLimitOpt = 60.0, name: NameOpt = None,
        quiet: QuietOpt = False, as_json: JsonFlag = False,
    ) -> None:
        """Each uncertain input moved ± alone; inputs ranked by their effect on the objective."""
        from solver.analysis import tornado as run_tornado

        def body():
            table = run_tornado(instance, _percent(delta, "--delta"), param or None,
                                **_run_options(out, backend, scheduler, workers, time_limit,
                                               name, quiet or as_json))
            _emit(table, "tornado", as_json)

        run(body)

    @app.command()
    def pareto(
        instance: InstanceArg = None,
        x: Annotated[str, typer.Option("--x", help="capex_usd | tco_usd | it_mw | gpus.")
                     ] = "capex_usd",
        y: Annotated[str, typer.Option("--y", help="effective_tokens_per_s.")
                     ] = "effective_tokens_per_s",
        points: Annotated[int, typer.Option("--points", min=2, help="ε values.")] = 9,
        x_min: Annotated[float | None, typer.Option("--x-min", help="Smallest ε.")] = None,
        x_max: Annotated[float | None, typer.Option("--x-max", help="Largest ε.")] = None,
        out: OutOpt = None, backend: BackendOpt = "local", scheduler: SchedulerOpt = None,
        workers: WorkersOpt = 2, time_limit: TimeLimitOpt = 60.0, name: NameOpt = None,
        quiet: QuietOpt = False, max_scenarios: MaxScenariosOpt = 10_000,
        as_json: JsonFlag = False,
    ) -> None:
        """ε-constraint Pareto frontier of y against x, with the design at each point."""
        from solver.analysis import pareto as run_pareto

        def body():
            table = run_pareto(instance, x, y, points, x_min, x_max,
                               max_scenarios=max_scenarios,
                               **_run_options(out, backend, scheduler, workers, time_limit,
                                              name, quiet or as_json))
            _emit(table, "pareto", as_json)

        run(body)

    @app.command()
    def marginal(
        instance: InstanceArg = None,
        step: Annotated[str, typer.Option("--step", help="Finite-difference step.")] = "10%",
        out: OutOpt = None, backend: BackendOpt = "local", scheduler: SchedulerOpt = None,
        workers: WorkersOpt = 2, time_limit: TimeLimitOpt = 60.0, name: NameOpt = None,
        quiet: QuietOpt = False, as_json: JsonFlag = False,
    ) -> None:
        """Marginal value of the power and budget limits (per MW, per $M) by finite
        differences around the optimum."""
        from solver.analysis import marginal_values

        def body():
            table = marginal_values(instance, _percent(step, "--step"),
                                    **_run_options(out, backend, scheduler, workers,
                                                   time_limit, name, quiet or as_json))
            _emit(table, "marginal", as_json)

        run(body)


def _emit(table, kind: str, as_json: bool) -> None:
    """The analysis table on stdout (one JSON document with --json: NaN and ±inf, which
    JSON cannot hold, become null)."""
    import numpy as np

    attrs = table.attrs
    finite = table.replace([np.inf, -np.inf], np.nan)
    doc = {"analysis": kind, "table": attrs[kind], "plot": attrs["plot"],
           "scenarios": attrs["scenarios"], "solved": attrs["solved"],
           "failed": attrs["failed"], "runtime_s": attrs["runtime_s"],
           "backend": attrs["backend"],
           "rows": finite.astype(object).where(finite.notna(), None).to_dict(orient="records")}
    _print_warnings(attrs)
    if as_json:
        emit_json(doc)
    else:
        stdout.print(table.to_string(index=False), markup=False, highlight=False)
    stderr.print(f"wrote {attrs[kind]} and {attrs['plot']}", highlight=False, markup=False)
