"""Who an audit compares: group labels, reference levels, groups and intersection cells.

An audit over attributes ``by`` (``gender``, ``race``, ...) estimates each metric for everyone,
for each level of each attribute and for each cell of their intersection (:func:`groupings`),
and takes gaps ``focal - reference`` of every level against its attribute's reference level and
of every cell against the cell of all reference levels (:func:`comparisons`).

Group codes are named by a :class:`Codebook`: the world's (``FeatureRoles.codebook`` and
``reference_levels``, e.g. the Loan world's gender 0 = female, 1 = male), the population
documents' (``labels`` of the columns they add, e.g. a stylized race) and the generic
``privileged`` column. An attribute nobody labels reads ``attribute=level``.

Example:
    >>> book = Codebook({"gender": {0: "female", 1: "male"}}, {"gender": 1})
    >>> [c.name for c in comparisons(["gender"], {"gender": [0, 1]}, [(0,), (1,)], book)]
    ['gender: female - male']
    >>> [c.name for c in comparisons(["zone"], {"zone": [0, 1]}, [(0,), (1,)])]
    ['zone: zone=1 - zone=0']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.registry import entries

__all__ = ["PRIVILEGED_LABELS", "Codebook", "run_codebook", "Comparison", "comparisons",
           "cell_name", "groupings"]


#: The population rules' own column: 1 = drew the privileged ranking distribution, the
#: reference of its gaps.
PRIVILEGED_LABELS: dict[int, str] = {0: "non-privileged", 1: "privileged"}


@dataclass(frozen=True)
class Codebook:
    """Readable names of group codes and each attribute's reference level.

    Attributes:
        labels: ``{attribute: {code: label}}``.
        reference_levels: the reference (conventionally advantaged) level of an attribute;
            gaps are focal - reference. Other attributes take their smallest level.
    """

    labels: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    reference_levels: Mapping[str, int] = field(default_factory=dict)

    def label(self, attribute: str, level: int) -> str:
        """``female`` for ``(gender, 0)`` when labelled; ``attribute=level`` otherwise."""
        book = {"privileged": PRIVILEGED_LABELS, **self.labels}
        return book.get(attribute, {}).get(int(level), f"{attribute}={int(level)}")

    def reference(self, attribute: str, levels: Sequence[int]) -> int:
        """The attribute's reference level among ``levels``."""
        ref = {"privileged": 1, **self.reference_levels}.get(attribute, min(levels))
        return ref if ref in levels else min(levels)

    def legend(self, by: Sequence[str]) -> str:
        """``gender 0 = female, 1 = male; race 0 = white, 1 = non-white`` for the labelled
        attributes of ``by`` (empty when none is labelled)."""
        return "; ".join(
            f"{a} " + ", ".join(f"{code} = {name}" for code, name in sorted(self.labels[a].items()))
            for a in by if a in self.labels)


def run_codebook(manifest: Mapping[str, Any]) -> tuple[Codebook, list[str]]:
    """The codebook of a run and its default audit attributes, from its manifest's resolved
    documents: the world's roles (codebook, reference levels, sensitive features) and the
    populations' added columns and their labels. A run without resolved documents gets an
    empty codebook and no default attributes."""
    resolved = manifest.get("resolved", {})
    world_doc = resolved.get("scenario", {}).get("world", {})
    labels: dict[str, dict[int, str]] = {}
    references: dict[str, int] = {}
    by: list[str] = []
    spec_cls = entries("world").get(world_doc.get("kind"))
    if spec_cls is not None and hasattr(spec_cls, "roles"):
        roles = spec_cls.model_validate(world_doc).roles()
        labels.update(roles.codebook)
        references.update(roles.reference_levels)
        by += list(roles.sensitive)
    for population in resolved.get("populations", {}).values():
        labels.update({k: {int(c): v for c, v in codes.items()}
                       for k, codes in population.get("labels", {}).items()})
        added = [population.get("stylized_attribute")]
        groups = population.get("groups") or {}
        if groups.get("rule") == "attribute":
            added.append(groups.get("attribute"))
        by += [a for a in added if a is not None and a not in by]
    return Codebook(labels, references), by


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
                 cells: list[tuple[int, ...]], codebook: Codebook = Codebook(),
                 ) -> list[Comparison]:
    """Every level of every attribute against the attribute's reference level, and (with two
    or more attributes) every intersection cell against the cell of all reference levels."""
    out = []
    cell_arr = np.array(cells, dtype=np.int64).reshape(len(cells), len(by))
    ref_of = {}
    for k, attr in enumerate(by):
        ref = codebook.reference(attr, levels[attr])
        ref_of[attr] = ref
        for lev in levels[attr]:
            if lev == ref:
                continue
            focal, reference = codebook.label(attr, lev), codebook.label(attr, ref)
            out.append(Comparison(f"{attr}: {focal} - {reference}", attr, focal, reference,
                                   np.flatnonzero(cell_arr[:, k] == lev),
                                   np.flatnonzero(cell_arr[:, k] == ref)))
    if len(by) >= 2:
        ref_cell = tuple(ref_of[a] for a in by)
        if ref_cell in cells:
            r = cells.index(ref_cell)
            ref_name = cell_name(by, ref_cell, codebook)
            for c, cell in enumerate(cells):
                if c == r:
                    continue
                name = cell_name(by, cell, codebook)
                out.append(Comparison(f"{' x '.join(by)}: {name} - {ref_name}",
                                       " x ".join(by), name, ref_name,
                                       np.array([c]), np.array([r])))
    return out


def cell_name(by: Sequence[str], cell: tuple[int, ...], codebook: Codebook = Codebook()) -> str:
    """``female non-white`` for the cell ``(0, 1)`` of ``gender x race`` (as labelled)."""
    return " ".join(codebook.label(a, v) for a, v in zip(by, cell, strict=True))


def groupings(by: Sequence[str], levels: Mapping[str, list[int]],
              cells: list[tuple[int, ...]], codebook: Codebook = Codebook(),
              ) -> Iterator[tuple[str, str, np.ndarray]]:
    """``(grouping, label, cell indices)``: everyone, each level of each attribute, each cell."""
    yield "all", "all", np.arange(len(cells))
    for k, a in enumerate(by):
        for lev in levels[a]:
            yield a, codebook.label(a, lev), np.array(
                [i for i, c in enumerate(cells) if c[k] == lev])
    if len(by) >= 2:
        for i, cell in enumerate(cells):
            yield " x ".join(by), cell_name(by, cell, codebook), np.array([i])
