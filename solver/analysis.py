"""Sensitivity analyses on top of sweeps: tornado, ε-constraint Pareto frontier,
marginal values of the limits. Each returns a pandas table, writes it (parquet + CSV)
and a PNG plot next to the sweep's scenario files.

What a marginal value means here. The design problem picks ONE discrete candidate (a
configuration at one size of its scalable-unit ladder), so the optimum is a step
function of every limit: it stays flat until the limit admits the next size, then
jumps. Its derivative (and the LP dual of a limit with the design fixed, which is 0
unless the limit is exactly tight) is therefore almost always 0 and says nothing. The
meaningful figure is the finite difference over a step a planner would actually buy:
(objective(limit + h) - objective(limit)) / h, per MW or per $M, forward and backward.
That is what `marginal_values` reports, with the step stated.

Tornado and marginal values are about a solved base: the base scenario is solved first,
and when it has no design the analysis stops with the base's own answer (Infeasible,
exit 4, with the diagnosis; NoSolution, exit 5) instead of solving the moved inputs.
Each analysis holds its folder's lock (`solver.sweeps.folder_lock`) from the first solve
to the last file written.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from models.design import prune
from solver.errors import ClusterplanError, Infeasible, InvalidInstance, NoSolution, UsageError
from solver.loading import instance_from_dict
from solver.scenario import full_document, get_path, make_scenarios
from solver.schema import Instance
from solver.sweeps import (
    MAX_SCENARIOS,
    SOLVED,
    Base,
    Shared,
    check_run_options,
    check_scenario_count,
    folder_lock,
    load_base,
    resolved_sha256,
    run_scenarios,
    shared_candidates,
    shared_document,
    sweep_folder,
    write_output,
    write_table,
)


def _analysis_folder(base: Base, default_name: str, run_options: dict[str, Any]) -> Path:
    """Check the flags and the output folder before any work; the folder is then passed
    to every `run_scenarios` of the analysis as its `out`."""
    check_run_options(run_options.get("backend", "local"), run_options.get("workers", 2),
                      run_options.get("scheduler"), run_options.get("time_limit_s", 60.0))
    run_options["name"] = run_options.get("name") or default_name
    run_options["out"] = sweep_folder(base.instance.name, run_options["name"],
                                      run_options.get("out"))
    return run_options["out"]


def _solved_base(base: Base, run_options: dict[str, Any], analysis: str) -> pd.Series:
    """The base scenario's row, solved first; its failure stops the analysis."""
    row = run_scenarios(base, [{}], **run_options).iloc[0]
    reason = row["error"] or "no reason recorded"
    if row["status"] == "infeasible":
        raise Infeasible(f"the instance is infeasible, so it has no {analysis}: {reason}")
    if row["status"] == "no_solution":
        raise NoSolution(f"the instance has no design within "
                         f"{run_options.get('time_limit_s', 60.0):g} s, so it has no {analysis}")
    if row["status"] not in SOLVED:
        raise ClusterplanError(f"the instance failed to solve, so it has no {analysis}: "
                               f"{reason}")
    return row

# --- tornado -------------------------------------------------------------------------

def default_uncertain_paths(inst: Instance) -> list[str]:
    """Inputs a planner is unsure of: the limits, prices and power of the chosen parts,
    facility cost figures, and the assumed MFU / overhead when the instance uses them."""
    paths = ["limits.it_power_mw", "limits.budget_usd"]
    for g in sorted(set(inst.choices.gpus)):
        paths += [f"catalog.gpu.{g}.node_price_usd", f"catalog.gpu.{g}.gpu_power_w"]
    for s in sorted({f.switch for f in inst.choices.fabrics}):
        paths.append(f"catalog.switch.{s}.price_usd")
    paths += ["catalog.facility.build_usd_per_mw", "catalog.facility.non_server_it_fraction"]
    if inst.objective.kind == "min_tco" or inst.limits.budget_basis == "tco":
        paths += ["catalog.facility.electricity_usd_per_kwh", "catalog.facility.pue"]
    if inst.objective.performance == "assumed_mfu":
        paths.append("objective.assumed_mfu")
    if inst.objective.reliability_model == "overhead":
        paths.append("objective.overhead_fraction")
    return paths


def _moved(value: Any, factor: float) -> Any:
    moved = value * factor
    return int(round(moved)) if isinstance(value, int) and not isinstance(value, bool) else moved


