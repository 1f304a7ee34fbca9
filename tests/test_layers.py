"""The house's layers, read from the import graph: arrows only run down, and no module imports
itself round a circle.

Each package (and each top-level module) sits on a floor; a module may import from its own
floor or below, never above. The live study (``live``) stands above the runner, whose
preparation of worlds and policies it reuses. People and policies share a floor and meet only
in the primitives below them. No import hides inside a function outside the command line, the
optional extras and the runtime loaders of kind declarations, and nothing is imported by a name
the graph cannot read: the modules declaring kinds are named by the entry points of
``pyproject.toml``, which resolve to modules of the package.
"""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

import simstudy

ROOT = Path(simstudy.__file__).parent

#: floors from the ground up; a package not listed fails the test until it is placed
FLOORS: list[set[str]] = [
    {"core", "resources"},  # resources: the shipped documents and data, read by path
    {"world"},
    {"primitives"},
    {"metrics"},
    {"people", "policies"},
    {"sim"},
    {"analysis"},
    {"study"},
    {"run"},
    {"live"},  # runs a study's scenario live: above the runner it reuses
    {"planning"},  # a study's power and preregistration: the live design's plans by its engine
    {"checks", "examples"},
    {"cli"},
    {"__init__"},
]
FLOOR = {name: level for level, names in enumerate(FLOORS) for name in names}
#: optional extras, imported only where they are used so that the package runs without them:
#: readers of decision models from files (scikit-learn via skops, ONNX), the Ray executor and
#: the live study's server and bots (``simstudy[models]``, ``[ray]``, ``[live]``)
OPTIONAL_READERS = {"skops", "onnxruntime", "ray", "sklearn", "starlette", "uvicorn", "httpx",
                    "anyio", "jinja2", "limits"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(path: Path, node: ast.ImportFrom | ast.Import) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not node.level:
        base = node.module or ""
    else:
        here = _module_name(path).split(".")
        if path.name != "__init__.py":
            here = here[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join(here + ([node.module] if node.module else []))
    # ``from simstudy import sim`` names a module
    return [f"{base}.{a.name}" for a in node.names] if base == "simstudy" else [base]


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "simstudy":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def import_graph() -> dict[str, set[str]]:
    """``{module: modules of the package it imports}`` over every module under simstudy/."""
    known = {_module_name(p) for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        source = _module_name(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(path, node):
                    while target and target not in known:
                        target = target.rpartition(".")[0]
                    if target and target != source:
                        graph[source].add(target)
    return graph


def test_every_room_is_on_a_floor():
    rooms = {_room(m) for m in import_graph()} | {_room(t) for ts in import_graph().values()
                                                  for t in ts}
    assert rooms - set(FLOOR) == set()


def test_no_arrow_runs_up():
    up = sorted(f"{source} -> {target}" for source, targets in import_graph().items()
                for target in targets
                if FLOOR[_room(target)] > FLOOR[_room(source)])
    assert up == []


def test_people_and_policies_do_not_import_each_other():
    crossing = sorted(f"{s} -> {t}" for s, ts in import_graph().items() for t in ts
                      if {_room(s), _room(t)} == {"people", "policies"})
    assert crossing == []


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    # Tarjan's strongly connected components; a component of two or more modules is a circle
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle():
    # a package's face (its __init__) re-exporting its modules is not a circle of concepts
    graph = {s: {t for t in ts if not (ROOT / Path(*t.split(".")[1:]) / "__init__.py").exists()}
             for s, ts in import_graph().items()}
    assert _circles(graph) == []


def test_the_circle_finder_sees_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _imports_inside_functions(path: Path) -> list[tuple[int, list[str]]]:
    found = []
    for function in ast.walk(ast.parse(path.read_text())):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [(node.lineno, _targets(path, node)) for node in ast.walk(function)
                      if isinstance(node, (ast.Import, ast.ImportFrom))]
    return found


PYPROJECT = ROOT.parent / "pyproject.toml"


def kind_declarations() -> dict[str, str]:
    """``{entry point: module}`` of the group ``simstudy.kinds`` in ``pyproject.toml``."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return {name: value.partition(":")[0].strip() for name, value in
            project["entry-points"]["simstudy.kinds"].items()}


def _runtime_loaders(path: Path) -> set[int]:
    # a loader of a kind's runtime: a function whose body is an import and a return
    lines = set()
    for function in ast.walk(ast.parse(path.read_text())):
        if (isinstance(function, ast.FunctionDef) and len(function.body) == 2
                and isinstance(function.body[0], ast.ImportFrom)
                and isinstance(function.body[1], ast.Return)):
            lines.add(function.body[0].lineno)
    return lines


@pytest.mark.skipif(not PYPROJECT.is_file(), reason="an installed package: no pyproject.toml")
def test_every_kind_declaration_an_entry_point_names_is_a_module_of_the_package():
    known = {_module_name(p) for p in ROOT.rglob("*.py")}
    declarations = kind_declarations()
    assert declarations and set(declarations.values()) <= known
    # and every module that registers kinds is named, so none is found only by being imported
    registering = {_module_name(p) for p in ROOT.rglob("*.py")
                   if any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "register"
                          for n in ast.walk(ast.parse(p.read_text())))}
    assert registering - {"simstudy.core.registry"} == set(declarations.values())


def _lazy_exports(path: Path) -> dict[str, str] | None:
    # a package face's ``_EXPORTS = {name: submodule}`` (:mod:`simstudy.core.lazy`)
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets]
                == ["_EXPORTS"] and isinstance(node.value, ast.Dict)):
            return {k.value: v.value for k, v in zip(node.value.keys, node.value.values,
                                                     strict=True)}
    return None


def _defines(path: Path, name: str) -> bool:
    exports = _lazy_exports(path) if path.name == "__init__.py" else None
    if exports and name in exports:  # handed on by a face below
        target = path.parent / Path(*exports[name].split("."))
        return _defines(target.with_suffix(".py") if target.with_suffix(".py").is_file()
                        else target / "__init__.py", name)
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(getattr(t, "id", None) == name for t in targets):
            return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name
                                                    for a in node.names):
            return True
    return False


def test_nothing_is_imported_by_a_name_the_graph_cannot_read():
    # no "module:Name" strings and no import by a computed name; the one exception is the
    # faces' lazy exports (:mod:`simstudy.core.lazy`), whose names the next test resolves
    hidden = sorted(f"{path.relative_to(ROOT.parent)}:{node.lineno}"
                    for path in ROOT.rglob("*.py") for node in ast.walk(ast.parse(path.read_text()))
                    if (isinstance(node, ast.Name) and node.id in {"__import__", "import_module"})
                    or (isinstance(node, ast.Attribute) and node.attr == "import_module"
                        and path != ROOT / "core" / "lazy.py")
                    or (isinstance(node, ast.Constant) and isinstance(node.value, str)
                        and node.value.startswith("simstudy.") and ":" in node.value))
    assert hidden == []


def test_every_lazy_export_of_a_face_resolves_to_a_module_that_defines_it():
    faces = {path: _lazy_exports(path) for path in ROOT.rglob("__init__.py")}
    unresolved = []
    for face, exports in faces.items():
        for name, module in (exports or {}).items():
            target = face.parent / Path(*module.split("."))
            path = target.with_suffix(".py") if target.with_suffix(".py").is_file() \
                else target / "__init__.py"
            if not path.is_file() or not _defines(path, name):
                unresolved.append(f"{face.relative_to(ROOT.parent)}: {name} -> {module}")
    assert sum(bool(e) for e in faces.values()) >= 6 and unresolved == []


def test_no_import_inside_a_function_outside_the_command_line_and_optional_extras():
    # an import inside a function hides an arrow from the graph above (and a cost from the
    # reader); the command line may defer its imports to keep `--help` fast, optional extras
    # are imported where they are used, and a kind's declaration imports its runtime when an
    # entry is first built (the arrow is in the graph above: a deferred import, not a hidden one)
    hidden = []
    declarations = set(kind_declarations().values()) if PYPROJECT.is_file() else set()
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        if module.startswith("simstudy.cli"):
            continue
        loaders = _runtime_loaders(path) if module in declarations else set()
        for line, targets in _imports_inside_functions(path):
            extra = all(t.split(".")[0] in OPTIONAL_READERS for t in targets)
            if not extra and line not in loaders:
                hidden.append(f"{path.relative_to(ROOT.parent)}:{line} {targets}")
    assert not hidden, "imports inside functions:\n" + "\n".join(hidden)


def test_the_hidden_import_finder_sees_one(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    import torch\n    return torch\n")
    assert [t for _, t in _imports_inside_functions(path)] == [["torch"]]
    # a runtime loader (exempt only in a module the entry points name) is an import and a return
    path.write_text("def f():\n    from torch import nn\n    return nn\n")
    assert _runtime_loaders(path) == {2}
