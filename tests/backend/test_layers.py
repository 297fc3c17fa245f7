"""The package's modules import each other in layers: no import circle.

Every import counts, whether it runs at import time, inside a function, or only for the
type checker (under ``TYPE_CHECKING``): a circle of any of them means two modules that
cannot be read, changed or tested apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The folders mapped into the ``rewinddb`` namespace (pyproject.toml's package-dir).
FOLDERS = {
    "backend": "rewinddb",
    "web": "rewinddb.web",
    "notebook_ext": "rewinddb.notebook",
    "integrations": "rewinddb.integrations",
}


def _modules() -> dict[str, Path]:
    """Every module of the namespace by its dotted name (a package as its ``__init__``)."""
    found = {}
    for folder, package in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The namespace's modules that module ``name`` imports, anywhere in its text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:  # ``from . import x`` names module x, if there is one
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in modules else base)
    found = set()
    for target in targets:
        while target and target not in modules:  # ``import a.b.c`` imports a.b.c's module
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_no_module_imports_itself_back_through_others() -> None:
    graph = _graph()
    circles = _circles(graph)
    ties = [
        " -> ".join(f"{a} imports {sorted(graph[a] & set(group))}" for a in group)
        for group in circles
    ]
    assert circles == [], ties


def test_the_graph_sees_the_imports_that_make_circles() -> None:
    """The reader finds the imports a circle is made of: type-only ones and function-level
    ones included (a circle this test would miss is no proof of layers)."""
    graph = _graph()
    assert "rewinddb.rendering" in graph["rewinddb.diff"]  # a top-level import
    assert "rewinddb.database" in graph["rewinddb.presenters"]  # under TYPE_CHECKING
    assert "rewinddb._statements" in graph["rewinddb._migrations"]  # under TYPE_CHECKING
    assert "rewinddb._decoding" in graph["rewinddb.rendering"]  # ``from . import x``
    assert "rewinddb._postgres" in graph["rewinddb.database"]  # inside ``open()``
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
