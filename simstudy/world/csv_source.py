"""A CSV world's data file: its document entry (:class:`CsvSource`) and its one reader.

The same reader serves ``simstudy validate`` (every data problem is reported before any work
starts) and the run (:func:`simstudy.world.learned.load_csv_data`), so a file that validates is
read identically later. It uses the standard library's :mod:`csv` and numpy rather than pandas:
validating a scenario must take well under a second, and importing pandas alone costs about
half of that. Cells are read the way ``pandas.read_csv`` reads them where it matters here: the
same missing-value markers, a column is numeric when all its present cells are numbers (then a
label compares by number), and text columns compare as text.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> rows = "a,b,y\\n" + "".join(f"{i},{i % 3},{'good' if i % 2 else 'bad'}\\n"
    ...                              for i in range(40))
    >>> _ = (folder / "d.csv").write_text(rows)
    >>> source = CsvSource(path="d.csv", features=[{"name": "a"}, {"name": "b", "parents": ["a"]}],
    ...                    label="y", positive="good", actionable=["b"])
    >>> x, y = read_csv_source(source, folder)
    >>> x.shape, int(y.sum())
    ((40, 2), 20)
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from ..core.documents import FieldProblem, StrictModel
from .base import FeatureRoles, causal_order_check
from .config import SplitShares

__all__ = ["CsvFeature", "CsvSource", "CsvProblem", "read_csv_source", "MIN_ROWS_PER_SPLIT"]

MIN_ROWS_PER_SPLIT = 10

# pandas.read_csv's default missing-value markers
_MISSING = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
                      "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a",
                      "nan", "null"})
_BOOLEANS = {"True": 1.0, "TRUE": 1.0, "true": 1.0, "False": 0.0, "FALSE": 0.0, "false": 0.0}


class CsvFeature(StrictModel):
    """One feature read from a CSV column.

    Attributes:
        name: feature name in the world.
        column: CSV column (defaults to ``name``).
        startswith: for a text column, the feature is 1 where the text starts with this prefix
            and 0 elsewhere.
        codes: for a text column of categories, the code of each category (every present cell
            must be one of them).
        parents: the feature's causal parents (names of earlier features).
    """

    name: str
    column: str | None = None
    startswith: str | None = None
    codes: dict[str, int] | None = None
    parents: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_rule(self) -> CsvFeature:
        if self.startswith is not None and self.codes is not None:
            raise ValueError("give `startswith` or `codes`, not both")
        return self


class CsvSource(StrictModel):
    """A CSV file with features (in causal order), their graph and roles, and a label."""

    path: str
    features: list[CsvFeature] = Field(min_length=2)
    label: str
    positive: str | int | float
    immutable: list[str] = Field(default_factory=list)
    actionable: list[str] = Field(min_length=1)
    sensitive: list[str] = Field(default_factory=list)
    income: str | None = Field(None, description="the income-like feature a population's "
                                                 "`income` group rule ranks on")
    codebook: dict[str, dict[int, str]] = Field(
        default_factory=dict, description="labels of coded values: {feature: {code: label}}")
    reference_levels: dict[str, int] = Field(
        default_factory=dict, description="reference level of a coded feature in audit gaps")
    scales: dict[str, Literal["ordinal", "categorical"]] = Field(
        default_factory=dict, description="how a coded feature's codes are measured: ordinal "
                                          "(ordered; the default) or categorical (unordered)")
    split: SplitShares = (0.5, 0.25, 0.25)

    @model_validator(mode="after")
    def _check_names(self) -> CsvSource:
        names = [f.name for f in self.features]
        if len(set(names)) != len(names):
            raise ValueError("feature names must be unique")
        for group in ("immutable", "actionable", "sensitive"):
            unknown = set(getattr(self, group)) - set(names)
            if unknown:
                raise ValueError(f"{group} names unknown features: {sorted(unknown)}")
        both = sorted(set(self.immutable) & set(self.actionable))
        if both:
            raise ValueError(f"features both actionable and immutable: {both}; a feature "
                             "nobody can change cannot be acted on")
        unscaled = sorted(set(self.scales) - set(self.codebook))
        if unscaled:
            raise ValueError(f"scales name features without a codebook: {unscaled}")
        coded = {*self.codebook, *self.reference_levels} | ({self.income} - {None})
        if coded - set(names):
            raise ValueError(f"income, codebook or reference_levels name unknown features: "
                             f"{sorted(coded - set(names))}")
        for f in self.features:
            unknown = set(f.parents) - set(names)
            if unknown:
                raise ValueError(f"parents of {f.name!r} are unknown features: {sorted(unknown)}")
        causal_order_check(self.roles())
        return self

    def roles(self) -> FeatureRoles:
        return FeatureRoles(tuple(f.name for f in self.features), tuple(self.immutable),
                            tuple(self.actionable), tuple(self.sensitive),
                            {f.name: tuple(f.parents) for f in self.features},
                            income=self.income, codebook=dict(self.codebook),
                            reference_levels=dict(self.reference_levels),
                            scales=dict(self.scales))


class CsvProblem(FieldProblem):
    """A CSV file that cannot give a world's data; ``field`` is the path in the ``csv:`` entry."""


def _number(cell: str) -> float | None:
    # a number as pandas reads one (surrounding blanks allowed, no digit separators)
    if "_" in cell:
        return None
    try:
        return float(cell)
    except ValueError:
        return None


