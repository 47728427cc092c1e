"""Output files of a command, written as one set, never half: results/<instance>/
{design.json, bom.csv, summary.md, bom.xlsx, report.html} and, with a placement,
placement.csv, cables.csv and floorplan.png. Every file is written from the final result
(``result.to_dict()``: placed and re-checked when placed); the design stage's estimate
appears only where labelled so.

The one API for writers is ``output_set`` (a context manager): check the location before
any work with ``check_out_location``, then write every file of the set into the staging
folder it yields; on success the whole set is renamed into place, on any failure
(an error, Ctrl-C, a full disk) nothing in the target changes and the staging folder is
removed. Single files that are rewritten in place (sweep tables) use
``write_file_atomically``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from solver.bom_xlsx import write_bom_xlsx
from solver.errors import InvalidInstance
from solver.floorplan import floorplan_png, import_pyplot
from solver.forked import forked, process_alive
from solver.placement import CableRun, PlacementResult, Rack, cables_table
from solver.report_html import between_pods, stacks_uri, write_report_html

PLACEMENT_FILES = ("placement.csv", "cables.csv", "floorplan.png")
"""The files of a placement (``place``; also part of a solve's set)."""
SOLVE_FILES = ("design.json", "bom.csv", "summary.md", "bom.xlsx", "report.html",
               *PLACEMENT_FILES)
"""The files of a solve's set: a solve removes the ones it does not write this time (a
``--no-place`` solve removes an older placement), so a folder never mixes two solves.
Writers that add a file to a solve's set add its name here."""
STAGE_PREFIX = ".tmp-set-"


def default_out_dir(instance_name: str) -> Path:
    """./results/<instance>/ of the working directory."""
    return Path.cwd() / "results" / instance_name


def check_out_location(folder: Path) -> None:
    """`folder` is, or can be created as, a writable folder (exit 3 naming --out); checked
    before any work and without creating anything."""
    if folder.exists() and not folder.is_dir():
        raise InvalidInstance([f"{folder}: exists and is not a folder"], "--out")
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise InvalidInstance([f"{folder}: cannot be created, {probe} is not a folder"],
                              "--out")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InvalidInstance([f"{folder}: {probe} is not writable"], "--out")


@contextlib.contextmanager
def output_set(out_dir: Path, replaces: Iterable[str] = ()) -> Iterator[Path]:
    """Write a set of output files as a whole.

        with output_set(out_dir, replaces=SOLVE_FILES) as stage:
            (stage / "design.json").write_text(text)
            figure.savefig(stage / "floorplan.png")

    ``stage`` is an empty folder inside ``out_dir`` (same file system: renames are
    atomic). When the block ends normally, every file written into it is moved into
    ``out_dir`` (os.replace, fsynced first) with Ctrl-C, SIGTERM and the deadline's
    alarm held off, the files named in ``replaces`` that were not written this time are
    removed, and the stage is removed. When the block raises (anything, KeyboardInterrupt
    included) the stage is removed and ``out_dir`` keeps its old files (or, if this call
    created it, is removed again). Stages left by a killed process (kill -9) are removed
    by the next set written into the folder. A write that fails for lack of room or
    permission is an output-location problem (exit 3 naming the folder). Subfolders of
    the stage are not moved: a set is flat files.

    Writers that add files to a solve's set (report.html, bom.xlsx) write them into the
    stage inside ``write_solve_outputs`` and add their names to ``SOLVE_FILES``.
    """
    created = not out_dir.exists()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        _remove_dead_stages(out_dir)
        stage = Path(tempfile.mkdtemp(dir=out_dir, prefix=f"{STAGE_PREFIX}{os.getpid()}-"))
    except OSError as exc:
        raise InvalidInstance([f"{out_dir}: cannot write: {exc.strerror or exc}"],
                              "--out") from None
    try:
        yield stage
        with _signals_held():
            _commit(stage, out_dir, replaces)
    except BaseException as exc:
        shutil.rmtree(stage, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()  # only if still empty
        if isinstance(exc, OSError):
            raise InvalidInstance([f"{out_dir}: cannot write: {exc.strerror or exc}"],
                                  "--out") from None
        raise
    shutil.rmtree(stage, ignore_errors=True)


def _commit(stage: Path, out_dir: Path, replaces: Iterable[str]) -> None:
    """Move the staged files into ``out_dir`` under an flock on the folder, so two
    commands writing one folder at once leave one set or the other, never a mix."""
    names = sorted(p.name for p in stage.iterdir() if p.is_file())
    for name in names:
        with open(stage / name, "rb") as fh:
            os.fsync(fh.fileno())
    folder = os.open(out_dir, os.O_RDONLY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        for name in names:
            os.replace(stage / name, out_dir / name)
        for stale in sorted(set(replaces) - set(names)):
            (out_dir / stale).unlink(missing_ok=True)
    finally:
        os.close(folder)  # releases the lock


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGALRM (the command's deadline, solver.deadline) delivered only
    after the block (main thread; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM, signal.SIGALRM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _remove_dead_stages(out_dir: Path) -> None:
    """Stages of processes that no longer run (killed while writing)."""
    for stage in out_dir.glob(f"{STAGE_PREFIX}*"):
        pid = stage.name.removeprefix(STAGE_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(stage, ignore_errors=True)


_UMASK = os.umask(0o022)
os.umask(_UMASK)


def write_file_atomically(path: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` on a temporary file in `path`'s folder, fsync it and os.replace
    it onto `path`: readers see the old file or the whole new one, never a part. The
    temporary file is removed when `write` fails (a full disk, a file-size limit). The
    file gets the permissions of a plainly created one (mkstemp's are owner-only)."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.stem}-", suffix=path.suffix)
    os.close(fd)
    tmp = Path(name)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def summary_markdown(summary: dict[str, Any]) -> str:
    """A short human report of a solve, for pasting into planning documents."""
    d, p, c, t = summary["design"], summary["power"], summary["cost"], summary["throughput"]
    lines = [
        f"# clusterplan design: {summary['instance']}",
        "",
        f"Status: **{summary['status']}**, verified by the independent checker: "
        f"**{summary['verified']}**.",
        "",
        "| | |", "|---|---|",
        f"| GPU system | {d['gpu']} x {d['gpus']:,} GPUs ({d['nodes']:,} nodes + "
        f"{d['spare_nodes']:,} spares) |",
        f"| Fabric | {d['switch']} ({d['nic']}), {d['tiers']} tiers, {d['pods']} pod(s)"
        f"{pods_text(d)}, "
        f"{between_pods(d)}, "
        f"{'rail-optimized' if d['rail_optimized'] else 'middle-of-rack'}, "
        f"{d['nic_attachment']}-port NIC cages |",
        f"| Switches per tier | {', '.join(f'{n:,}' for n in d['switches_per_tier'])} |",
        f"| Critical IT / facility | {p['it_mw']:.1f} MW / {p['facility_mw']:.1f} MW, "
        f"{p['annual_energy_twh']:.2f} TWh/yr |",
        f"| Capex | ${c['capex_usd'] / 1e9:.3f}B (equipment ${c['equipment_capex_usd'] / 1e9:.3f}B"
        f", facility ${c['facility_capex_usd'] / 1e9:.3f}B) |",
        f"| TCO ({c['tco_years']} yr) | ${c['tco_usd'] / 1e9:.3f}B |",
        f"| Full cost | ${c['usd_per_gpu_hour']:.2f} per GPU-hour, "
        f"${c['usd_per_million_tokens']:.4g} per million effective tokens |",
        f"| Throughput | {t['tokens_per_s']:,.0f} tokens/s at MFU {t['mfu']:.1%} |",
        f"| Effective | {t['effective_tokens_per_s']:,.0f} tokens/s (goodput {t['goodput']:.1%}) |",
    ]
    if t["time_to_train_days"] is not None:
        lines.append(f"| Time to train | {t['time_to_train_days']:.1f} days |")
    par = t["performance"].get("parallelism")
    if par:
        lines.append("| Parallelism | " + ", ".join(f"{k} {v}" for k, v in par.items()) + " |")
    rel = t["reliability"]
    if "interruptions_per_day" in rel:
        lines.append(f"| Reliability | {rel['interruptions_per_day']:.1f} interruptions/day, "
                     f"{rel['recovery']} checkpoints every {rel['checkpoint_interval_s']:,.0f} s, "
                     f"restart {rel['restart_s']:,.0f} s, {d['spare_nodes']:,} hot spares |")
    if "placement" in summary:
        pl, est = summary["placement"], summary["design_estimate"]["cost"]["capex_usd"]
        lines.append(f"| Placement | {pl['racks_total']:,} racks in {len(pl['halls_used'])} "
                     f"halls, longest link {pl['max_link_m']:,.0f} m, capex with placed cabling "
                     f"${c['capex_usd'] / 1e9:.3f}B (design estimate ${est / 1e9:.3f}B) |")
    placed = "design_estimate" in summary
    lines += _media_table("Media (as placed, longest routed length)" if placed else "Media",
                          d["media"])
    lines += ["", "## Limits" + (" (on the placed design)" if placed else ""), "",
              "| limit | value | limit | binding | why |", "|---|---|---|---|---|"]
    lines += [f"| {table_cell(b['name'])} | {b['value']:,.3f} | {b['limit']:,.3f} | "
              f"{b['binding']} | {table_cell(b.get('note', ''))} |" for b in summary["binding"]]
    if placed:
        est = summary["design_estimate"]
        lines += ["", "## Design-stage estimate (before placement)", "",
                  "The design MILP's estimate, kept for comparison; every figure above is the "
                  "placed, re-checked design.", "",
                  f"- capex ${est['cost']['capex_usd'] / 1e9:.3f}B, critical IT "
                  f"{est['power']['it_mw']:.1f} MW, effective "
                  f"{est['throughput']['effective_tokens_per_s']:,.0f} tokens/s"]
        lines += _media_table("Media (design-stage estimate)", est.get("media", []))
    return "\n".join(lines) + "\n"


def table_cell(text: str) -> str:
    """``text`` as one Markdown table cell: a '|' escaped, so it cannot split the row."""
    return text.replace("|", "\\|")


def pods_text(design: dict[str, Any]) -> str:
    """How a design's pods sit on the site and are joined, for the summaries: e.g.
    " (one per building, meshed)"."""
    if not design.get("pods_in_buildings"):
        return ""
    per = "hall" if design.get("pods_in_halls") else "building"
    return f" (one per {per}{', meshed' if design.get('pod_join') == 'mesh' else ''})"


def _media_table(title: str, media: list[dict[str, Any]]) -> list[str]:
    return ["", f"## {title}", "", "| link class | medium | length m | links |",
            "|---|---|---|---|"] + [
        f"| {m['link_class']} | {m['medium']} | {m['length_m']:g} | {m['links']:,} |"
        for m in media]


def write_solve_outputs(result, out_dir: Path) -> list[Path]:
    """design.json (the --json document), bom.csv and summary.md of a solve
    (``solver.api.SolveResult``); with a placement also placement.csv, cables.csv and
    floorplan.png, bom.xlsx and report.html (which embeds the set's floor plan and the
    analysis pictures already in ``out_dir``); one set (``output_set``)."""
    summary = result.to_dict()
    with output_set(out_dir, replaces=SOLVE_FILES) as stage:
        with beside(lambda: write_bom_xlsx(result, stage)):  # the longest: started first
            (stage / "design.json").write_text(json.dumps(summary, indent=2) + "\n",
                                               encoding="utf-8")
            pd.DataFrame(summary["bom"]).to_csv(stage / "bom.csv", index=False)
            (stage / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
            stacks = None
            if result.placement is not None and result.placement.status.has_solution:
                _write_placement_tables(result.placement, stage)
                # matplotlib imported once, here (while bom.xlsx is written), and
                # inherited: the floor plan is drawn in a third process while this one
                # draws report.html's stacks, and the two cores take the three
                import_pyplot()
                with beside(lambda: floorplan_png(result.placement, stage / "floorplan.png")):
                    stacks = stacks_uri(summary)
            write_report_html(result, stage, pictures=out_dir, stacks=stacks)
        names = sorted(p.name for p in stage.iterdir())
    return [out_dir / name for name in names]


@contextlib.contextmanager
def beside(write: Callable[[], object]) -> Iterator[None]:
    """Run ``write`` in a forked process while the block runs, so a second core takes it
    (bom.xlsx: ~0.8 s of openpyxl beside the floor plan and report.html); at the block's
    end wait for it and raise its error (an OSError as an OSError: an output-location
    problem). When the block raises, the process is ended first (solver.forked)."""
    with forked(write) as wait:
        yield
        try:
            wait()
        except OSError as exc:
            raise OSError(f"writing in a second process: {exc}") from exc
        except Exception as exc:
            raise RuntimeError(f"writing in a second process: {type(exc).__name__}: "
                               f"{exc}") from exc


def placement_csv(racks: list[Rack]) -> str:
    """placement.csv: rack, building, hall, row, position, role, contents, power_kw."""
    lines = ["rack,building,hall,row,position,role,contents,power_kw"]
    for r in sorted(racks, key=lambda r: (r.position.building, r.position.hall,
                                          r.position.row, r.position.slot)):
        p = r.position
        lines.append(f"{r.id},{p.building},{p.hall},{p.row},{p.slot},{r.role},"
                     f"\"{r.contents}\",{r.power_w / 1e3:.3f}")
    return "\n".join(lines) + "\n"


def cables_csv(runs: list[CableRun]) -> str:
    """cables.csv: link_class, medium, length_m (rounded up to 0.1 m), count."""
    lines = ["link_class,medium,length_m,count"]
    lines += [f"{c['link_class']},{c['medium']},{c['length_m']:.1f},{c['count']}"
              for c in cables_table(runs)]
    return "\n".join(lines) + "\n"


def _write_placement_tables(result: PlacementResult, stage: Path) -> None:
    (stage / "placement.csv").write_text(placement_csv(result.racks), encoding="utf-8")
    (stage / "cables.csv").write_text(cables_csv(result.runs), encoding="utf-8")


def _write_placement(result: PlacementResult, stage: Path) -> None:
    _write_placement_tables(result, stage)
    floorplan_png(result, stage / "floorplan.png")


def check_place_location(folder: Path) -> None:
    """`folder` can take a placement's set (:func:`check_out_location`) and holds no
    solve's set: placement.csv, cables.csv and floorplan.png written beside another
    solve's design.json, BOM and report would mix two sets (exit 3 naming --out)."""
    check_out_location(folder)
    solve_only = sorted(n for n in set(SOLVE_FILES) - set(PLACEMENT_FILES)
                        if (folder / n).exists())
    if solve_only:
        raise InvalidInstance([
            f"{folder}: holds a solve's output set ({', '.join(solve_only)}); `place` "
            f"writes {', '.join(PLACEMENT_FILES)} only, and the folder would mix the two "
            f"sets: give another --out (or `solve` the instance to place it with its "
            f"design)"], "--out")


def write_placement_outputs(result: PlacementResult, out_dir) -> list[Path]:
    """placement.csv, cables.csv and floorplan.png into ``out_dir``, as one set
    (``out_dir`` checked by :func:`check_place_location` before any work)."""
    out_dir = Path(out_dir)
    with output_set(out_dir, replaces=PLACEMENT_FILES) as stage:
        _write_placement(result, stage)
    return [out_dir / name for name in PLACEMENT_FILES]