def tornado(instance: str | Path | Instance | dict | None = None, delta: float = 0.2,
            params: list[str] | None = None, **run_options: Any) -> pd.DataFrame:
    """Move each input alone to base x (1 - delta) and base x (1 + delta); rank by the
    swing |objective(high) - objective(low)| (NaN when a side has no solution: last).

    Columns: parameter, base_value, low_value, high_value, objective_base, objective_low,
    objective_high, status_low, status_high, swing, swing_fraction (of the base objective).
    Writes tornado.{parquet,csv,png} in the sweep folder (`.attrs['folder']`)."""
    if not 0 < delta < 1:
        raise UsageError(f"--delta: must be between 0 and 100% (got {delta:g})")
    base = load_base(instance)
    full = full_document(base.instance)
    paths = params or default_uncertain_paths(base.instance)
    values, problems = {}, []
    for path in paths:
        try:
            value = get_path(full, path)
        except InvalidInstance as exc:
            problems += exc.problems
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            problems.append(f"{path}: not a number ({value!r}); a tornado moves numbers")
            continue
        values[path] = value
    if problems:
        raise InvalidInstance(problems, "--param")
    assignments = [{}] + [{p: _moved(v, f)} for p, v in values.items()
                          for f in (1 - delta, 1 + delta)]
    folder = _analysis_folder(base, f"tornado-{round(delta * 100):d}pct", run_options)
    with folder_lock(folder):
        _solved_base(base, run_options, "tornado")
        table = run_scenarios(base, assignments, **run_options)
        return _tornado_table(table, values, delta)


def _tornado_table(table: pd.DataFrame, values: dict[str, Any], delta: float) -> pd.DataFrame:
    base_row = table.iloc[0]
    rows = []
    for path, value in values.items():
        low, high = (table[table[path] == _moved(value, f)].iloc[0]
                     for f in (1 - delta, 1 + delta))
        swing = abs(_objective(high) - _objective(low))
        base_objective = abs(_objective(base_row))
        rows.append({"parameter": path, "base_value": value, "low_value": low[path],
                     "high_value": high[path], "objective_base": _objective(base_row),
                     "objective_low": _objective(low), "objective_high": _objective(high),
                     "status_low": low["status"], "status_high": high["status"],
                     "swing": swing,
                     "swing_fraction": swing / base_objective if base_objective else math.nan})
    out = (pd.DataFrame(rows).sort_values("swing", ascending=False, na_position="last",
                                          kind="stable").reset_index(drop=True))
    folder = Path(table.attrs["folder"])
    write_table(folder, out, "tornado")
    plot_tornado(out, str(base_row["objective_name"]), delta, folder / "tornado.png")
    out.attrs.update(table.attrs | {"tornado": str(folder / "tornado.parquet"),
                                    "plot": str(folder / "tornado.png")})
    return out


def _objective(row: pd.Series) -> float:
    return float(row["objective"]) if row["status"] in SOLVED else math.nan


# --- pareto --------------------------------------------------------------------------

PARETO_X: dict[str, tuple[str, str | None]] = {
    "capex_usd": ("limits.budget_usd", "capex"),
    "tco_usd": ("limits.budget_usd", "tco"),
    "it_mw": ("limits.it_power_mw", None),
    "gpus": ("limits.max_gpus", None),
}
"""x metric -> (the limit that bounds it, the budget basis it needs)."""
PARETO_Y = ("effective_tokens_per_s",)


def candidate_x(data, cand, x: str) -> float:
    """The x metric of one candidate, as the design MILP computes it (models.design.milp):
    models.design.prune's IT power, capex and TCO (models.power_cost's formulas)."""
    return {"it_mw": prune.it_power_w(data, cand) / 1e6, "gpus": float(cand.gpus),
            "capex_usd": prune.capex_usd(data, cand), "tco_usd": prune.tco_usd(data, cand)}[x]


def pareto_base(base_doc: dict[str, Any], x: str) -> dict[str, Any]:
    """The instance document maximising effective throughput with x's limit as ε."""
    doc = dict(base_doc)
    doc["objective"] = {k: v for k, v in dict(doc.get("objective", {})).items()
                        if k != "required_tokens_per_s"} | {"kind": "max_effective_throughput"}
    basis = PARETO_X[x][1]
    if basis is not None:
        doc["limits"] = dict(doc.get("limits", {})) | {"budget_basis": basis}
    return doc


