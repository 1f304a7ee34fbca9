"""Worlds learned from data: a causal flow fitted to Loan samples or to a user's CSV file.

Bringing one's own data needs three things, all stated in the scenario document: the CSV file,
which columns are features (numeric columns as they are; a text column becomes a 0/1 feature
through a prefix rule, e.g. ``personal_status_and_sex`` starting with ``male``), and the causal
graph over those features with their roles. The label column gives the decision model's target.
Rows are split into train / validation / deployment by a keyed permutation of the row ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from ..documents import StrictModel
from ..registry import register_world_spec
from ..rng import generator
from .base import FeatureRoles, causal_order_check
from .data import WorldData, sample_world_data
from .decision import ModelCache
from .flow import FlowConfig, cached_causal_flow
from .loan import LoanSCM

__all__ = ["CsvFeature", "CsvSource", "FlowSettings", "CausalFlowWorldSpec", "load_csv_data"]


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
    split: tuple[float, float, float] = (0.5, 0.25, 0.25)

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


def load_csv_data(source: CsvSource, seed: int, base_dir: str | Path = ".") -> WorldData:
    """Reads the features and label of a CSV file and splits its rows (keyed by ``seed``)."""
    path = Path(source.path)
    if not path.is_absolute():
        path = Path(base_dir) / path
    frame = pd.read_csv(path)
    cols = []
    for f in source.features:
        column = f.column or f.name
        if column not in frame.columns:
            raise ValueError(f"{path}: no column {column!r} for feature {f.name!r}")
        values = frame[column]
        if f.startswith is not None:
            values = values.astype(str).str.startswith(f.startswith).astype(np.float64)
        cols.append(pd.to_numeric(values).to_numpy(np.float64))
    if source.label not in frame.columns:
        raise ValueError(f"{path}: no label column {source.label!r}")
    x = torch.from_numpy(np.stack(cols, axis=1))
    y = torch.from_numpy((frame[source.label] == source.positive).to_numpy(np.int64))
    order = torch.from_numpy(generator(seed, "csv-split").permutation(len(frame)))
    x, y = x[order], y[order]
    n_train = int(round(source.split[0] * len(frame)))
    n_val = int(round(source.split[1] * len(frame)))
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
