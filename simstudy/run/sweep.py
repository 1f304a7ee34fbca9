"""Parameter sweeps: one base scenario, many cells, each a resumable run.

A sweep document names a base scenario and how cells differ from it, by field path::

    name: cost-shapes
    scenario: ../scenarios/quickstart.yaml      # relative to this file
    grid:                                       # every combination of these values
      seed: [0, 1, 2]
      conditions[0].population.cost.shape: [constant, linear, convex]
    variants:                                   # optional: named sets of overrides, each
      - {label: small, set: {applicants.max_applicants: 100}}   # combined with the grid
      - {label: large, set: {applicants.max_applicants: 400}}
      - {label: other, scenario: ../scenarios/other.yaml}       # another base scenario

A field path is dotted keys with ``[i]`` list indexes (``policies[1].epochs``,
``simulation.arrivals.rate_per_day``). A path that enters a condition's population file loads
that file into the cell's scenario first, so population fields can be swept too. Every cell's
scenario is validated like any scenario before anything runs; a problem is reported as
``SWEEP.yaml: cell <label>: field: reason``.

``simstudy sweep SWEEP.yaml --out DIR`` (:func:`simstudy.run.sweep_runner.run_sweep`) runs
every unit of every cell through one executor and one progress bar, each cell into
``DIR/cells/<label>/`` (a normal run directory, resumable), and writes ``DIR/summary.csv``
(every cell's summary rows, one per cell x policy x condition x group, led by the cell's label
and override values) and ``DIR/sweep.json`` (the sweep, every cell's
overrides, resolved-scenario hash and status). An interrupted sweep resumes where it stopped;
rerunning a changed sweep into the same directory refuses cells whose scenario changed.

Example:
    >>> cells = expand_cells({"seed": [0, 1]}, [])
    >>> [c.label for c in cells], cells[1].overrides
    (['seed=0', 'seed=1'], {'seed': 1})
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from ..core.documents import (
    DocumentError,
    DocumentProblem,
    StrictModel,
    load_yaml,
    validate_data,
)
from .scenario import load_scenario

__all__ = ["SweepSpec", "VariantSpec", "Cell", "expand_cells", "set_path", "load_sweep"]

_STEP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[\d+\])*(\.[A-Za-z_][A-Za-z0-9_]*(\[\d+\])*)*$")


def parse_path(path: str) -> list[str | int]:
    """``"conditions[0].population.cost"`` -> ``["conditions", 0, "population", "cost"]``."""
    if not _PATH.match(path):
        raise ValueError(f"not a field path: {path!r} (use dotted keys and [i] indexes)")
    return [int(m.group(2)) if m.group(2) is not None else m.group(1)
            for m in _STEP.finditer(path)]


class VariantSpec(StrictModel):
    """A named set of overrides (field path -> value), optionally on another base scenario."""

    label: str = Field(min_length=1, max_length=60, pattern=r"^[A-Za-z0-9_.\-]+$")
    scenario: str | None = Field(None, description="this variant's base scenario, relative to "
                                                   "the sweep file (default: the sweep's)")
    set: dict[str, Any] = Field(default_factory=dict)


class SweepSpec(StrictModel):
    """A sweep document (see the module docstring)."""

    name: str = Field(min_length=1)
    description: str = ""
    scenario: str = Field(min_length=1, description="the base scenario, relative to this file")
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    variants: list[VariantSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> SweepSpec:
        if not self.grid and not self.variants:
            raise ValueError("a sweep needs a grid or variants")
        for path, values in self.grid.items():
            parse_path(path)
            if not values:
                raise ValueError(f"grid.{path}: needs at least one value")
        for v in self.variants:
            for path in v.set:
                parse_path(path)
        labels = [v.label for v in self.variants]
        dupes = sorted({x for x in labels if labels.count(x) > 1})
        if dupes:
            raise ValueError(f"variant labels must be unique; repeated: {dupes}")
        return self


@dataclass(frozen=True)
class Cell:
    """One cell: its label (also its folder name), its overrides in order, its base."""

    label: str
    overrides: dict[str, Any]
    variant: str | None = None
    scenario: str | None = None


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = re.sub(r"[^A-Za-z0-9_.\-]+", "-", text).strip("-")
    return text[:40] or "x"


def expand_cells(grid: dict[str, list[Any]], variants: list[VariantSpec]) -> list[Cell]:
    """Every variant (or none) combined with every grid point, in document order."""
    paths = list(grid)
    points = list(itertools.product(*(grid[p] for p in paths))) if paths else [()]
    cells = []
    for variant in variants or [None]:
        for point in points:
            overrides = dict(variant.set) if variant is not None else {}
            overrides.update(zip(paths, point, strict=True))
            parts = ([variant.label] if variant is not None else [])
            parts += [f"{p.split('.')[-1]}={_short(v)}" for p, v in zip(paths, point,
                                                                         strict=True)]
            cells.append(Cell("__".join(parts), overrides,
                              variant.label if variant is not None else None,
                              variant.scenario if variant is not None else None))
    labels = [c.label for c in cells]
    if len(set(labels)) != len(labels):
        # two grid paths ending in the same key, or values that shorten alike: number them
        cells = [Cell(f"cell{i:03d}__{c.label}"[:120], c.overrides, c.variant, c.scenario)
                 for i, c in enumerate(cells)]
    return cells


def set_path(doc: dict, path: str, value: Any, base_dir: Path) -> None:
    """Sets ``path`` in ``doc`` (in place). A condition's population given as a file is read
    into the document when the path goes into it. Raises ``ValueError`` naming the problem."""
    steps = parse_path(path)
    node: Any = doc
    for i, step in enumerate(steps[:-1]):
        nxt = steps[i + 1]
        if isinstance(step, int):
            if not isinstance(node, list) or not -len(node) <= step < len(node):
                raise ValueError(f"{path}: no item [{step}] here")
            child = node[step]
        else:
            if not isinstance(node, dict):
                raise ValueError(f"{path}: {step!r} is not inside a mapping")
            child = node.get(step)
            if child is None:
                child = [] if isinstance(nxt, int) else {}
                node[step] = child
            elif step == "population" and isinstance(child, str):
                child = load_yaml(base_dir / child)
                node[step] = child
        if isinstance(nxt, int) and not isinstance(child, list):
            raise ValueError(f"{path}: {step!r} is not a list")
        if isinstance(nxt, str) and not isinstance(child, dict):
            raise ValueError(f"{path}: {step!r} is not a mapping")
        node = child
    last = steps[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or not -len(node) <= last < len(node):
            raise ValueError(f"{path}: no item [{last}] here")
    node[last] = copy.deepcopy(value)


def load_sweep(path: str | Path) -> tuple[SweepSpec, list[tuple[Cell, Path, Any, dict]]]:
    """Reads a sweep, its base scenarios, and validates every cell's scenario.

    Returns ``(spec, [(cell, base_path, scenario, populations), ...])``; raises
    :class:`DocumentError` listing every problem of every cell.
    """
    path = Path(path)
    spec = validate_data(load_yaml(path), SweepSpec, str(path))
    bases: dict[str, tuple[Path, Any]] = {}
    problems: list[DocumentProblem] = []
    where = {spec.scenario: "scenario"}
    where.update({v.scenario: f"variants[{i}].scenario" for i, v in enumerate(spec.variants)
                  if v.scenario is not None})
    for name, field in where.items():
        base_path = (path.parent / name).resolve()
        if not base_path.exists():
            problems.append(DocumentProblem(str(path), field, f"scenario not found: {name}"))
            continue
        base = load_yaml(base_path)
        if not isinstance(base, dict):
            load_scenario(base_path)  # reports the base document's problem
        bases[name] = (base_path, base)
    if problems:
        raise DocumentError(problems)
    cells = []
    for cell in expand_cells(spec.grid, spec.variants):
        base_path, base = bases[cell.scenario or spec.scenario]
        doc = copy.deepcopy(base)
        source = f"{path}: cell {cell.label}"
        try:
            for field_path, value in cell.overrides.items():
                set_path(doc, field_path, value, base_path.parent)
            scenario, populations = load_scenario(base_path, data=doc, source=source)
        except ValueError as exc:
            problems.append(DocumentProblem(str(path), f"cell {cell.label}", str(exc)))
            continue
        except DocumentError as exc:
            problems.extend(exc.problems)
            continue
        cells.append((cell, base_path, scenario, populations))
    if problems:
        raise DocumentError(problems)
    return spec, cells
