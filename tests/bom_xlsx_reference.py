"""bom.xlsx as solver.bom_xlsx built it before it was streamed (openpyxl normal mode,
one cell object per cell; main db34a69): the oracle that tests/test_reports.py compares
the write-only workbook with, cell by cell.
"""

from __future__ import annotations

from typing import Any

from models.facility import RACK_CATEGORIES, SHORTCUT
from models.power_cost import HOURS_PER_YEAR
from solver.bom_xlsx import (
    BOM_HEADER,
    _position_text,
    _source_text,
    price_source,
    price_sources,
    used_parts,
)


def bom_workbook(summary: dict[str, Any], inputs, placement=None):
    """The workbook (openpyxl) of a solved ``summary``; ``inputs`` (models.design.inputs
    .Inputs) gives the facility figures and the sources; ``placement`` (PlacementResult)
    the cable schedule."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    book = Workbook()
    bom = book.active
    bom.title = "BOM"
    bold = Font(bold=True)
    sources = price_sources(inputs)
    bom.append(BOM_HEADER)
    lines = summary["bom"]
    for i, line in enumerate(lines, start=2):
        unit_w = line["power_w"] / line["quantity"] if line["quantity"] else 0.0
        bom.append([line["item"], line["category"], line["quantity"], line["unit_cost_usd"],
                    f"=C{i}*D{i}", unit_w, f"=C{i}*F{i}", price_source(line, sources)])
    last = len(lines) + 1
    r = last + 2
    totals = [
        ("equipment capex USD", f"=SUMPRODUCT(C2:C{last},D2:D{last})"),
        ("equipment power W", f"=SUMPRODUCT(C2:C{last},F2:F{last})"),
        ("critical IT power W", f"=B{r + 1}*(1+Facility!B2)"),
        ("facility build USD", f"=B{r + 8}+B{r + 9}+B{r + 10}"),
        ("capex USD", f"=B{r}+B{r + 3}"),
        ("facility power W", f"=B{r + 2}*Facility!B4"),
        ("annual opex USD", f"=B{r + 2}*Facility!B4*{HOURS_PER_YEAR:g}/1000*Facility!B5"),
        ("TCO USD", f"=B{r + 4}+Facility!B6*B{r + 6}"),
        ("facility electrical USD", f"=B{r + 2}/1000000*Facility!B3"),
        ("facility cooling USD", f"=B{r + 2}/1000000*Facility!B7"),
        ("facility shell USD", f"=B{r + 2}/1000000*Facility!B9+(" + "+".join(
            f'SUMIF(B2:B{last},"{c}",C2:C{last})' for c in RACK_CATEGORIES)
         + ")*Facility!B8"),
    ]
    for k, (label, formula) in enumerate(totals):
        bom.cell(r + k, 1, label).font = bold
        bom.cell(r + k, 2, formula).number_format = "#,##0"
    for col in ("D", "E", "G"):
        for row in range(2, last + 1):
            bom[f"{col}{row}"].number_format = "#,##0"
    _widths(bom, (44, 12, 12, 14, 16, 12, 14, 60))
    _facility_sheet(book.create_sheet("Facility"), summary, inputs, bold)
    _cable_sheet(book.create_sheet("Cable schedule"), placement, bold)
    _spares_sheet(book.create_sheet("Spares"), summary, bold)
    _assumptions_sheet(book.create_sheet("Assumptions"), summary, inputs, bold)
    for sheet in book.worksheets:
        for cell in sheet[1]:
            cell.font = bold
        sheet.freeze_panes = "A2"
    return book


def _widths(sheet, widths) -> None:
    for i, w in enumerate(widths):
        sheet.column_dimensions[chr(ord("A") + i)].width = w


def _facility_sheet(sheet, summary: dict[str, Any], inputs, bold) -> None:
    """B2:B9: the figures the BOM totals use (FACILITY_ROWS) for the design's redundancy
    level and cooling technology (in 'per-mw' mode the $/MW build figure times each
    part's share, and its PUE); then per-hall placed power."""
    fac = inputs.facility
    built = summary["design"].get("facility") or {}
    r, t = built.get("redundancy", SHORTCUT), built.get("cooling", SHORTCUT)
    sheet.append(("figure", "value", "source"))
    sheet.append(("non_server_it_fraction", fac.non_server_it_fraction,
                  _source_text(fac, "non_server_it_fraction")))
    shares = " / ".join(_source_text(fac, f) for f in ("build_usd_per_mw", "build_shares"))
    if t == SHORTCUT:
        sheet.append(("electrical USD per MW ($/MW shortcut x electrical share)",
                      fac.build_usd_per_mw * fac.build_shares["electrical"], shares))
        sheet.append(("pue", fac.pue, _source_text(fac, "pue")))
    else:
        sheet.append((f"electrical USD per MW ({r})", fac.electrical_usd_per_mw[r],
                      _source_text(fac, "electrical_usd_per_mw")))
        sheet.append((f"pue ({r}, {t}): 1 + losses + cooling + other", built["pue"],
                      " / ".join(_source_text(fac, f) for f in (
                          "electrical_loss_fraction", "cooling_overhead_fraction",
                          "other_overhead_fraction"))))
    sheet.append(("electricity_usd_per_kwh", fac.electricity_usd_per_kwh,
                  _source_text(fac, "electricity_usd_per_kwh")))
    sheet.append(("years", inputs.years, _source_text(fac, "years")))
    if t == SHORTCUT:
        sheet.append(("cooling USD per MW ($/MW shortcut x cooling share)",
                      fac.build_usd_per_mw * fac.build_shares["cooling"], shares))
        sheet.append(("white space USD per rack (in the $/MW figure)", 0.0, ""))
        sheet.append(("shell USD per MW ($/MW shortcut x shell share)",
                      fac.build_usd_per_mw * fac.build_shares["shell"], shares))
    else:
        sheet.append((f"cooling USD per MW ({t})", fac.cooling_usd_per_mw[t],
                      _source_text(fac, "cooling_usd_per_mw")))
        sheet.append(("white space USD per rack: $/m2 x m2/rack",
                      fac.white_space_usd_per_m2 * fac.white_space_m2_per_rack,
                      " / ".join(_source_text(fac, f) for f in (
                          "white_space_usd_per_m2", "white_space_m2_per_rack"))))
        sheet.append(("shell USD per MW (site, core and plant space)", fac.shell_usd_per_mw,
                      _source_text(fac, "shell_usd_per_mw")))
    halls = summary.get("placement", {}).get("halls", [])
    if halls:
        sheet.append(())
        sheet.append(("hall", "power cap kW", "placed rack power kW", "rows",
                      "positions per row"))
        sheet.cell(sheet.max_row, 1).font = bold
        for h in halls:
            sheet.append((h["hall"], h["power_cap_kw"], h["power_kw"], h["rows"],
                          h["positions_per_row"]))
    _widths(sheet, (28, 16, 80, 8, 18))


def _cable_sheet(sheet, placement, bold) -> None:
    """Every cable bundle of the placed layout (a position is building/hall Rrow Pslot),
    by tier, longest first."""
    sheet.append(("from rack", "from position", "to rack", "to position", "link class",
                  "medium", "length m", "links"))
    if placement is None or not placement.runs:
        sheet.append(("no placement: run clusterplan solve without --no-place",))
        return
    where = {r.id: _position_text(r.position) for r in placement.racks}
    for run in sorted(placement.runs, key=lambda c: (c.tier, -c.length_m, c.a, c.b)):
        sheet.append((run.a, where[run.a], run.b, where[run.b], run.link_class, run.medium,
                      run.length_m, run.count))
    last = sheet.max_row
    sheet.append(())
    sheet.append(("total links", None, None, None, None, None, None, f"=SUM(H2:H{last})"))
    sheet.cell(sheet.max_row, 1).font = bold
    _widths(sheet, (14, 22, 16, 22, 12, 12, 10, 8))


def _spares_sheet(sheet, summary: dict[str, Any], bold) -> None:
    d = summary["design"]
    rel = summary["throughput"].get("reliability", {})
    sheet.append(("spare", "quantity", "note"))
    sheet.append((f"{d['gpu']} hot spare nodes", d["spare_nodes"],
                  "included in the BOM's node line (training nodes + spares)"))
    sheet.append(("GPUs in spare nodes",
                  d["spare_nodes"] * (d["gpus"] // d["nodes"] if d["nodes"] else 0), ""))
    if "availability" in rel:
        sheet.append(("P(enough healthy nodes)", rel["availability"],
                      "reliability model: spares cover failed nodes over the repair time"))
    _widths(sheet, (34, 12, 70))


def _assumptions_sheet(sheet, summary: dict[str, Any], inputs, bold) -> None:
    """Every numeric catalog figure of the parts the design uses, with its source."""
    sheet.append(("part", "figure", "value", "kind", "by", "source", "note"))
    for part in used_parts(summary, inputs):
        for name in part.numeric_fields():
            src = part.sources.get(name)
            value = getattr(part, name)
            sheet.append((part.id, name, value if isinstance(value, int | float) else str(value),
                          getattr(src, "kind", ""), getattr(src, "by", "") or "",
                          getattr(src, "url", "") or "", getattr(src, "note", "") or ""))
    _widths(sheet, (22, 30, 14, 12, 18, 60, 80))
