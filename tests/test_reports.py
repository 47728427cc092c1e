"""report.html in a real headless browser, bom.xlsx totals against design.json, the floor
plan, and every output file written from the final (placed) result."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from bom_xlsx_reference import bom_workbook as reference_workbook
from openpyxl import load_workbook

from solver import load_instance, solve
from solver.bom_xlsx import bom_workbook, write_bom_xlsx
from solver.floorplan import floorplan_png
from solver.loading import INSTANCES_DIR
from solver.outputs import summary_markdown, write_solve_outputs
from solver.report_html import stack_parts, write_report_html

# --- a small evaluator for the workbook's formulas ------------------------------------------

_REF = re.compile(r"(?:(\w+)!)?\$?([A-Z]+)\$?(\d+)")
_RANGE = re.compile(r"(?:(\w+)!)?([A-Z]+)(\d+):([A-Z]+)(\d+)")


def cell_value(book, sheet: str, ref: str) -> float:
    """A cell's value; a formula is evaluated (SUMPRODUCT, SUMIF with a text criterion,
    SUM, + - * / and cell refs)."""
    value = book[sheet][ref].value
    if not (isinstance(value, str) and value.startswith("=")):
        return value
    expr = value[1:]

    def column(sheet_name, col, lo, hi):
        return [cell_value(book, sheet_name or sheet, f"{col}{r}")
                for r in range(int(lo), int(hi) + 1)]

    def sumproduct(m: re.Match) -> str:
        a, b = (_RANGE.fullmatch(x.strip()) for x in m.group(1).split(","))
        xs = column(a.group(1), a.group(2), a.group(3), a.group(5))
        ys = column(b.group(1), b.group(2), b.group(3), b.group(5))
        return repr(sum(x * y for x, y in zip(xs, ys, strict=True)))

    def sum_range(m: re.Match) -> str:
        a = _RANGE.fullmatch(m.group(1).strip())
        return repr(sum(column(a.group(1), a.group(2), a.group(3), a.group(5))))

    def sumif(m: re.Match) -> str:
        where, text, what = (x.strip() for x in m.group(1).split(","))
        a, b = _RANGE.fullmatch(where), _RANGE.fullmatch(what)
        keys = column(a.group(1), a.group(2), a.group(3), a.group(5))
        values = column(b.group(1), b.group(2), b.group(3), b.group(5))
        return repr(sum(v for k, v in zip(keys, values, strict=True) if k == text.strip('"')))

    expr = re.sub(r"SUMIF\(([^)]*)\)", sumif, expr)
    expr = re.sub(r"SUMPRODUCT\(([^)]*)\)", sumproduct, expr)
    expr = re.sub(r"SUM\(([^)]*)\)", sum_range, expr)
    expr = _REF.sub(lambda m: repr(cell_value(book, m.group(1) or sheet,
                                              f"{m.group(2)}{m.group(3)}")), expr)
    assert re.fullmatch(r"[0-9eE.+\-*/() ]+", expr), expr
    return eval(expr)  # noqa: S307 - digits and operators only (asserted above)


def totals(book) -> dict[str, float]:
    """The BOM sheet's labelled totals (column A label, column B formula), evaluated."""
    bom = book["BOM"]
    out = {}
    for row in range(2, bom.max_row + 1):
        label, formula = bom[f"A{row}"].value, bom[f"B{row}"].value
        if isinstance(formula, str) and formula.startswith("="):
            out[label] = cell_value(book, "BOM", f"B{row}")
    return out


