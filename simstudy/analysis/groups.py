"""Who an audit compares: group labels, reference levels, groups and intersection cells.

An audit over attributes ``by`` (``gender``, ``race``, ...) estimates each metric for everyone,
for each level of each attribute and for each cell of their intersection (:func:`groupings`),
and takes gaps ``focal - reference`` of every level against its attribute's reference level and
of every cell against the cell of all reference levels (:func:`comparisons`).

Group codes follow the worlds: in the Loan SCM (Karimi et al. 2020) ``gender`` 1 adds to income,
so 1 = male and 0 = female; the stylized ``race`` has 1 = minority (non-white), 0 = white.

Example:
    >>> [c.name for c in comparisons(["gender"], {"gender": [0, 1]}, [(0,), (1,)])]
    ['gender: female - male']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["GROUP_LABELS", "REFERENCE_LEVELS", "group_label", "Comparison", "comparisons",
           "cell_name", "groupings"]


#: Readable names of group codes.
GROUP_LABELS: dict[str, dict[int, str]] = {
    "gender": {0: "female", 1: "male"},
    "race": {0: "white", 1: "non-white"},
    "privileged": {0: "non-privileged", 1: "privileged"},
}

#: The reference (conventionally advantaged) level of each known attribute; gaps are
#: focal - reference. Other attributes take their smallest level as reference.
REFERENCE_LEVELS: dict[str, int] = {"gender": 1, "race": 0, "privileged": 1}


def group_label(attribute: str, level: int) -> str:
    """``female`` for ``(gender, 0)``; ``attribute=level`` for unknown attributes."""
    return GROUP_LABELS.get(attribute, {}).get(int(level), f"{attribute}={int(level)}")


@dataclass
class Comparison:
    """A gap's two sides: its name (``focal - reference``), grouping, labels and the
    intersection cells on each side."""

    name: str
    grouping: str
    focal: str
    reference: str
    focal_cells: np.ndarray
    reference_cells: np.ndarray


def comparisons(by: Sequence[str], levels: Mapping[str, list[int]],
                 cells: list[tuple[int, ...]]) -> list[Comparison]:
    """Every level of every attribute against the attribute's reference level, and (with two
    or more attributes) every intersection cell against the cell of all reference levels."""
    out = []
    cell_arr = np.array(cells, dtype=np.int64).reshape(len(cells), len(by))
    ref_of = {}
    for k, attr in enumerate(by):
        ref = REFERENCE_LEVELS.get(attr, min(levels[attr]))
        ref = ref if ref in levels[attr] else min(levels[attr])
        ref_of[attr] = ref
        for lev in levels[attr]:
            if lev == ref:
                continue
            focal, reference = group_label(attr, lev), group_label(attr, ref)
            out.append(Comparison(f"{attr}: {focal} - {reference}", attr, focal, reference,
                                   np.flatnonzero(cell_arr[:, k] == lev),
                                   np.flatnonzero(cell_arr[:, k] == ref)))
    if len(by) >= 2:
        ref_cell = tuple(ref_of[a] for a in by)
        if ref_cell in cells:
            r = cells.index(ref_cell)
            ref_name = cell_name(by, ref_cell)
            for c, cell in enumerate(cells):
                if c == r:
                    continue
                name = cell_name(by, cell)
                out.append(Comparison(f"{' x '.join(by)}: {name} - {ref_name}",
                                       " x ".join(by), name, ref_name,
                                       np.array([c]), np.array([r])))
    return out


def cell_name(by: Sequence[str], cell: tuple[int, ...]) -> str:
    """``female non-white`` for the cell ``(0, 1)`` of ``gender x race``."""
    return " ".join(group_label(a, v) for a, v in zip(by, cell, strict=True))


def groupings(by: Sequence[str], levels: Mapping[str, list[int]],
              cells: list[tuple[int, ...]]) -> Iterator[tuple[str, str, np.ndarray]]:
    """``(grouping, label, cell indices)``: everyone, each level of each attribute, each cell."""
    yield "all", "all", np.arange(len(cells))
    for k, a in enumerate(by):
        for lev in levels[a]:
            yield a, group_label(a, lev), np.array(
                [i for i, c in enumerate(cells) if c[k] == lev])
    if len(by) >= 2:
        for i, cell in enumerate(cells):
            yield " x ".join(by), cell_name(by, cell), np.array([i])
