"""Writes the rating tables the family tests fit (run from the repository root).

Usage: python tests/data/gamm_families/make_data.py
Then: Rscript tests/data/gamm_families/make_reference.R   (writes the mgcv fits as JSON)
"""

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
CUTS = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5])  # latent logistic -> 7 categories


def _design(rng, n_people, items, distance):
    uid = np.repeat(np.arange(n_people), items)
    if distance == "sparsity":
        x = rng.integers(1, 13, uid.size).astype(float)
    else:
        x = np.round(rng.gamma(2.0, 0.6, uid.size), 3)
    return uid, x


def _table(seed, family, distance, effect, n_people=80, items=5, sd_intercept=0.8,
           shift=0.3):
    rng = np.random.default_rng(seed)
    uid, x = _design(rng, n_people, items, distance)
    scale = 12.0 if distance == "sparsity" else 3.0
    f = {"none": 0.0 * x, "linear": -1.2 * x / scale,
         "plateau": -1.5 * np.minimum(x / scale, 0.35) / 0.35}[effect]
    eta = f + rng.normal(0, sd_intercept, n_people)[uid] + rng.normal(0, 0.05, n_people)[uid] * x
    if family == "binomial":
        y = (rng.uniform(size=x.size) < 1 / (1 + np.exp(-(0.4 + eta)))).astype(int)
    else:
        latent = shift + eta + rng.logistic(size=x.size)
        y = 1 + np.searchsorted(CUTS, latent)
    col = "sparsity" if distance == "sparsity" else "proximity"
    out = pd.DataFrame({"uid": uid, col: x, "y": y})
    if distance == "sparsity":
        out[col] = out[col].astype(int)
    return out


def _two_optima(seed=185, n_people=60, items=5):
    # A null Gaussian study whose REML criterion has a near-linear and a wigglier optimum.
    rng = np.random.default_rng(seed)
    uid = np.repeat(np.arange(n_people), items)
    x = rng.integers(1, 13, uid.size)
    y = 3.5 + rng.normal(0, 0.9, n_people)[uid] + rng.normal(0, 1.1, uid.size)
    return pd.DataFrame({"uid": uid, "sparsity": x,
                         "rating": np.clip(np.round(y), 1, 7).astype(int)})


DATASETS = {
    "binomial_linear": (11, "binomial", "sparsity", "linear"),
    "binomial_none": (12, "binomial", "proximity", "none"),
    "binomial_plateau": (13, "binomial", "proximity", "plateau"),
    "ocat_linear": (21, "ocat", "sparsity", "linear"),
    "ocat_none": (22, "ocat", "proximity", "none"),
    "ocat_plateau": (23, "ocat", "proximity", "plateau"),
    "ocat_three_values": (24, "ocat", "sparsity", "linear"),
}

# Nobody answers the top category and the participant intercept SD is small: the criterion is
# flat as that SD goes to zero, where a fit can stop early (seed 7 of a search over seeds).
EMPTY_TOP = {"ocat_empty_top": (7, "ocat", "sparsity", "linear",
                                dict(n_people=40, sd_intercept=0.15, shift=-2.5))}


if __name__ == "__main__":
    for name, (seed, family, distance, effect) in DATASETS.items():
        table = _table(seed, family, distance, effect)
        if name.endswith("three_values"):
            table["sparsity"] = np.clip(table["sparsity"], 1, 3)
        table.to_csv(HERE / f"{name}.csv", index=False)
    for name, (seed, family, distance, effect, kw) in EMPTY_TOP.items():
        _table(seed, family, distance, effect, **kw).to_csv(HERE / f"{name}.csv", index=False)
    _two_optima().to_csv(HERE / "two_optima.csv", index=False)
