"""The package's import graph: no circle, and no import from a lower layer to a higher one.

Every module's syntax tree is read whole: imports in function bodies and under
``if TYPE_CHECKING:`` count, since a deferred import is still a dependency. A unit is a
top-level module or package of ``inferx_pipeline`` (a submodule ``LAYERS`` names on its
own is a unit of its own); ``LAYERS`` lists them bottom-up, and a unit may import units
of its own layer or lower ones, as long as no circle forms. docs/DESIGN.md draws this
order.
"""

from __future__ import annotations

import ast
import itertools
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import ROOT

PACKAGE = "inferx_pipeline"

# Bottom-up. Names are relative to the package; "__init__" is the package's own module.
LAYERS: tuple[tuple[str, ...], ...] = (
    # Foundation: no domain knowledge.
    ("__init__", "strict", "errors", "atomic", "settings", "tokens", "locks", "parentdeath",
     "gitrepo", "envnames", "pandas_options", "sqlite_arrow", "child_call"),
    # Reference data: the catalog (SKUs, models) and golden acceptance curves.
    ("catalog", "golden"),
    # Parts that know no recipe: image references and registries, launchers, the load
    # generator, the simulated engine, the forge (pull requests, labels, comments).
    ("images", "launch", "bench", "sim", "forge"),
    ("recipes",),
    ("matrix",),
    # What runs one job: its server command, its accuracy eval.
    ("engines", "evals"),
    # The final-command checks: every job's ServerSpec, judged before any GPU starts.
    ("conformance",),
    # The checked matrix a person asks for (inferx matrix, inferx validate).
    ("plan",),
    # What a pull request runs: its labels, the jobs its diff changes, its canary.
    ("prs",),
    ("sweep",),
    ("results", "leaderboard"),
    ("pipeline", "dryrun", "pr_run"),
    ("defs",),
    ("cli", "__main__"),
)  # fmt: skip


@dataclass(frozen=True)
class Edge:
    """One import statement of ``source`` that names ``target`` (both module names)."""

    source: str
    target: str
    where: str  # path:line

    def __str__(self) -> str:
        return f"{self.where}: {self.source} imports {self.target}"


def _modules(root: Path, package: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _base(module: str, path: Path, level: int) -> str:
    # ``from .x import y`` in a/b/c.py is relative to a.b; in a/b/__init__.py to a.b too.
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    return ".".join(package[: len(package) - level + 1])


def _named(node: ast.AST, module: str, path: Path) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            base = ".".join(p for p in (_base(module, path, node.level), base) if p)
        # ``from a import b`` names the module a.b when there is one, else a name in a.
        yield from (f"{base}.{alias.name}" for alias in node.names)


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_edges(root: Path, package: str) -> tuple[list[str], list[Edge]]:
    """Every module of ``package`` under ``root`` and every import between two of them."""
    modules = _modules(root, package)
    edges: list[Edge] = []
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = {_resolve(name, modules) for name in _named(node, module, path)}
            for target in sorted(t for t in targets if t is not None and t != module):
                where = f"{path.relative_to(root)}:{getattr(node, 'lineno', 0)}"
                edges.append(Edge(module, target, where))
    return list(modules), edges


def unit_of(module: str, package: str, layers: Sequence[Sequence[str]]) -> str | None:
    """The most specific unit of ``layers`` that holds ``module``; None when none does."""
    relative = module.removeprefix(package).removeprefix(".") or "__init__"
    units = [u for layer in layers for u in layer]
    holding = [u for u in units if relative == u or relative.startswith(f"{u}.")]
    return max(holding, key=len) if holding else None


def layer_index(layers: Sequence[Sequence[str]]) -> dict[str, int]:
    """Unit -> its layer's position, bottom = 0."""
    return {unit: i for i, layer in enumerate(layers) for unit in layer}


def upward_imports(
    edges: Sequence[Edge], package: str, layers: Sequence[Sequence[str]]
) -> list[str]:
    """Each import from a unit to a unit of a higher layer, with its file:line."""
    index = layer_index(layers)
    found = []
    for edge in edges:
        source = unit_of(edge.source, package, layers)
        target = unit_of(edge.target, package, layers)
        if source is None or target is None or index[target] <= index[source]:
            continue
        found.append(
            f"{edge} (layer {index[target]} {target!r} is above layer {index[source]} {source!r})"
        )
    return found


def circles(edges: Sequence[Edge], key: Mapping[str, str]) -> list[str]:
    """One circle per strongly connected group of ``key``'s nodes, each hop with file:line.

    ``key`` maps a module to its node (the module itself, or its unit).
    """
    graph: dict[str, dict[str, Edge]] = defaultdict(dict)
    for edge in edges:
        a, b = key[edge.source], key[edge.target]
        if a != b:
            graph[a].setdefault(b, edge)
    found = []
    for group in _strongly_connected(graph):
        if len(group) > 1:
            found.append(_circle_through(sorted(group)[0], group, graph))
    return found


def _strongly_connected(graph: Mapping[str, Mapping[str, Edge]]) -> list[set[str]]:
    # Kosaraju: order by finish time, then collect on the reversed graph.
    nodes = sorted(set(graph) | {b for targets in graph.values() for b in targets})
    order: list[str] = []
    seen: set[str] = set()
    for start in nodes:
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph.get(start, {}))))]
        while stack:
            node, rest = stack[-1]
            nxt = next((n for n in rest if n not in seen), None)
            if nxt is None:
                order.append(node)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(sorted(graph.get(nxt, {})))))
    reverse: dict[str, set[str]] = defaultdict(set)
    for a, targets in graph.items():
        for b in targets:
            reverse[b].add(a)
    groups: list[set[str]] = []
    assigned: set[str] = set()
    for start in reversed(order):
        if start in assigned:
            continue
        group, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node in assigned:
                continue
            assigned.add(node)
            group.add(node)
            todo.extend(reverse[node] - assigned)
        groups.append(group)
    return groups