def assert_workbook_matches(path: Path, doc: dict) -> dict[str, float]:
    """Formula totals of bom.xlsx equal design.json to the dollar and the watt."""
    book = load_workbook(path)
    t = totals(book)
    c, p = doc["cost"], doc["power"]
    assert t["equipment capex USD"] == pytest.approx(c["equipment_capex_usd"], abs=1.0)
    assert t["capex USD"] == pytest.approx(c["capex_usd"], abs=1.0)
    assert t["facility build USD"] == pytest.approx(c["facility_capex_usd"], abs=1.0)
    assert t["TCO USD"] == pytest.approx(c["tco_usd"], abs=1.0)
    assert t["annual opex USD"] == pytest.approx(c["annual_opex_usd"], abs=1.0)
    assert t["critical IT power W"] == pytest.approx(p["it_mw"] * 1e6, abs=1.0)
    assert t["facility power W"] == pytest.approx(p["facility_mw"] * 1e6, abs=1.0)
    assert t["equipment power W"] == pytest.approx(sum(x["power_w"] for x in doc["bom"]),
                                                   abs=1.0)
    built = doc["design"]["facility"]  # part by part (the per-MW shortcut by its shares)
    for part in ("electrical", "cooling", "shell"):
        assert t[f"facility {part} USD"] == pytest.approx(built[f"{part}_usd"], abs=1.0)
    # each line's cost is a live formula over its own quantity and price
    bom = book["BOM"]
    for row, line in enumerate(doc["bom"], start=2):
        assert bom[f"A{row}"].value == line["item"]
        assert bom[f"E{row}"].value == f"=C{row}*D{row}"
        assert cell_value(book, "BOM", f"E{row}") == pytest.approx(line["cost_usd"], abs=0.01)
    return t


def test_a_price_change_moves_the_totals(tmp_path):
    """The totals are formulas: doubling a unit price moves capex by quantity x price."""
    r = solve(load_instance(INSTANCES_DIR / "tiny" / "two-buildings.toml"), place=False)
    path = write_bom_xlsx(r, tmp_path)
    book = load_workbook(path)
    before = totals(book)
    qty, price = book["BOM"]["C2"].value, book["BOM"]["D2"].value
    book["BOM"]["D2"].value = 2 * price
    after = totals(book)
    assert after["equipment capex USD"] - before["equipment capex USD"] == pytest.approx(
        qty * price)
    assert after["capex USD"] - before["capex USD"] == pytest.approx(qty * price)
    assert after["critical IT power W"] == pytest.approx(before["critical IT power W"])


def workbook_content(path: Path) -> dict:
    """What a reader of a workbook sees: sheet names; per sheet the frozen panes, the
    column widths and every cell holding a value with its value (a formula's text),
    number format and bold flag."""
    book = load_workbook(path)
    out: dict = {"sheets": book.sheetnames}
    for sheet in book.worksheets:
        out[sheet.title] = (sheet.freeze_panes,
                            {k: d.width for k, d in sheet.column_dimensions.items()})
        for row in sheet.iter_rows():
            for c in row:
                if c.value is not None:
                    out[sheet.title, c.coordinate] = (c.value, c.number_format, c.font.bold)
    return out


@pytest.mark.parametrize("instance, place", [("space-bound", True), ("two-buildings", False)])
def test_streamed_workbook_equals_the_cell_by_cell_one(instance, place, tmp_path):
    """bom.xlsx written in openpyxl's write-only mode holds what the normal-mode workbook
    (tests/bom_xlsx_reference.py, the code before) held: the same sheets, widths, panes
    and cells (values, formulas, number formats, bold), placed (cable schedule, halls) and
    not. (The reference also bolded the empty cells D1:E1 of Facility, row 1 up to the
    widest row, and gave an unplaced solve's cable schedule no column widths: those cells
    hold nothing and the widths are now the placed schedule's, checked below.)"""
    r = solve(load_instance(INSTANCES_DIR / "tiny" / f"{instance}.toml"), place=place)
    doc = r.to_dict()
    bom_workbook(doc, r.inputs, r.placement).save(tmp_path / "streamed.xlsx")
    reference_workbook(doc, r.inputs, r.placement).save(tmp_path / "reference.xlsx")
    streamed = workbook_content(tmp_path / "streamed.xlsx")
    reference = workbook_content(tmp_path / "reference.xlsx")
    panes, widths = streamed["Cable schedule"]
    assert widths == {"A": 14, "B": 22, "C": 16, "D": 22, "E": 12, "F": 12, "G": 10, "H": 8}
    if not place:
        assert reference["Cable schedule"] == (panes, {})
        reference["Cable schedule"] = (panes, widths)
    assert streamed == reference
    assert sum(1 for k in reference if k[:1] == ("Cable schedule",)) > (100 if place else 1)
    assert sum(1 for v in reference.values() if isinstance(v, tuple) and v[2:] == (True,)) > 30


