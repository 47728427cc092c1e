"""Load instance files (TOML, or JSON) and the shipped catalog into validated objects.

Every problem in a file is reported at once, each naming its field path, as an
``InvalidInstance`` error (CLI exit code 3). Nothing here prints.
"""

from __future__ import annotations

import copy
import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from solver.errors import InvalidInstance
from solver.schema import Catalog, Instance, Workload


def _shipped_dir() -> Path:
    """The shipped catalog, workloads and instances: package data `solver/instances` in an
    installed wheel (pyproject's force-include), else the source tree's `instances/`."""
    packaged = Path(str(resources.files("solver"))) / "instances"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[1] / "instances"


INSTANCES_DIR = _shipped_dir()
CATALOG_DIR = INSTANCES_DIR / "catalog"
WORKLOADS_DIR = INSTANCES_DIR / "workloads"
DEFAULT_INSTANCE = INSTANCES_DIR / "h100-100k.toml"
CATALOG_KINDS = ("gpu", "switch", "nic", "medium")


def format_validation_error(err: ValidationError, prefix: str = "") -> list[str]:
    """One 'field.path: message' line per pydantic error."""
    lines = []
    for e in err.errors():
        path = ".".join(str(p) for p in (prefix, *e["loc"]) if p != "")
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        elif e["type"] == "missing":
            msg = "required field is missing"
        lines.append(f"{path or '(top level)'}: {msg}")
    return lines


def read_document(path: Path) -> dict[str, Any]:
    """Parse a TOML or JSON file into a dict; syntax errors become InvalidInstance."""
    return parse_document(path, read_text(path))


MAX_DOCUMENT_BYTES = 16 * 2**20
"""Largest instance, workload, catalog or design file read [bytes] (the shipped ones are a
few kB, a design.json tens of kB)."""


def read_text(path: Path) -> str:
    """The text of a file, its line endings made \\n (as Python's text mode reads them);
    InvalidInstance naming it when it is a folder, cannot be read, or holds more than
    MAX_DOCUMENT_BYTES (/dev/zero is read no further). A pipe is read as a file (a shell's
    `<(...)`), and, like `cat`, waits for its writer."""
    try:
        if path.is_dir():
            raise InvalidInstance([f"{path}: a folder, not a file"], str(path))
        with path.open("rb") as handle:
            data = handle.read(MAX_DOCUMENT_BYTES + 1)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise InvalidInstance([f"{path}: larger than {MAX_DOCUMENT_BYTES // 2**20} MB, "
                                   "too large for an instance, workload, catalog or design "
                                   "file"], str(path))
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except FileNotFoundError:
        raise InvalidInstance([f"{path}: no such file"], str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInstance([f"{path}: cannot read ({exc})"], str(path)) from None


def parse_document(path: Path, text: str) -> dict[str, Any]:
    """`text`, read from `path`, parsed as TOML or JSON (by the file's suffix)."""
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text, parse_constant=_reject_constant)
        else:
            data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, ValueError, RecursionError) as exc:
        kind = "JSON" if path.suffix.lower() == ".json" else "TOML"
        why = f"nested too deeply ({type(exc).__name__})" if isinstance(
            exc, RecursionError) else str(exc)
        raise InvalidInstance([f"{path}: not valid {kind}: {why}"], str(path)) from None
    if not isinstance(data, dict):
        raise InvalidInstance([f"{path}: the document must be a table/object"], str(path))
    if nesting_depth(data) > MAX_NESTING:
        raise InvalidInstance([f"{path}: nested deeper than {MAX_NESTING} levels"], str(path))
    return data


MAX_NESTING = 32
"""Deepest nesting of tables and arrays an input document may have (the schema's own is
under 10; deeper input would exhaust Python's recursion in validation)."""


def nesting_depth(value: Any) -> int:
    """Levels of tables/arrays in `value`, counted without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth + 1)
            if deepest > MAX_NESTING:
                return deepest
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict)
                                                   else item))
    return deepest


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def _keyed_items(data: dict[str, Any]) -> dict[str, Any]:
    """Catalog files are tables keyed by id; copy the key into each item's `id`."""
    return {key: {"id": key, **value} if isinstance(value, dict) else value
            for key, value in data.items()}


def raw_catalog() -> dict[str, Any]:
    """The shipped catalog as plain data: {kind: {id: fields}, 'facility': fields}."""
    return copy.deepcopy(_parsed_catalog())