def pareto(instance: str | Path | Instance | dict | None = None, x: str = "capex_usd",
           y: str = "effective_tokens_per_s", points: int = 9, x_min: float | None = None,
           x_max: float | None = None, **run_options: Any) -> pd.DataFrame:
    """ε-constraint frontier: maximise y subject to x <= ε for `points` values of ε from
    x_min (default: the smallest x of a candidate design with at least limits.min_gpus)
    to x_max (default: the instance's limit on x). One row per ε with the design found;
    `on_frontier` marks the points no other point dominates (less or equal x with more
    y). Writes pareto.{parquet,csv,png}."""
    if x not in PARETO_X:
        raise UsageError(f"--x: one of {', '.join(PARETO_X)} (got '{x}')")
    if y not in PARETO_Y:
        raise UsageError(f"--y: one of {', '.join(PARETO_Y)} (got '{y}')")
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise UsageError(f"--points: a whole number of at least 2 (got {points!r})")
    check_scenario_count(points, run_options.get("max_scenarios", MAX_SCENARIOS))
    for flag, value in (("--x-min", x_min), ("--x-max", x_max)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise UsageError(f"{flag}: a positive number (got {value!r})")
    if x_min is not None and x_max is not None and x_min >= x_max:
        raise UsageError(f"--x-min {x_min:g} must be below --x-max {x_max:g}")
    loaded = load_base(instance)
    doc = pareto_base(loaded.doc, x)
    base = Base(doc, instance_from_dict(doc, loaded.source), loaded.source)
    path = PARETO_X[x][0]
    top = x_max if x_max is not None else get_path(full_document(base.instance), path)
    if top is None:
        raise UsageError(f"--x-max: the instance sets no {path}; give --x-max")
    if x_min is not None and x_min >= top:
        raise UsageError(f"--x-min {x_min:g} must be below the largest ε {top:g} "
                         f"(--x-max, or the instance's {path})")
    folder = _analysis_folder(base, f"pareto-{x}-{y}-{points}", run_options)
    with folder_lock(folder):
        if x_min is None:
            shared = shared_document(base.doc, make_scenarios(base.doc, base.instance,
                                                              [{path: top}], base.source))
            data = shared_candidates(Shared(shared, base.source,
                                            resolved_sha256(shared, base.source)))
            least = base.instance.limits.min_gpus  # smaller designs cannot be chosen
            x_min = min((candidate_x(data, c, x) for c in data.candidates
                         if c.gpus >= least), default=top)
        eps = np.linspace(min(x_min, top), top, points)
        # each ε once: rounded GPU counts can repeat, and every point is the top one when
        # no candidate has min_gpus (one infeasible row with its diagnosis, not three)
        eps = np.unique(np.round(eps).astype(int) if x == "gpus" else eps)
        table = run_scenarios(base, [{path: e.item()} for e in eps], **run_options)
        return _pareto_table(table, path, x, y)


def _pareto_table(table: pd.DataFrame, path: str, x: str, y: str) -> pd.DataFrame:
    table = table.rename(columns={path: "epsilon"})
    solved = table[table["status"].isin(SOLVED)].sort_values([x, y], ascending=[True, False])
    best, frontier = -math.inf, set()
    for idx, row in solved.iterrows():
        if row[y] > best:
            frontier.add(idx)
            best = row[y]
    table["on_frontier"] = [i in frontier for i in table.index]
    table.insert(0, "x_metric", x)
    folder = Path(table.attrs["folder"])
    write_table(folder, table, "pareto")
    plot_pareto(table, x, y, folder / "pareto.png")
    table.attrs.update({"pareto": str(folder / "pareto.parquet"),
                        "plot": str(folder / "pareto.png")})
    return table


# --- marginal values -----------------------------------------------------------------

MARGINAL_LIMITS: dict[str, tuple[str, float]] = {
    "limits.it_power_mw": ("MW", 1.0),
    "limits.budget_usd": ("$M", 1e6),
}
"""limit -> (unit a marginal value is quoted per, that unit in the limit's own units)."""


def marginal_values(instance: str | Path | Instance | dict | None = None,
                    step: float = 0.05, **run_options: Any) -> pd.DataFrame:
    """Finite differences of the optimum in each limit, per MW and per $M.

    For a limit L with step h = step x L: forward (obj(L + h) - obj(L)) / h and backward
    (obj(L) - obj(L - h)) / h, in objective units per MW or per $M. `binding` is the
    solve's own flag (the next size up would break the limit). See the module docstring
    for why the LP dual with the design fixed is not reported: it is 0 by construction."""
    if not 0 < step < 1:
        raise UsageError(f"--step: a fraction of the limit between 0 and 1 (got {step:g})")
    base = load_base(instance)
    assignments: list[dict[str, Any]] = [{}]
    for path in MARGINAL_LIMITS:
        value = get_path(full_document(base.instance), path)
        assignments += [{path: value * (1 - step)}, {path: value * (1 + step)}]
    folder = _analysis_folder(base, f"marginal-{round(step * 100):d}pct", run_options)
    with folder_lock(folder):
        _solved_base(base, run_options, "marginal values")
        table = run_scenarios(base, assignments, **run_options)
        return _marginal_table(table, base, step)


def _marginal_table(table: pd.DataFrame, base: Base, step: float) -> pd.DataFrame:
    base_row = table.iloc[0]
    binding = set(str(base_row["binding"] or "").split(","))
    rows = []
    for i, (path, (unit, per)) in enumerate(MARGINAL_LIMITS.items()):
        value = get_path(full_document(base.instance), path)
        low, high = table.iloc[1 + 2 * i], table.iloc[2 + 2 * i]
        h_units = value * step / per
        rows.append({
            "limit": path, "value": value, "unit": unit, "binding": path in binding,
            "step": value * step, "objective_name": base_row["objective_name"],
            "objective": _objective(base_row), "objective_minus": _objective(low),
            "objective_plus": _objective(high),
            "forward_per_unit": (_objective(high) - _objective(base_row)) / h_units,
            "backward_per_unit": (_objective(base_row) - _objective(low)) / h_units,
        })
    out = pd.DataFrame(rows)
    folder = Path(table.attrs["folder"])
    write_table(folder, out, "marginal")
    plot_marginal(out, folder / "marginal.png")
    out.attrs.update(table.attrs | {"marginal": str(folder / "marginal.parquet"),
                                    "plot": str(folder / "marginal.png")})
    return out


# --- plots ---------------------------------------------------------------------------

def _save_png(plt, fig, path: Path) -> None:
    """Write the figure whole or not at all (`solver.sweeps.write_output`); close it."""
    try:
        write_output(path, lambda tmp: fig.savefig(tmp, dpi=120, format="png"))
    finally:
        plt.close(fig)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_tornado(table: pd.DataFrame, objective: str, delta: float, path: Path) -> None:
    """Horizontal bars of the objective at -delta and +delta around the base, largest
    swing on top."""
    plt = _pyplot()
    from matplotlib.ticker import EngFormatter, MaxNLocator

    rows = table.iloc[::-1]
    base = float(table["objective_base"].iloc[0]) if len(table) else 0.0
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.5))
    ypos = np.arange(len(rows))
    for col, colour, label in (("objective_low", "tab:blue", f"input -{delta:.0%}"),
                               ("objective_high", "tab:orange", f"input +{delta:.0%}")):
        ax.barh(ypos, rows[col].fillna(base) - base, left=base, color=colour, alpha=0.8,
                label=label)
    ax.axvline(base, color="black", linewidth=0.8)
    ax.margins(x=0.15)
    ax.set_yticks(ypos, rows["parameter"])
    ax.xaxis.set_major_formatter(EngFormatter(places=2))  # "18.90 M", not a 1e7 offset
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.set_xlabel(objective)
    ax.set_title(f"Tornado: each input moved ±{delta:.0%} alone")
    ax.legend(loc="lower right")
    fig.tight_layout()
    _save_png(plt, fig, path)


