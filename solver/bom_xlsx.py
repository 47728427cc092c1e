"""bom.xlsx: the procurement workbook of a solve, totals as live spreadsheet formulas.

Sheets: BOM (every line with its price source; cost, power, capex, opex and TCO as
formulas over the lines and the Facility sheet, so a buyer who changes a unit price sees
the totals move), Cable schedule (every cable bundle from rack/position to
rack/position with link class, medium and routed length; placed solves only), Spares,
Facility (the facility figures the totals use, per-hall placed power) and Assumptions
(every catalog figure of the parts used, with its source).

The formulas are models.power_cost's, written out in the sheet:
  equipment capex = SUMPRODUCT(quantity, unit price);  equipment W = SUMPRODUCT(quantity,
  unit W);  IT W = equipment W x (1 + non-server IT share);
  facility electrical = IT MW x electrical $/MW (the redundancy level's);  facility
  cooling = IT MW x cooling $/MW (the technology's);  facility shell = IT MW x shell $/MW
  (site, core and plant space) + racks (categories rack and rack-support) x white space $
  per rack ($/m2 x m2 per rack); in the 'per-mw' shortcut each part's $/MW is the build
  figure times its share and the white space per rack is 0;
  facility build = electrical + cooling + shell;
  capex = equipment + facility build;  opex/yr = IT kW x PUE x 8760 h x $/kWh (the PUE
  the design's facility gives);  TCO = capex + years x opex.
Generic over BOM rows and categories: any line the summary's ``bom`` lists is a row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from models.facility import RACK_CATEGORIES, SHORTCUT
from models.power_cost import HOURS_PER_YEAR

FACILITY_ROWS = ("non_server_it_fraction", "electrical USD per MW", "pue",
                 "electricity_usd_per_kwh", "years", "cooling USD per MW",
                 "white space USD per rack", "shell USD per MW")
"""Facility figures the BOM sheet's totals refer to (Facility!B2:B9, in this order)."""
BOM_HEADER = ("item", "category", "quantity", "unit price USD", "cost USD", "unit power W",
              "power W", "price source")


def write_bom_xlsx(result, folder: str | Path) -> Path:
    """Write ``folder``/bom.xlsx for a solve (``solver.api.SolveResult``: its ``to_dict()``
    document, resolved inputs for the sources and, when placed, the cable runs)."""
    from solver.outputs import write_file_atomically

    path = Path(folder) / "bom.xlsx"
    book = bom_workbook(result.to_dict(), result.inputs, result.placement)
    return write_file_atomically(path, lambda tmp: book.save(tmp))