def _parsed_catalog() -> dict[str, Any]:
    """raw_catalog's data, parsed once per state of the files (a sweep loads an instance
    per scenario; an edited catalog file is parsed again). Shared: never changed."""
    paths = [CATALOG_DIR / f"{kind}.toml" for kind in (*CATALOG_KINDS, "facility",
                                                        "reliability")]
    state = tuple((str(p), *_file_state(p)) for p in paths)
    raw = _RAW_CATALOG.get(state)
    if raw is None:
        raw = {kind: _keyed_items(read_document(CATALOG_DIR / f"{kind}.toml"))
               for kind in CATALOG_KINDS}
        raw["facility"] = {"id": "default", **read_document(CATALOG_DIR / "facility.toml")}
        raw["reliability"] = read_document(CATALOG_DIR / "reliability.toml")
        _RAW_CATALOG.clear()
        _RAW_CATALOG[state] = raw
    return raw


_RAW_CATALOG: dict[tuple, dict[str, Any]] = {}


def _file_state(path: Path) -> tuple[int, int]:
    """(mtime in ns, size) of a file; (-1, -1) when it cannot be read (read_document
    then reports it)."""
    try:
        st = path.stat()
    except OSError:
        return -1, -1
    return st.st_mtime_ns, st.st_size


def _catalog(overrides: Any) -> tuple[Catalog | dict[str, Any], list[str]]:
    """The shipped catalog with an instance's `overrides` applied (`apply_overrides`) and
    validated, with the overrides' problems. A sweep validates an instance per scenario,
    and the catalog was ~95% of that (1.1 of 1.2 ms), so the last one is kept, by the
    parse of the files and the overrides (as JSON: 1 and 1.0 and true differ), and
    instances share it (the models are frozen). The catalog as data when it does not
    validate (the instance's validation then reports its problems, with their paths) or
    has problems of its own."""
    raw = _parsed_catalog()
    try:
        key = json.dumps(overrides, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):  # not plain data: validated, never kept
        key = None
    kept = _LAST_CATALOG.get("last")
    if key is not None and kept is not None and kept[0] is raw and kept[1] == key:
        return kept[2], []
    catalog, problems = apply_overrides(raw, overrides)
    if problems:
        return catalog, problems
    try:
        valid = Catalog.model_validate(catalog)
    except ValidationError:
        return catalog, []
    if key is not None:
        _LAST_CATALOG["last"] = raw, key, valid  # one assignment: threads see all or none
    return valid, []


_LAST_CATALOG: dict[str, tuple[dict[str, Any], str, Catalog]] = {}


def load_catalog() -> Catalog:
    try:
        return Catalog.model_validate(raw_catalog())
    except ValidationError as err:
        raise InvalidInstance(format_validation_error(err, "catalog"), "catalog") from None


def apply_overrides(raw: dict[str, Any], overrides: Any) -> tuple[dict[str, Any], list[str]]:
    """Apply `[catalog.<kind>.<id>]` tables of an instance to the shipped catalog.

    An overridden figure's source becomes {kind='override'}. Unknown kinds and ids are
    reported; unknown fields are left for the schema to reject with their path.
    `raw` is not changed: what an override changes is copied first, the rest is shared
    (a sweep validates a scenario in ~5 ms; copying the whole catalog took half of it).
    """
    merged, problems = dict(raw), []
    if not isinstance(overrides, dict):
        return merged, ["catalog: must be a table of overrides"]
    for kind in sorted(overrides):
        items = overrides[kind]
        if kind == "reliability":
            merged["reliability"] = copy.deepcopy(raw["reliability"])
            problems += merge_sourced(merged["reliability"], items, "catalog.reliability")
            continue
        if kind == "facility":
            items = {"default": items}
        elif kind in merged:
            merged[kind] = dict(merged[kind])
        else:
            problems.append(f"catalog.{kind}: unknown catalog kind "
                            f"(known: {', '.join((*CATALOG_KINDS, 'facility', 'reliability'))})")
            continue
        if not isinstance(items, dict):
            problems.append(f"catalog.{kind}: must be a table")
            continue
        for item_id in sorted(items):
            fields = items[item_id]
            if kind == "facility":
                target = merged["facility"] = copy.deepcopy(raw["facility"])
            elif item_id in raw[kind]:
                target = merged[kind][item_id] = copy.deepcopy(raw[kind][item_id])
            else:
                target = None
            where = f"catalog.{kind}" if kind == "facility" else f"catalog.{kind}.{item_id}"
            if not isinstance(fields, dict):
                problems.append(f"{where}: must be a table of field overrides")
                continue
            if target is None:
                # A new item: it must be complete and sourced like a shipped one.
                merged[kind][item_id] = {"id": item_id, **fields}
                continue
            for field, value in fields.items():
                if field == "sources":
                    if not isinstance(value, dict):
                        problems.append(f"{where}.sources: must be a table of sources by field")
                        continue
                    target.setdefault("sources", {}).update(value)
                    continue
                target[field] = value
                target.setdefault("sources", {})[field] = {
                    "url": "instance://catalog-override", "kind": "override"}
    return merged, problems


