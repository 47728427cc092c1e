"""Scenarios: dotted instance paths, value specs, and validated scenario documents.

A *path* names one field of an instance as the solver sees it (defaults filled in, the
shipped catalog merged): ``limits.it_power_mw``, ``catalog.gpu.h100-sxm.node_price_usd``,
``site.buildings[hall-a].it_power_mw`` or ``site.buildings[0].max_racks``. Keys may hold
dots (catalog and workload ids are slugs such as ``gpt4-1.8t-moe``): at each table the
longest key that prefixes the rest of the path is taken.

A *spec* gives the values of one path:
- ``lo:hi:n``   n evenly spaced points from lo to hi inclusive;
- ``a,b,c``     a list (numbers, true/false, none, or text);
- ``±p%:n``     (or ``+-p%:n``) n points from base x (1 - p/100) to base x (1 + p/100).
Integer fields get integer values (ranges are rounded).

A scenario sets its paths in the raw instance document (catalog figures become
``[catalog.<kind>.<id>]`` overrides; a workload given by id is inlined) and is validated
like a file, so every problem is reported with its path before anything is solved.

A scenario's id is a hash of everything that decides its result: the *resolved* instance
(the workload read from its file, every catalog entry in effect after overrides), the
values it sets, the solve settings (time limit) and the code version (`code_version`).
Editing a workload file, a catalog figure or the solver's code therefore changes the
id, and a resumed sweep solves the scenario again instead of reusing a stale row.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.metadata
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import models
import solver
from solver.errors import InvalidInstance, UsageError
from solver.loading import instance_from_dict
from solver.schema import Catalog, Instance

_RELATIVE = re.compile(r"^(?:±|\+-|\+/-)\s*([0-9.]+)\s*%\s*:\s*([0-9]+)$")
_INDEX = re.compile(r"^\[([^\]]+)\]")
_DOTTED_INDEX = re.compile(r"^(-?\d+)(?=[.\[]|$)")
"""A list index written as a path segment: periods.2.budget_usd."""


@dataclass(frozen=True)
class Scenario:
    """One point of a sweep: the values it sets, its document and validated instance."""

    id: str
    values: dict[str, Any]
    doc: dict[str, Any]
    instance: Instance


def document_sha256(doc: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def source_digest(roots: list[Path]) -> str:
    """sha256 over every .py file under `roots` (relative path and bytes, sorted)."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def code_version() -> str:
    """The package version and a digest of the source of `models/` and `solver/`.

    A digest rather than a hand-bumped model-version constant: four people change the
    models at once and a forgotten bump would reuse wrong results silently, while a
    needless re-solve after an edit that changes no figure only costs time. `solver/`
    is included because the candidate builder, evaluators and checker live there."""
    try:
        version = importlib.metadata.version("clusterplan")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    roots = [Path(models.__file__).resolve().parent, Path(solver.__file__).resolve().parent]
    return f"{version}+{source_digest(roots)[:16]}"


def resolved_instance_sha256(instance: Instance) -> str:
    """Hash of the resolved instance: of its document (`full_document`), the catalog in it
    hashed on its own once per catalog object (instances validated with the same
    overrides share one, solver.loading), as a sweep hashes an instance per scenario:
    the catalog was ~75% of it. (Not solver.prepare.instance_sha256, the hash of the
    instance's file that design.json records.)"""
    rest = instance.model_dump(mode="json", exclude={"catalog"})
    return document_sha256({**rest, "catalog": _catalog_sha256(instance.catalog)})


def _catalog_sha256(catalog: Catalog) -> str:
    kept = _CATALOG_SHA256.get("last")
    if kept is not None and kept[0] is catalog:
        return kept[1]
    sha256 = document_sha256(catalog.model_dump(mode="json"))
    _CATALOG_SHA256["last"] = catalog, sha256  # one assignment: threads see all or none
    return sha256


_CATALOG_SHA256: dict[str, tuple[Catalog, str]] = {}


