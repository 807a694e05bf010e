"""The package's own structure: how its modules depend on each other and on xarray."""

from __future__ import annotations

import ast
import pathlib

import atlasds

PACKAGE = pathlib.Path(atlasds.__file__).parent


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.glob("*.py"))}


def _own_imports(node: ast.AST) -> list[str]:
    """The package modules a relative import names (``from . import _native`` names `_native`)."""
    if not isinstance(node, ast.ImportFrom) or node.level != 1:
        return []
    if node.module is not None:
        return [node.module]
    return [alias.name for alias in node.names]


def test_the_package_modules_import_each_other_at_the_top_and_without_a_cycle():
    graph: dict[str, set[str]] = {}
    for name, tree in _modules().items():
        top = {id(node) for node in tree.body}
        nested = [n for n in ast.walk(tree) if _own_imports(n) and id(n) not in top]
        assert nested == [], f"{name} imports a package module inside a function"
        graph[name] = {m for node in tree.body for m in _own_imports(node)}

    # Depth-first: a module met again while its own imports are being walked is a cycle.
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        if state.get(module) == "done":
            return
        assert state.get(module) != "open", f"import cycle: {' -> '.join([*path, module])}"
        state[module] = "open"
        for imported in sorted(graph.get(module, ())):
            visit(imported, [*path, module])
        state[module] = "done"

    for module in graph:
        visit(module, [])


def test_the_package_uses_no_private_xarray_name():
    private = []
    for name, tree in _modules().items():
        aliases = {"xarray"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases |= {a.asname or a.name for a in node.names if a.name == "xarray"}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xarray"):
                private += [(name, a.name) for a in node.names if a.name.startswith("_")]
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                while isinstance(base, ast.Attribute):
                    base = base.value
                if isinstance(base, ast.Name) and base.id in aliases:
                    private.append((name, node.attr))
    assert private == []
