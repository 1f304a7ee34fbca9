"""Worlds learned from data: a causal flow fitted to Loan samples or to a user's CSV file.

Bringing one's own data needs three things, all stated in the scenario document: the CSV file,
which columns are features (numeric columns as they are; a text column becomes a 0/1 feature
through a prefix rule, e.g. ``personal_status_and_sex`` starting with ``male``), and the causal
graph over those features with their roles. The label column gives the decision model's target.
Rows are split into train / validation / deployment by a keyed permutation of the row ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from ..documents import FieldProblem, StrictModel
from ..registry import register_world_spec
from ..rng import generator
from .base import FeatureRoles, causal_order_check
from .data import SplitShares, WorldData, sample_world_data
from .decision import ModelCache
from .flow import FlowConfig, cached_causal_flow
from .loan import LOAN_ROLES, LoanSCM

__all__ = ["CsvFeature", "CsvSource", "CsvProblem", "FlowSettings", "CausalFlowWorldSpec",
           "load_csv_data", "read_csv_source", "MIN_ROWS_PER_SPLIT"]


class CsvFeature(StrictModel):
    """One feature read from a CSV column.

    Attributes:
        name: feature name in the world.
        column: CSV column (defaults to ``name``).
        startswith: for a text column, the feature is 1 where the text starts with this prefix
            and 0 elsewhere.
        parents: the feature's causal parents (names of earlier features).
    """

    name: str
    column: str | None = None
    startswith: str | None = None
    parents: list[str] = Field(default_factory=list)


class CsvSource(StrictModel):
    """A CSV file with features (in causal order), their graph and roles, and a label."""

    path: str
    features: list[CsvFeature] = Field(min_length=2)
    label: str
    positive: str | int | float
    immutable: list[str] = Field(default_factory=list)
    actionable: list[str] = Field(min_length=1)
    sensitive: list[str] = Field(default_factory=list)
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
        for f in self.features:
            unknown = set(f.parents) - set(names)
            if unknown:
                raise ValueError(f"parents of {f.name!r} are unknown features: {sorted(unknown)}")
        causal_order_check(self.roles())
        return self

    def roles(self) -> FeatureRoles:
        return FeatureRoles(tuple(f.name for f in self.features), tuple(self.immutable),
                            tuple(self.actionable), tuple(self.sensitive),
                            {f.name: tuple(f.parents) for f in self.features})


MIN_ROWS_PER_SPLIT = 10


class CsvProblem(FieldProblem):
    """A CSV file that cannot give a world's data; ``field`` is the path in the ``csv:`` entry."""


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
    try:
        frame = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, pd.errors.EmptyDataError,
            pd.errors.ParserError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CsvProblem("csv.path", f"cannot read {path} as CSV: {reason}") from None
    columns = ", ".join(map(str, frame.columns))
    cols = []
    for i, f in enumerate(source.features):
        column = f.column or f.name
        field = f"csv.features[{i}]." + ("column" if f.column else "name")
        if column not in frame.columns:
            raise CsvProblem(field, f"no column {column!r} in {path} (columns: {columns})")
        raw = frame[column]
        if f.startswith is not None:
            values = raw.astype(str).str.startswith(f.startswith).astype(np.float64)
        else:
            values = pd.to_numeric(raw, errors="coerce")
            text = values.isna() & raw.notna()
            if text.any():
                row = _first_row(text.to_numpy())
                raise CsvProblem(field, f"column {column!r} is not numeric (row {row}: "
                                        f"{raw[text].iloc[0]!r})")
        values = values.to_numpy(np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            raise CsvProblem(field, f"column {column!r} has {int(bad.sum())} missing or "
                                    f"infinite value(s) (first at row {_first_row(bad)})")
        cols.append(values)
    if source.label not in frame.columns:
        raise CsvProblem("csv.label", f"no column {source.label!r} in {path} "
                                      f"(columns: {columns})")
    y = (frame[source.label] == source.positive).to_numpy(np.int64)
    if y.sum() == 0 or y.sum() == len(y):
        seen = sorted(map(str, frame[source.label].dropna().unique()))[:5]
        what = "no row" if y.sum() == 0 else "every row"
        raise CsvProblem("csv.positive", f"{source.positive!r} matches {what} of column "
                                         f"{source.label!r} (values: {', '.join(seen)}); the "
                                         "decision model needs both classes")
    smallest = int(len(frame) * min(source.split))
    if smallest < MIN_ROWS_PER_SPLIT:
        raise CsvProblem("csv.path", f"{len(frame)} rows are too few: the smallest split "
                                     f"would hold {smallest} (at least {MIN_ROWS_PER_SPLIT} "
                                     "needed)")
    return np.stack(cols, axis=1), y


def load_csv_data(source: CsvSource, seed: int, base_dir: str | Path = ".") -> WorldData:
    """Reads the features and label of a CSV file and splits its rows (keyed by ``seed``)."""
    features, label = read_csv_source(source, base_dir)
    x, y = torch.from_numpy(features), torch.from_numpy(label)
    order = torch.from_numpy(generator(seed, "csv-split").permutation(len(x)))
    x, y = x[order], y[order]
    n_train = int(round(source.split[0] * len(x)))
    n_val = int(round(source.split[1] * len(x)))
    parts = (slice(0, n_train), slice(n_train, n_train + n_val), slice(n_train + n_val, None))
    return WorldData(source.roles(), *(t for s in parts for t in (x[s], y[s])))


class FlowSettings(StrictModel):
    """Architecture and training of the causal flow (see :class:`FlowConfig`)."""

    hidden: list[int] = Field(default_factory=lambda: [64, 64])
    layers: int = Field(1, ge=1)
    spline_bins: int = Field(8, ge=0)
    epochs: int = Field(300, ge=1)
    batch_size: int = Field(256, ge=1)
    lr: float = Field(3e-3, gt=0)
    patience: int = Field(25, ge=0)
    seed: int = 0

    def config(self) -> FlowConfig:
        return FlowConfig(hidden=tuple(self.hidden), layers=self.layers,
                          spline_bins=self.spline_bins, epochs=self.epochs,
                          batch_size=self.batch_size, lr=self.lr, patience=self.patience)


@register_world_spec
class CausalFlowWorldSpec(StrictModel):
    """A causal flow fitted to data: Loan samples (``source: loan``) or a CSV file.

    The data keep their own labels (the Loan SCM's ground truth or the CSV's label column); the
    flow replaces the known SCM for abduction, counterfactuals and densities.
    """

    kind: Literal["causal_flow"]
    #: a learned flow has no label rule, so the event world cannot retrain on it
    labels: ClassVar[bool] = False
    name: str | None = None
    source: Literal["loan", "csv"] = "loan"
    n_samples: int = Field(20000, ge=100)
    csv: CsvSource | None = None
    flow: FlowSettings = Field(default_factory=FlowSettings)

    @classmethod
    def check_example(cls) -> dict:
        """A small, briefly trained flow for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "causal_flow", "n_samples": 400,
                "flow": {"hidden": [16], "epochs": 3, "spline_bins": 4}}

    @model_validator(mode="after")
    def _check_source(self) -> CausalFlowWorldSpec:
        if (self.source == "csv") != (self.csv is not None):
            raise ValueError("give `csv` exactly when source is 'csv'")
        return self

    def feature_names(self) -> tuple[str, ...]:
        if self.csv is None:
            return LOAN_ROLES.names
        return tuple(f.name for f in self.csv.features)

    def data_files(self, base_dir: str | Path = ".") -> list[Path]:
        """The files the world reads (their hashes are part of a run's resume key)."""
        if self.csv is None:
            return []
        path = Path(self.csv.path)
        return [path if path.is_absolute() else Path(base_dir) / path]

    def check_data(self, base_dir: str | Path = ".") -> list[tuple[str, str]]:
        """``(field, reason)`` for every problem of the data file (read at validation)."""
        if self.csv is None:
            return []
        try:
            read_csv_source(self.csv, base_dir)
        except CsvProblem as exc:
            return [(exc.field, exc.reason)]
        return []

    def build(self, seed: int, cache: ModelCache | None = None,
              base_dir: str | Path = ".") -> tuple:
        if self.source == "loan":
            # the same draws as the ``loan`` world of the same seed, so the two compare
            data = sample_world_data(LoanSCM(), self.n_samples, generator(seed, "world-sample"))
        else:
            data = load_csv_data(self.csv, seed, base_dir)
        flow, meta = cached_causal_flow(cache, data.roles, data.x_train, data.x_val,
                                        self.flow.config(), self.flow.seed, progress=True)
        info = {"world": "causal_flow", "source": self.source, "flow": {
            k: meta[k] for k in ("state_dict_sha256", "val_nll", "best_epoch", "cached")
            if k in meta}}
        return flow, data, info