def plot_pareto(table: pd.DataFrame, x: str, y: str, path: Path) -> None:
    """All solved ε-points and the frontier, frontier points labelled with their design."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    solved = table[table["status"].isin(SOLVED)]
    front = solved[solved["on_frontier"]].sort_values(x)
    ax.scatter(solved[x], solved[y], color="grey", s=14, label="ε-constraint optimum")
    ax.step(front[x], front[y], where="post", color="tab:blue", label="frontier")
    for _, row in front.iterrows():
        ax.annotate(f"{row['gpus']:,} GPUs {row['switch']} {row['tiers']}T", (row[x], row[y]),
                    fontsize=7, xytext=(3, -10), textcoords="offset points")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"Pareto frontier: max {y} s.t. {x} <= ε")
    ax.legend(loc="lower right")
    fig.tight_layout()
    _save_png(plt, fig, path)


def plot_marginal(table: pd.DataFrame, path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [f"{r['limit']} (per {r['unit']})" for _, r in table.iterrows()]
    ypos = np.arange(len(table))
    ax.barh(ypos - 0.2, table["backward_per_unit"].fillna(0), height=0.4, label="backward")
    ax.barh(ypos + 0.2, table["forward_per_unit"].fillna(0), height=0.4, label="forward")
    ax.set_yticks(ypos, labels)
    ax.set_xlabel(f"{table['objective_name'].iloc[0]} per unit of the limit")
    ax.set_title("Marginal value of the limits (finite differences)")
    ax.legend()
    fig.tight_layout()
    _save_png(plt, fig, path)