def test_report_embeds_the_analysis_pictures(tmp_path):
    """A tornado picture under the results folder is embedded (base64) with its path; a
    design-stage solve says it is not placed and shows no estimate section."""
    r = solve(load_instance(INSTANCES_DIR / "tiny" / "two-buildings.toml"), place=False)
    picture = tmp_path / "sweeps" / "tornado-20pct" / "tornado.png"
    picture.parent.mkdir(parents=True)
    png = (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01"
           b"\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f"
           b"\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
    picture.write_bytes(png)
    html = write_report_html(r, tmp_path).read_text()
    assert "sweeps/tornado-20pct/tornado.png" in html
    assert base64.b64encode(png).decode() in html
    assert "design stage (not placed)" in html and 'id="estimate"' not in html


def shipped_instances() -> list[Path]:
    """Every shipped instance with one design (the infeasible example has none; a phased
    build-out writes a BOM per period, bom_by_period.csv, tested in test_phased.py)."""
    return sorted(p for p in [*INSTANCES_DIR.glob("*.toml"), *INSTANCES_DIR.glob("tiny/*.toml")]
                  if "infeasible" not in p.name and "phased" not in p.name)


@pytest.mark.slow
@pytest.mark.parametrize("instance", shipped_instances(), ids=lambda p: p.stem)
def test_bom_xlsx_agrees_with_design_json(instance, tmp_path):
    """Every shipped instance, design stage (--no-place; the placed default is below)."""
    r = solve(load_instance(instance), place=False)
    write_solve_outputs(r, tmp_path)
    doc = json.loads((tmp_path / "design.json").read_text())
    assert_workbook_matches(tmp_path / "bom.xlsx", doc)
    assert (tmp_path / "report.html").is_file()
    if doc["design"]["support"] is not None:  # itemised: the lines are in both outputs
        html = (tmp_path / "report.html").read_text()
        rows = load_workbook(tmp_path / "bom.xlsx")["BOM"]
        in_xlsx = {rows[f"B{r}"].value for r in range(2, len(doc["bom"]) + 2)}
        for category in ("frontend", "storage", "management", "spares"):
            assert category in in_xlsx and category in {x["category"] for x in doc["bom"]}
            assert f">{category}<" in html, category
        assert 'id="facility"' in html and 'id="unit-cost"' in html


def test_placed_outputs_agree(tmp_path):
    """A placed solve: bom.xlsx and report.html from the placed result; the cable schedule
    holds every placed link."""
    r = solve(load_instance(INSTANCES_DIR / "tiny" / "space-bound.toml"))
    assert r.placement is not None and r.placement.racks
    write_solve_outputs(r, tmp_path)
    doc = json.loads((tmp_path / "design.json").read_text())
    assert_workbook_matches(tmp_path / "bom.xlsx", doc)
    book = load_workbook(tmp_path / "bom.xlsx")
    cables = book["Cable schedule"]
    total_row = next(r for r in range(2, cables.max_row + 1)
                     if cables[f"A{r}"].value == "total links")
    assert cell_value(book, "Cable schedule", f"H{total_row}") == sum(
        c["count"] for c in doc["placement"]["cables"])
    assert (tmp_path / "floorplan.png").stat().st_size > 10_000
    # drawn in a forked process beside report.html's stacks: the same picture as here
    floorplan_png(r.placement, tmp_path / "here.png")
    assert (tmp_path / "floorplan.png").read_bytes() == (tmp_path / "here.png").read_bytes()


def test_default_solve_outputs_agree(default_solve_run):
    """The default instance with placement: workbook totals, placed media and limits."""
    folder, doc = default_solve_run
    assert_workbook_matches(folder / "bom.xlsx", doc)
    # one source of truth: media and per-building limits are the placed ones
    assert {m["medium"] for m in doc["design"]["media"]} == {
        m["medium"] for m in doc["placement"]["bom_media"]}
    summary_md = (folder / "summary.md").read_text()
    assert "## Design-stage estimate (before placement)" in summary_md
    # the candidate ladders skip the goodput band; the chosen design's re-evaluation not
    low, high = doc["throughput"]["reliability"]["goodput_band"]
    assert low < doc["throughput"]["goodput"] < high
    f = doc["power"]["it_mw"] / (sum(x["power_w"] for x in doc["bom"]) / 1e6)
    placed_mw = {}
    for h in doc["placement"]["halls"]:
        b = h["hall"].split("/")[0]
        placed_mw[b] = placed_mw.get(b, 0.0) + f * h["power_kw"] / 1e3
    for row in doc["binding"]:
        m = re.fullmatch(r"site\.buildings\[(.+)\]\.it_power_mw", row["name"])
        if m:
            assert row["value"] == pytest.approx(placed_mw[m.group(1)], rel=1e-9)
            assert row["basis"] == "placed"


def test_summary_md_limits_table_keeps_one_row_per_limit(default_solve_json):
    """summary.md's limits table: a row of five cells per limit, its "why" the note even
    when a note holds a '|' (escaped, so the row does not split)."""
    doc = json.loads(json.dumps(default_solve_json))
    doc["binding"][0]["note"] = "a | b"
    text = summary_markdown(doc)
    rows = [line for line in text.splitlines()
            if any(line.startswith(f"| {b['name']} |") for b in doc["binding"])]
    assert len(rows) == len(doc["binding"])
    for row, limit in zip(rows, doc["binding"], strict=True):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == 5
        assert cells[4].replace("\\|", "|") == limit.get("note", "")


def test_stacks_add_up_to_the_summary(default_solve_json):
    capex, watts = stack_parts(default_solve_json)
    assert sum(v for _, v in capex) == pytest.approx(default_solve_json["cost"]["capex_usd"])
    assert sum(v for _, v in watts) == pytest.approx(default_solve_json["power"]["it_mw"] * 1e6)


def test_runner_ups_lose(default_solve_json):
    """Every runner-up is another technology choice and loses (or ties) on the objective."""
    ups = default_solve_json["runner_ups"]
    assert ups
    d = default_solve_json["design"]
    chosen = (d["switch"], d["rail_optimized"], d["recovery"], d["pods"], d["tiers"])
    for r in ups:
        assert (r["switch"], r["rail_optimized"], r["recovery"], r["pods"], r["tiers"]) != chosen
        assert r["loss"] >= 0
    assert [r["loss"] for r in ups] == sorted(r["loss"] for r in ups)


# --- report.html in a real headless browser ------------------------------------------------

def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install -y chromium); CI installs it")
    return path