def _is_workload_id(ref: str) -> bool:
    return not Path(ref).suffix or (WORKLOADS_DIR / f"{ref}.toml").exists()  # ids hold dots


SOURCE_FIELDS = ("url", "kind", "by", "note")


def merge_sourced(target: dict[str, Any], override: Any, where: str) -> list[str]:
    """Deep-merge an override into a catalog of inline-sourced figures (reliability.toml),
    in place. A figure table whose values change without a new url becomes
    {kind='override'}; new tables must be complete (the schema checks them)."""
    if not isinstance(override, dict):
        return [f"{where}: must be a table"]
    problems, changed, shipped_url = [], False, target.get("url")
    for key in sorted(override):
        value, old = override[key], target.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            problems += merge_sourced(old, value, f"{where}.{key}")
            continue
        changed |= key not in SOURCE_FIELDS and old != value
        target[key] = value
    if changed and shipped_url is not None and target.get("url") == shipped_url:
        target.update(url="instance://catalog-override", kind="override", by="the instance",
                      note=f"set by the instance's [{where}] table")
    return problems


def load_workload(ref: str | dict[str, Any], where: str = "workload") -> Workload:
    """A workload from a shipped id, a file path, or an inline table."""
    if isinstance(ref, str):
        path = Path(ref)
        if _is_workload_id(ref):
            path = WORKLOADS_DIR / f"{ref}.toml"
            if not path.exists():
                known = ", ".join(sorted(p.stem for p in WORKLOADS_DIR.glob("*.toml")))
                raise InvalidInstance([f"{where}: unknown workload '{ref}' (known: {known})"])
        text = read_text(path)
        kept = _WORKLOADS.get(str(path))
        if kept is None or kept[0] != text:
            data = parse_document(path, text)
            kept = _WORKLOADS[str(path)] = text, _validated_workload(
                data.get("workload", data), where)
        return kept[1]
    return _validated_workload(ref, where)


def _validated_workload(data: Any, where: str) -> Workload:
    try:
        return Workload.model_validate(data)
    except ValidationError as err:
        raise InvalidInstance(format_validation_error(err, where)) from None


_WORKLOADS: dict[str, tuple[str, Workload]] = {}
"""Workload files validated, by path, with the text they were read from: a sweep
validates an instance per scenario (the file is read each time, parsed and validated
only when its text has changed)."""


def instance_from_dict(data: dict[str, Any], source: str = "instance") -> Instance:
    """Validate a parsed instance document; every problem is reported at once. `data` is
    not changed (only its top-level keys are replaced, in a copy)."""
    data = dict(data)
    catalog, problems = _catalog(data.pop("catalog", {}))
    workload = data.get("workload")
    if isinstance(workload, str):
        try:
            data["workload"] = load_workload(workload)  # validated: taken as it is
        except InvalidInstance as exc:
            problems += exc.problems
            data.pop("workload")
    data["catalog"] = catalog
    try:
        instance = Instance.model_validate(data)
    except ValidationError as err:
        problems += format_validation_error(err)
    if problems:
        raise InvalidInstance(problems, source)
    return instance


def read_instance_document(path: Path) -> dict[str, Any]:
    """Parse an instance file; a workload given as a relative file path is made absolute
    against the instance file's folder (so it does not depend on the working directory)."""
    doc = read_document(path)
    workload = doc.get("workload")
    if isinstance(workload, str) and not _is_workload_id(workload):
        doc["workload"] = str((path.parent / workload).resolve())
    return doc


def load_instance(path: str | Path | None = None) -> Instance:
    """Load and validate an instance file (default: the shipped 100k-H100 campus)."""
    path = Path(path) if path is not None else DEFAULT_INSTANCE
    return instance_from_dict(read_instance_document(path), str(path))


def shipped_instances() -> dict[str, Path]:
    """The shipped instances by name ('h100-100k', 'tiny/power-bound', ...)."""
    paths = [*INSTANCES_DIR.glob("*.toml"), *INSTANCES_DIR.glob("tiny/*.toml")]
    return {str(p.relative_to(INSTANCES_DIR).with_suffix("")): p for p in sorted(paths)}


def shipped_instance_named(name: str) -> Path:
    """The shipped instance file whose ``name`` is ``name`` (a design.json names the
    instance it was solved on); InvalidInstance asking for ``--instance`` when none is."""
    for path in shipped_instances().values():
        if read_instance_document(path).get("name") == name:
            return path
    raise InvalidInstance([f"the design was solved on instance '{name}', which is not a "
                           "shipped instance: pass its file with --instance"], "--instance")