def bom_workbook(summary: dict[str, Any], inputs, placement=None):
    """The workbook (openpyxl, write-only: rows are streamed as they are appended; about
    half the CPU of keeping a cell object per cell on the default's ~11,600-row cable
    schedule) of a solved ``summary``; ``inputs`` (models.design.inputs.Inputs) gives the
    facility figures and the sources; ``placement`` (PlacementResult) the cable schedule.
    Every sheet's header row is bold and frozen; a sheet's widths and panes are set before
    its first row (a write-only sheet writes them with it)."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    book = Workbook(write_only=True)
    bold_font = Font(bold=True)

    def sheet(title: str, widths, header):
        new = book.create_sheet(title)
        for i, w in enumerate(widths):
            new.column_dimensions[chr(ord("A") + i)].width = w
        new.freeze_panes = "A2"
        new.append([bold(new, name) for name in header])
        return new

    def bold(in_sheet, value):
        cell = WriteOnlyCell(in_sheet, value)
        cell.font = bold_font
        return cell

    def number(in_sheet, value):
        cell = WriteOnlyCell(in_sheet, value)
        cell.number_format = "#,##0"
        return cell

    bom = sheet("BOM", (44, 12, 12, 14, 16, 12, 14, 60), BOM_HEADER)
    sources = price_sources(inputs)
    lines = summary["bom"]
    for i, line in enumerate(lines, start=2):
        unit_w = line["power_w"] / line["quantity"] if line["quantity"] else 0.0
        bom.append([line["item"], line["category"], line["quantity"],
                    number(bom, line["unit_cost_usd"]), number(bom, f"=C{i}*D{i}"), unit_w,
                    number(bom, f"=C{i}*F{i}"), price_source(line, sources)])
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
    bom.append(())
    for label, formula in totals:
        bom.append([bold(bom, label), number(bom, formula)])
    _facility_rows(sheet("Facility", (28, 16, 80, 8, 18), ("figure", "value", "source")),
                   summary, inputs, bold)
    _cable_rows(sheet("Cable schedule", (14, 22, 16, 22, 12, 12, 10, 8),
                      ("from rack", "from position", "to rack", "to position", "link class",
                       "medium", "length m", "links")), placement, bold)
    _spares_rows(sheet("Spares", (34, 12, 70), ("spare", "quantity", "note")), summary)
    _assumptions_rows(sheet("Assumptions", (22, 30, 14, 12, 18, 60, 80),
                            ("part", "figure", "value", "kind", "by", "source", "note")),
                      summary, inputs)
    return book


def _facility_rows(sheet, summary: dict[str, Any], inputs, bold) -> None:
    """B2:B9: the figures the BOM totals use (FACILITY_ROWS) for the design's redundancy
    level and cooling technology (in 'per-mw' mode the $/MW build figure times each
    part's share, and its PUE); then per-hall placed power."""
    fac = inputs.facility
    built = summary["design"].get("facility") or {}
    r, t = built.get("redundancy", SHORTCUT), built.get("cooling", SHORTCUT)
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
        sheet.append((bold(sheet, "hall"), "power cap kW", "placed rack power kW", "rows",
                      "positions per row"))
        for h in halls:
            sheet.append((h["hall"], h["power_cap_kw"], h["power_kw"], h["rows"],
                          h["positions_per_row"]))


def _cable_rows(sheet, placement, bold) -> None:
    """Every cable bundle of the placed layout (a position is building/hall Rrow Pslot),
    by tier, longest first."""
    if placement is None or not placement.runs:
        sheet.append(("no placement: run clusterplan solve without --no-place",))
        return
    where = {r.id: _position_text(r.position) for r in placement.racks}
    for run in sorted(placement.runs, key=lambda c: (c.tier, -c.length_m, c.a, c.b)):
        sheet.append((run.a, where[run.a], run.b, where[run.b], run.link_class, run.medium,
                      run.length_m, run.count))
    last = len(placement.runs) + 1
    sheet.append(())
    sheet.append((bold(sheet, "total links"), None, None, None, None, None, None,
                  f"=SUM(H2:H{last})"))


def _position_text(p) -> str:
    return f"{p.building}/{p.hall} R{p.row} P{p.slot}"


def _spares_rows(sheet, summary: dict[str, Any]) -> None:
    d = summary["design"]
    rel = summary["throughput"].get("reliability", {})
    sheet.append((f"{d['gpu']} hot spare nodes", d["spare_nodes"],
                  "included in the BOM's node line (training nodes + spares)"))
    sheet.append(("GPUs in spare nodes",
                  d["spare_nodes"] * (d["gpus"] // d["nodes"] if d["nodes"] else 0), ""))
    if "availability" in rel:
        sheet.append(("P(enough healthy nodes)", rel["availability"],
                      "reliability model: spares cover failed nodes over the repair time"))


def _assumptions_rows(sheet, summary: dict[str, Any], inputs) -> None:
    """Every numeric catalog figure of the parts the design uses, with its source."""
    for part in used_parts(summary, inputs):
        for name in part.numeric_fields():
            src = part.sources.get(name)
            value = getattr(part, name)
            sheet.append((part.id, name, value if isinstance(value, int | float) else str(value),
                          getattr(src, "kind", ""), getattr(src, "by", "") or "",
                          getattr(src, "url", "") or "", getattr(src, "note", "") or ""))


def used_parts(summary: dict[str, Any], inputs) -> list:
    """Catalog items behind the design: GPU system, NIC, switch, media, facility."""
    d = summary["design"]
    media = sorted({m["medium"] for m in d["media"]}
                   | {m["medium"] for m in summary.get("placement", {}).get("bom_media", [])})
    parts = [inputs.gpu[d["gpu"]], inputs.nic[d["nic"]], inputs.switch[d["switch"]]]
    parts += [inputs.medium[m] for m in media if m in inputs.medium]
    return parts + [inputs.facility]


def price_sources(inputs) -> dict[str, str]:
    """Catalog id (and facility figure) -> the source of its price."""
    out = {}
    for table, field in ((inputs.gpu, "node_price_usd"), (inputs.nic, "price_usd"),
                         (inputs.switch, "price_usd"), (inputs.medium, "price_usd_per_end")):
        for key, part in table.items():
            out[key] = _source_text(part, field)
    for key, part in inputs.medium.items():
        out[f"{key} fibre"] = _source_text(part, "fiber_usd_per_link")
    for field in ("rack_usd", "storage_usd_per_node", "checkpoint_storage_usd_per_gbyte_s"):
        out[field] = _source_text(inputs.facility, field)
    return out


CATEGORY_SOURCE = {"rack": "rack_usd", "storage": "storage_usd_per_node"}


def price_source(line: dict[str, Any], sources: dict[str, str]) -> str:
    """The source of a BOM line's unit price: its catalog item (the item's first word),
    else its category's facility figure; '' when the catalog has none."""
    item = line["item"]
    first = item.split(" ")[0]
    if item.startswith(f"{first} fibre") and f"{first} fibre" in sources:
        return sources[f"{first} fibre"]
    if first in sources:
        return sources[first]
    if "checkpoint storage" in item:
        return sources.get("checkpoint_storage_usd_per_gbyte_s", "")
    return sources.get(CATEGORY_SOURCE.get(line["category"], ""), "")


def _source_text(part, field: str) -> str:
    src = getattr(part, "sources", {}).get(field)
    if src is None:
        return ""
    parts = [getattr(src, "kind", ""), getattr(src, "by", "") or "", getattr(src, "url", "")]
    return " · ".join(str(p) for p in parts if p)