def browse(html: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr", "--v=0", *extra, html.as_uri()]
    return subprocess.run(args, capture_output=True, text=True, timeout=180)


def test_report_renders_in_chromium(default_solve_run, tmp_path):
    folder, doc = default_solve_run
    html = folder / "report.html"
    text = html.read_text()
    assert not re.search(r"""(src|href)=["']https?:""", text), "the report loads no network"
    dom = browse(html, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    errors = [line for line in dom.stderr.splitlines()
              if "CONSOLE" in line or "Uncaught" in line]
    assert not errors, errors
    page = dom.stdout
    assert 'data-ready="1"' in page, "the page's script did not run to the end"
    assert f"{doc['throughput']['effective_tokens_per_s']:,.0f}" in page
    assert f"${doc['cost']['capex_usd'] / 1e9:,.3f}B" in page
    assert f"{doc['power']['it_mw']:,.1f} MW" in page
    assert page.count("data:image/png;base64,") >= 1  # the floor plan, embedded
    shot = tmp_path / "report.png"
    out = browse(html, tmp_path, "--window-size=1280,2400", f"--screenshot={shot}")
    assert out.returncode == 0, out.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000


def test_report_command_rebuilds_from_design_json(cli, default_solve_run, tmp_path):
    folder, doc = default_solve_run
    out = cli("report", folder / "design.json", "--out", tmp_path, "--json")
    assert out.exit_code == 0, out.output
    text = (tmp_path / "report.html").read_text()
    assert f"{doc['throughput']['effective_tokens_per_s']:,.0f}" in text
    assert 'alt="floor plan"' in text  # the picture beside design.json, embedded
    bad = tmp_path / "bad.json"
    bad.write_text('{"status": "optimal"}')
    out = cli("report", bad)
    assert out.exit_code == 3 and "'design' is a required property" in out.output


@pytest.mark.parametrize("damage, field", [
    (lambda d: d.update(bom="x"), "bom: 'x' is not of type 'array'"),
    (lambda d: d.update(cost=None), "cost: None is not of type 'object'"),
    (lambda d: d["design"].update(media=None), "design.media: None is not of type"),
    (lambda d: d.update(power={}), "power: 'it_mw' is a required property"),
    (lambda d: d["design"].update(gpus="many"), "design.gpus: 'many' is not of type"),
    (lambda d: d["design"].update(gpus=-5), "design.gpus: Input should be greater"),
    (lambda d: d["design"].update(tiers=9), "design.tiers: Input should be less"),
    (lambda d: d.update(status="infeasible"), "status: 'infeasible': not a solved design"),
])
def test_report_refuses_a_damaged_design_json_naming_the_field(
        cli, default_solve_run, tmp_path, damage, field):
    """Was: a damaged section ended in an internal error (exit 1) beside an empty output
    folder, and nonsense counts were reported as they were."""
    folder, doc = default_solve_run
    damaged = json.loads((folder / "design.json").read_text())
    damage(damaged)
    path = tmp_path / "design.json"
    path.write_text(json.dumps(damaged))
    out = cli("report", path, "--out", tmp_path / "out")
    assert out.exit_code == 3, out.output
    assert field in out.output
    assert not (tmp_path / "out").exists()


def test_a_writer_in_a_second_process_reports_its_work_and_its_failure(tmp_path):
    """solver.outputs.beside: the file is there after the block, an OSError comes back as
    an OSError (an output-location problem, exit 3), an interrupted block ends the
    process at once."""
    import time

    from solver.outputs import beside

    written = tmp_path / "x.txt"
    with beside(lambda: written.write_text("ok")):
        pass
    assert written.read_text() == "ok"

    def full() -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"), beside(full):
        pass
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt), beside(lambda: time.sleep(60)):
        raise KeyboardInterrupt
    assert time.perf_counter() - start < 10



def test_a_second_process_ends_quietly_on_sigterm():
    """solver.forked: the forked process does not inherit the CLI's SIGTERM handler (which
    raises KeyboardInterrupt: a traceback on stderr when the parent ends a process that
    has just sent its result)."""
    import signal

    from solver.forked import forked

    def raising(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, raising)
    try:
        with forked(lambda: signal.getsignal(signal.SIGTERM) == signal.SIG_DFL) as other:
            assert other() is True
    finally:
        signal.signal(signal.SIGTERM, before)

def test_cost_stack_sums_to_the_tco():
    """The README's cost-stack picture (solver.cost_stack): BOM categories, the facility
    by part and the electricity of the horizon add up to the TCO."""
    from solver.cost_stack import cost_stack

    doc = solve(load_instance(INSTANCES_DIR / "llama3-16k.toml"), place=False).summary
    terms = dict(cost_stack(doc))
    assert sum(terms.values()) == pytest.approx(doc["cost"]["tco_usd"], rel=1e-12)
    assert {"frontend", "storage", "management", "spares"} <= set(terms)
    assert [t for t in terms if t.startswith("facility")] == [
        f"facility electrical ({doc['design']['facility']['redundancy']})",
        f"facility cooling ({doc['design']['facility']['cooling']})",
        "facility shell and support space"]