class _Column:
    """One column's cells, with pandas' reading of them: missing, numeric or text."""

    def __init__(self, cells: list[str]):
        self.cells = cells
        self.missing = np.array([c in _MISSING for c in cells], dtype=bool)
        present = [c for c, m in zip(cells, self.missing, strict=True) if not m]
        if present and not self.missing.any() and all(c in _BOOLEANS for c in present):
            self.kind = "bool"
            self.numbers = np.array([_BOOLEANS[c] for c in cells])
            return
        numbers = [math.nan if m else _number(c) for c, m in zip(cells, self.missing,
                                                                 strict=True)]
        self.text_rows = np.array([v is None for v in numbers], dtype=bool)
        self.numbers = np.array([math.nan if v is None else v for v in numbers])
        self.kind = "text" if self.text_rows.any() else "number"
        self.integral = self.kind == "number" and all(
            c.strip().lstrip("+-").isdigit() for c in present)

    def as_text(self) -> list[str]:
        """The cells as ``astype(str)`` gives them (numbers rendered, missing as ``nan``)."""
        if self.kind == "bool":
            return [str(bool(v)) for v in self.numbers]
        if self.kind == "number":
            return ["nan" if m else (str(int(v)) if self.integral else repr(float(v)))
                    for v, m in zip(self.numbers, self.missing, strict=True)]
        return ["nan" if m else c for c, m in zip(self.cells, self.missing, strict=True)]

    def equals(self, value: str | int | float) -> np.ndarray:
        """Rows equal to ``value``: numbers compare with numbers, text with text."""
        if self.kind == "text":
            if not isinstance(value, str):
                return np.zeros(len(self.cells), dtype=bool)
            return np.array([not m and c == value for c, m in zip(self.cells, self.missing,
                                                                   strict=True)], dtype=bool)
        if isinstance(value, str):
            return np.zeros(len(self.cells), dtype=bool)
        return self.numbers == float(value)


def _read(path: Path) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            rows = [row for row in csv.reader(handle) if row]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CsvProblem("csv.path", f"cannot read {path} as CSV: {reason}") from None
    if not rows:
        raise CsvProblem("csv.path", f"cannot read {path} as CSV: No columns to parse from file")
    header, body = rows[0], rows[1:]
    for i, row in enumerate(body):
        if len(row) > len(header):
            raise CsvProblem("csv.path", (
                f"cannot read {path} as CSV: row {i + 2} has {len(row)} fields, the header "
                f"{len(header)}"))
    return header, [row + [""] * (len(header) - len(row)) for row in body]


def _first_row(mask: np.ndarray) -> int:
    # rows as a spreadsheet shows them: the header is row 1
    return int(np.flatnonzero(mask)[0]) + 2


def read_csv_source(source: CsvSource, base_dir: str | Path = ".") -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """Reads and checks the features and the 0/1 label of a CSV file, in file order.

    Raises:
        CsvProblem: the file is missing or unreadable, a column is absent, not numeric or not
            finite, the positive label matches no row or every row, or there are too few rows.
    """
    path = Path(source.path)
    if not path.is_absolute():
        path = Path(base_dir) / path
    if not path.is_file():
        raise CsvProblem("csv.path", f"file not found: {path}")
    header, body = _read(path)
    position = {name: i for i, name in reversed(list(enumerate(header)))}
    columns = ", ".join(header)

    def column(name: str) -> _Column:
        return _Column([row[position[name]] for row in body])

    cols = []
    for i, f in enumerate(source.features):
        name = f.column or f.name
        field = f"csv.features[{i}]." + ("column" if f.column else "name")
        if name not in position:
            raise CsvProblem(field, f"no column {name!r} in {path} (columns: {columns})")
        raw = column(name)
        if f.startswith is not None:
            values = np.array([t.startswith(f.startswith) for t in raw.as_text()],
                              dtype=np.float64)
        elif f.codes is not None:
            text = raw.as_text()
            unknown = np.array([not m and t not in f.codes
                                for t, m in zip(text, raw.missing, strict=True)], dtype=bool)
            if unknown.any():
                row = _first_row(unknown)
                raise CsvProblem(f"csv.features[{i}].codes", (
                    f"column {name!r} has a category without a code (row {row}: "
                    f"{text[row - 2]!r})"))
            values = np.array([math.nan if m else float(f.codes[t])
                               for t, m in zip(text, raw.missing, strict=True)])
        else:
            if raw.kind == "text":
                row = _first_row(raw.text_rows)
                raise CsvProblem(field, f"column {name!r} is not numeric (row {row}: "
                                        f"{raw.cells[row - 2]!r})")
            values = raw.numbers.astype(np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            raise CsvProblem(field, f"column {name!r} has {int(bad.sum())} missing or "
                                    f"infinite value(s) (first at row {_first_row(bad)})")
        cols.append(values)
    if source.label not in position:
        raise CsvProblem("csv.label", f"no column {source.label!r} in {path} "
                                      f"(columns: {columns})")
    label = column(source.label)
    y = label.equals(source.positive).astype(np.int64)
    if y.sum() == 0 or y.sum() == len(y):
        present = [t for t, m in zip(label.as_text(), label.missing, strict=True) if not m]
        seen = sorted(set(present))[:5]
        what = "no row" if y.sum() == 0 else "every row"
        raise CsvProblem("csv.positive", f"{source.positive!r} matches {what} of column "
                                         f"{source.label!r} (values: {', '.join(seen)}); the "
                                         "decision model needs both classes")
    smallest = int(len(body) * min(source.split))
    if smallest < MIN_ROWS_PER_SPLIT:
        raise CsvProblem("csv.path", f"{len(body)} rows are too few: the smallest split "
                                     f"would hold {smallest} (at least {MIN_ROWS_PER_SPLIT} "
                                     "needed)")
    return np.stack(cols, axis=1), y
