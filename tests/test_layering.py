"""The layout's rules: models/ never imports solver/, and no module-level import cycles
in either package (a cycle at import time is what breaks; a function-level import is
the usual way to defer one and is not counted)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_imports() -> dict[str, set[str]]:
    """Module -> project modules it imports at module level."""
    files = {".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): f
             for pkg in ("solver", "models") for f in (ROOT / pkg).rglob("*.py")}
    graph = {}
    for name, path in files.items():
        deps: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                deps |= {m for m in (node.module, *(f"{node.module}.{a.name}"
                                                    for a in node.names)) if m in files}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in files}
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                found.append(sorted([v, *comp]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_models_never_import_solver():
    graph = module_imports()
    assert not {m: d for m, d in graph.items()
                if m.startswith("models") and any(x.startswith("solver") for x in d)}
    for path in (ROOT / "models").rglob("*.py"):
        assert "import solver" not in path.read_text() and "from solver" not in path.read_text()


def test_no_import_cycles():
    assert cycles(module_imports()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