def _circle_through(start: str, group: set[str], graph: Mapping[str, Mapping[str, Edge]]) -> str:
    # Breadth-first from start back to start inside its group: a shortest circle.
    parent: dict[str, str] = {}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in sorted(graph.get(node, {})):
            if nxt not in group:
                continue
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                hops = [*reversed(path), start]
                steps = [f"{a} ({graph[a][b].where})" for a, b in itertools.pairwise(hops)]
                return " -> ".join([*steps, start])
            if nxt not in parent:
                parent[nxt] = node
                todo.append(nxt)
    raise AssertionError(f"{start} is in a strongly connected group but on no circle")


@pytest.fixture(scope="module")
def graph() -> tuple[list[str], list[Edge]]:
    return import_edges(ROOT, PACKAGE)


def test_every_module_has_a_layer(graph: tuple[list[str], list[Edge]]) -> None:
    modules, _ = graph
    missing = [m for m in modules if unit_of(m, PACKAGE, LAYERS) is None]
    assert missing == [], f"modules in no layer (add their package to LAYERS): {missing}"
    units = [u for layer in LAYERS for u in layer]
    stale = [u for u in units if not any(unit_of(m, PACKAGE, LAYERS) == u for m in modules)]
    assert stale == [], f"LAYERS names units with no module: {stale}"
    assert len(units) == len(set(units)), "a unit is listed twice in LAYERS"


def test_no_import_points_upward(graph: tuple[list[str], list[Edge]]) -> None:
    _, edges = graph
    found = upward_imports(edges, PACKAGE, LAYERS)
    assert found == [], "imports from a lower layer to a higher one:\n" + "\n".join(found)


def test_no_circle_between_units(graph: tuple[list[str], list[Edge]]) -> None:
    modules, edges = graph
    key = {m: unit_of(m, PACKAGE, LAYERS) or m for m in modules}
    found = circles(edges, key)
    assert found == [], "import circles between units:\n" + "\n".join(found)


def test_no_circle_between_modules(graph: tuple[list[str], list[Edge]]) -> None:
    modules, edges = graph
    found = circles(edges, {m: m for m in modules})
    assert found == [], "import circles between modules:\n" + "\n".join(found)


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_checks_see_deferred_circles_and_upward_imports(tmp_path: Path) -> None:
    """The checker itself: a circle hidden in a function body, a relative upward import."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "def f():\n    from pkg.low import b\n",
            "pkg/low/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from pkg.low.a import f\n",
            "pkg/low/c.py": "from ..high import d\n",
            "pkg/high/__init__.py": "",
            "pkg/high/d.py": "import pkg.low.a\n",
        },
    )
    modules, edges = import_edges(tmp_path, "pkg")
    layers = (("__init__", "low"), ("high",))
    assert upward_imports(edges, "pkg", layers) == [
        "pkg/low/c.py:1: pkg.low.c imports pkg.high.d (layer 1 'high' is above layer 0 'low')"
    ]
    units = {m: unit_of(m, "pkg", layers) or m for m in modules}
    assert circles(edges, units) == ["high (pkg/high/d.py:1) -> low (pkg/low/c.py:1) -> high"]
    assert circles(edges, {m: m for m in modules}) == [
        "pkg.low.a (pkg/low/a.py:2) -> pkg.low.b (pkg/low/b.py:3) -> pkg.low.a"
    ]
