"""Worlds learned from data: a causal flow fitted to Loan samples or to a user's CSV file.

Bringing one's own data needs three things, all stated in the scenario document: the CSV file,
which columns are features (numeric columns as they are; a text column becomes a 0/1 feature
through a prefix rule, e.g. ``personal_status_and_sex`` starting with ``male``), and the causal
graph over those features with their roles. The label column gives the decision model's target.
Rows are split into train / validation / deployment by a keyed permutation of the row ids.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..core.rng import generator
from .coded import CodedFlow, dequantized
from .config import FlowSettings
from .csv_source import MIN_ROWS_PER_SPLIT, CsvFeature, CsvProblem, CsvSource, read_csv_source
from .data import WorldData, sample_world_data
from .decision import ModelCache
from .flow import CausalFlow, cached_causal_flow
from .german_credit import GermanCreditWorldSpec
from .loan import LoanSCM
from .specs import CausalFlowWorldSpec

__all__ = ["CsvFeature", "CsvSource", "CsvProblem", "FlowSettings", "CausalFlowWorldSpec",
           "load_csv_data", "read_csv_source", "MIN_ROWS_PER_SPLIT", "build_flow_world",
           "build_german_credit_world"]


def load_csv_data(source: CsvSource, seed: int, base_dir: str | Path = ".") -> WorldData:
    """Reads the features and label of a CSV file and splits its rows (keyed by ``seed``).

    Example:
        >>> import tempfile, pathlib
        >>> from simstudy.world import load_csv_data
        >>> from simstudy.world.csv_source import CsvSource
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> rows = "a,b,y\\n" + "".join(f"{i},{i % 5},{'good' if i % 2 else 'bad'}\\n"
        ...                              for i in range(40))
        >>> _ = (folder / "d.csv").write_text(rows)
        >>> features = [{"name": "a"}, {"name": "b", "parents": ["a"]}]
        >>> source = CsvSource(path="d.csv", features=features, label="y", positive="good",
        ...                    actionable=["b"])
        >>> data = load_csv_data(source, seed=0, base_dir=folder)
        >>> data.roles.names, len(data.x_train) + len(data.x_val) + len(data.x_test)
        (('a', 'b'), 40)
    """
    features, label = read_csv_source(source, base_dir)
    x, y = torch.from_numpy(features), torch.from_numpy(label)
    order = torch.from_numpy(generator(seed, "csv-split").permutation(len(x)))
    x, y = x[order], y[order]
    n_train = int(round(source.split[0] * len(x)))
    n_val = int(round(source.split[1] * len(x)))
    parts = (slice(0, n_train), slice(n_train, n_train + n_val), slice(n_train + n_val, None))
    return WorldData(source.roles(), *(t for s in parts for t in (x[s], y[s])))


def build_flow_world(params: CausalFlowWorldSpec, seed: int, cache: ModelCache | None = None,
                     base_dir: str | Path = ".") -> tuple[CausalFlow, WorldData, dict]:
    """``(CausalFlow, WorldData, info)``: the flow fitted to the entry's data, or read from
    ``cache`` when it holds it (the runtime of the ``causal_flow`` kind).

    The Loan samples are the ``loan`` world's draws of the same seed, so the two worlds
    compare; a CSV file is read relative to ``base_dir``.

    Example:
        >>> spec = CausalFlowWorldSpec(kind="causal_flow", n_samples=300,
        ...                            flow={"hidden": [8], "epochs": 2, "spline_bins": 0})
        >>> flow, data, info = build_flow_world(spec, seed=0)
        >>> flow.roles.names == data.roles.names, info["world"], info["source"]
        (True, 'causal_flow', 'loan')
    """
    if params.source == "loan":
        data = sample_world_data(LoanSCM(), params.n_samples, generator(seed, "world-sample"))
    else:
        data = load_csv_data(params.csv, seed, base_dir)
    x_train, x_val = data.x_train, data.x_val
    if params.dequantize:
        # coded features: the flow is fitted to codes plus centred uniform noise and its
        # values are rounded back to codes (:mod:`simstudy.world.coded`)
        x_train = dequantized(x_train, data.roles, generator(seed, "dequantize-train"))
        x_val = dequantized(x_val, data.roles, generator(seed, "dequantize-val"))
    flow, meta = cached_causal_flow(cache, data.roles, x_train, x_val,
                                    params.flow.config(), params.flow.seed, progress=True)
    if params.dequantize:
        flow = CodedFlow(flow)
    info = {"world": "causal_flow", "source": params.source, "flow": {
        k: meta[k] for k in ("state_dict_sha256", "val_nll", "best_epoch", "cached")
        if k in meta}}
    return flow, data, info


def build_german_credit_world(params: GermanCreditWorldSpec, seed: int,
                              cache: ModelCache | None = None, base_dir: str | Path = "."
                              ) -> tuple[CausalFlow, WorldData, dict]:
    """The German-credit world (the runtime of the ``german_credit`` kind): the CSV causal-flow
    world it stands for (:meth:`GermanCreditWorldSpec.flow_world`), coded features on codes."""
    world, data, info = build_flow_world(params.flow_world(), seed, cache, base_dir)
    return world, data, {**info, "world": "german_credit"}