def scenario_id(instance: Instance, values: dict[str, Any],
                settings: dict[str, Any] | None = None) -> str:
    """Stable id of a scenario: a hash of the resolved instance (workload and catalog in
    effect included), the values it sets, the solve `settings` and `code_version()`."""
    text = json.dumps({"instance": resolved_instance_sha256(instance),
                       "values": values, "settings": settings or {},
                       "code": code_version()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- paths ---------------------------------------------------------------------------

def _split(node: Any, rest: str, path: str) -> tuple[Any, str]:
    """The child of `node` named at the head of `rest`, and the rest after it."""
    if isinstance(node, list):
        m = _INDEX.match(rest) or _DOTTED_INDEX.match(rest)
        if not m:
            raise InvalidInstance([f"{path}: expected [index] or [name] after a list"])
        key, tail = m.group(1), rest[m.end():]
        if key.lstrip("-").isdigit():
            idx = int(key)
            if not -len(node) <= idx < len(node):
                raise InvalidInstance([f"{path}: index {idx} out of range ({len(node)} items)"])
            return idx, tail.removeprefix(".")
        names = [i for i, item in enumerate(node) if isinstance(item, dict)
                 and item.get("name") == key]
        if not names:
            raise InvalidInstance([f"{path}: no item named '{key}'"])
        return names[0], tail.removeprefix(".")
    if isinstance(node, dict):
        hits = [k for k in node if rest == k or rest.startswith(k + ".")
                or rest.startswith(k + "[")]
        if not hits:
            head = re.split(r"[.\[]", rest, maxsplit=1)[0]
            raise InvalidInstance([f"{path}: no field '{head}' (known: "
                                   f"{', '.join(sorted(map(str, node)))})"])
        key = max(hits, key=len)
        return key, rest[len(key):].removeprefix(".")
    raise InvalidInstance([f"{path}: '{rest}' goes below a value"])


def path_keys(full: dict[str, Any], path: str) -> list[Any]:
    """The keys and indices of `path` in the full instance document; InvalidInstance
    naming the path when it does not exist."""
    keys, node, rest = [], full, path
    while rest:
        key, rest = _split(node, rest, path)
        keys.append(key)
        node = node[key]
    if not keys:
        raise InvalidInstance(["--vary: empty path"])
    return keys


def _field(full: dict[str, Any], path: str) -> tuple[Any, ...]:
    """The field `path` names, as its keys with list indices counted from the front."""
    node, keys = full, []
    for key in path_keys(full, path):
        key = key % len(node) if isinstance(node, list) else key
        keys.append(key)
        node = node[key]
    return tuple(keys)


def get_path(full: dict[str, Any], path: str) -> Any:
    node = full
    for key in path_keys(full, path):
        node = node[key]
    return node


def set_path(doc: dict[str, Any], full: dict[str, Any], path: str, value: Any) -> None:
    """Set `path` to `value` in the raw document `doc`, in place.

    Parts missing from `doc` are copied from `full` (the validated instance), except
    that catalog items are written as overrides of the single field."""
    keys = path_keys(full, path)
    catalog_depth = 2 if keys[0] == "catalog" and keys[1] == "facility" else 3
    node, full_node = doc, full
    for depth, key in enumerate(keys[:-1]):
        full_node = full_node[key]
        child = node[key] if _has(node, key) else None
        if not isinstance(child, dict | list):
            child = ({} if keys[0] == "catalog" and depth < catalog_depth
                     else copy.deepcopy(full_node))
            node[key] = child
        node = child
    node[keys[-1]] = value


def _has(node: Any, key: Any) -> bool:
    return key in node if isinstance(node, dict) else 0 <= key < len(node)


# --- specs ---------------------------------------------------------------------------

def parse_scalar(text: str) -> Any:
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return int(t.replace("_", ""))
    except ValueError:
        pass
    try:
        return float(t.replace("_", ""))
    except ValueError:
        return t


def _typed(values: list[Any], base: Any) -> list[Any]:
    """Numbers as the base field's type (float fields floats, int fields ints: a range's
    points rounded), each value once, in order."""
    numeric = [isinstance(v, int | float | np.number) and not isinstance(v, bool) for v in values]
    if isinstance(base, float):
        typed = [float(v) if num else v for v, num in zip(values, numeric, strict=True)]
    elif isinstance(base, bool) or not isinstance(base, int):
        typed = [float(v) if isinstance(v, np.floating) else v for v in values]
    else:
        typed = [int(round(float(v))) if num else v
                 for v, num in zip(values, numeric, strict=True)]
    return _once(typed)


def _once(values: list[Any]) -> list[Any]:
    """`values` without repeats, in order; a value is its type and its JSON (True is not
    1, and lists or tables, which a sweep file may vary, are compared by content)."""
    seen, once = set(), []
    for v in values:
        key = (type(v).__name__, json.dumps(v, sort_keys=True, default=repr))
        if key not in seen:
            seen.add(key)
            once.append(v)
    return once


def _whole(path: str, values: list[Any], base: Any) -> list[Any]:
    """`values` as listed for `path`; InvalidInstance when a number is not whole and the
    field (its value `base`) is an integer."""
    if isinstance(base, int) and not isinstance(base, bool):
        broken = [v for v in values if isinstance(v, float | np.floating)
                  and not float(v).is_integer()]
        if broken:
            raise InvalidInstance([f"{path}: a whole number (got {broken[0]!r})"])
    return values


def parse_spec(path: str, spec: str | list[Any] | Any, base: Any,
               max_points: int | None = None) -> list[Any]:
    """The values of one --vary spec (see the module docstring); `base` is the
    instance's current value (for relative ranges and integer fields). A range of more
    than `max_points` points is refused (UsageError) before it is generated."""
    if isinstance(spec, list | tuple):
        if not spec:
            raise InvalidInstance([f"{path}: no values (an empty list)"])
        return _typed(_whole(path, list(spec), base), base)
    if not isinstance(spec, str):
        return _typed(_whole(path, [spec], base), base)
    text = spec.strip()
    rel = _RELATIVE.match(text)
    if rel:
        if isinstance(base, bool) or not isinstance(base, int | float):
            raise InvalidInstance([f"{path}: a relative range needs a numeric base value "
                                   f"(the instance has {base!r})"])
        pct, n = float(rel.group(1)) / 100.0, int(rel.group(2))
        if n < 1:
            raise InvalidInstance([f"{path}: a range needs at least one point"])
        _check_points(path, n, max_points)
        return _typed(list(base * (1 + np.linspace(-pct, pct, n))), base)
    parts = text.split(":")
    if len(parts) == 3:
        lo, hi, n = (parse_scalar(p) for p in parts)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (lo, hi)) \
                or not isinstance(n, int) or n < 1:
            raise InvalidInstance([f"{path}: range '{text}' must be lo:hi:points with numbers "
                                   "and a positive integer count"])
        _check_points(path, n, max_points)
        return _typed(list(np.linspace(lo, hi, n)), base)
    values = [parse_scalar(p) for p in text.split(",") if p.strip()]
    if not values:
        raise InvalidInstance([f"{path}: no values in '{text}'"])
    return _typed(_whole(path, values, base), base)


def _check_points(path: str, n: int, max_points: int | None) -> None:
    if max_points is not None and n > max_points:
        raise UsageError(f"--max-scenarios: --vary {path} alone has {n:,} points, more than "
                         f"the limit of {max_points:,} scenarios; pass --max-scenarios {n} "
                         "(or more) to run it")


def parse_vary(text: str) -> tuple[str, str]:
    """'PATH=SPEC' -> (path, spec)."""
    path, sep, spec = text.partition("=")
    if not sep or not path.strip() or not spec.strip():
        raise InvalidInstance([f"--vary '{text}': expected PATH=SPEC, e.g. "
                               "limits.it_power_mw=100:200:5"])
    return path.strip(), spec.strip()


def grid(axes: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the axes' values, in the order given (last axis fastest)."""
    paths = list(axes)
    return [dict(zip(paths, combo, strict=True))
            for combo in itertools.product(*(axes[p] for p in paths))]


def resolve_axes(full: dict[str, Any], vary: dict[str, Any],
                 max_points: int | None = None) -> dict[str, list[Any]]:
    """{path: spec} -> {path: values}; every bad path or spec is reported at once, and so
    are two paths of one field (`site.buildings[0]` and `site.buildings[hall-a]`: the
    last would silently win)."""
    axes, problems, fields = {}, [], {}
    for path, spec in vary.items():
        try:
            axes[path] = parse_spec(path, spec, get_path(full, path), max_points)
            field = _field(full, path)
            if field in fields:
                problems.append(f"{path}: the same field as {fields[field]}; vary it once")
            fields.setdefault(field, path)
        except InvalidInstance as exc:
            problems += exc.problems
    if problems:
        raise InvalidInstance(problems, "--vary")
    return axes


# --- scenarios -----------------------------------------------------------------------

def full_document(base: Instance) -> dict[str, Any]:
    return base.model_dump(mode="json")


def make_scenarios(base_doc: dict[str, Any], base: Instance,
                   assignments: list[dict[str, Any]], source: str,
                   settings: dict[str, Any] | None = None) -> list[Scenario]:
    """Validated scenarios, one per assignment {path: value}. Every invalid value is
    reported at once, naming its path and value, before anything is solved. `settings`
    (solve options that decide results) enter the ids."""
    full = full_document(base)
    out, problems = [], []
    for values in assignments:
        doc = copy.deepcopy(base_doc)
        try:
            for path, value in values.items():
                set_path(doc, full, path, value)
            inst = instance_from_dict(doc, source)
        except InvalidInstance as exc:
            where = ", ".join(f"{p}={v!r}" for p, v in values.items())
            problems += [f"{where}: {p}" for p in exc.problems]
            continue
        out.append(Scenario(scenario_id(inst, values, settings), values, doc, inst))
    if problems:
        raise InvalidInstance(sorted(set(problems)), source)
    return out
