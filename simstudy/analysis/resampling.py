"""The audit's resampling steps: per-cell sums, a stratified bootstrap and label permutations.

For one source table (recourse rows or event-world outcomes) and each (policy, condition) block,
:func:`accumulate` collects per replication ``r`` and intersection cell ``c``

* the observed sums ``S[r, c] = sum_i d_i v_i`` and counts ``N[r, c] = sum_i d_i`` of every
  metric (``v`` the person's value, ``d`` whether it is defined);
* their bootstrap replicates ``S*[r, b, c]``, ``N*[r, b, c]``: people resampled with
  replacement within each replication and cell (Efron & Tibshirani 1993, ch. 13), keyed by
  (seed, source, replication, cell) so that conditions facing the same people draw the same
  resample and differences between conditions are paired;
* per comparison ``q`` (focal versus reference cells), the observed within-replication gap and
  ``P`` gaps under random relabelling of the pooled people (Good 2005, ch. 3).

References:
    Efron, B. & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*. Chapman & Hall.
    Good, P. (2005). *Permutation, Parametric and Bootstrap Tests of Hypotheses*. Springer.

Example:
    >>> import numpy as np
    >>> ratio(np.array([2.0, 1.0]), np.array([4.0, 0.0]))
    array([0.5, nan])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.intervals import around
from ..core.rng import generator
from ..metrics import Metric

__all__ = ["CellSums", "accumulate", "ratio", "mean_over_reps", "percentile_interval",
           "random_subsets"]


def ratio(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``s / n`` where ``n > 0``, NaN elsewhere."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.where(n > 0, n, 1), np.nan)


def mean_over_reps(x: np.ndarray) -> np.ndarray:
    """Mean over the first axis (replications), skipping replications that had nobody."""
    with np.errstate(invalid="ignore"):
        cnt = np.isfinite(x).sum(axis=0)
        tot = np.where(np.isfinite(x), x, 0.0).sum(axis=0)
    return np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan)


def percentile_interval(boot: np.ndarray, alpha: float, estimate: float = np.nan
                        ) -> tuple[float, float]:
    """The ``1 - alpha`` percentile interval of the finite bootstrap values, stretched to hold
    the ``estimate`` they resample (:func:`simstudy.core.intervals.around`): the percentile
    interval of a biased statistic (a margin over the runner-up, a gap at a small cell) can lie
    wholly to one side of it. The stretch only widens, so coverage is not lowered."""
    b = boot[np.isfinite(boot)]
    if len(b) < 2:
        return np.nan, np.nan
    lo, hi = np.quantile(b, [alpha / 2, 1 - alpha / 2])
    return around(estimate, float(lo), float(hi))


def random_subsets(rng: np.random.Generator, n: int, k: int, reps: int) -> np.ndarray:
    """``reps`` uniformly random ``k``-subsets of ``range(n)`` (rows of positions)."""
    if k == 0:
        return np.zeros((reps, 0), dtype=np.int64)
    keys = rng.random((reps, n))
    return np.argpartition(keys, k - 1, axis=1)[:, :k]


@dataclass
class CellSums:
    """One block's and metric's sums (see the module docstring for the symbols).

    Attributes:
        s, n: observed ``(R, C)`` sums and counts.
        boot_s, boot_n: bootstrap ``(R, B, C)`` sums and counts.
        gap: observed ``(Q, R)`` focal - reference gaps per comparison and replication.
        perm_gap: ``(Q, R, P)`` gaps under permuted labels.
    """

    s: np.ndarray
    n: np.ndarray
    boot_s: np.ndarray
    boot_n: np.ndarray
    gap: np.ndarray
    perm_gap: np.ndarray

    @classmethod
    def empty(cls, R: int, B: int, C: int, Q: int, P: int) -> CellSums:
        return cls(np.zeros((R, C)), np.zeros((R, C)), np.zeros((R, B, C)), np.zeros((R, B, C)),
                   np.full((Q, R), np.nan), np.full((Q, R, P), np.nan))

    def estimate(self, cells: np.ndarray) -> float:
        """Replication-averaged mean over the people of ``cells``."""
        return float(mean_over_reps(ratio(self.s[:, cells].sum(1), self.n[:, cells].sum(1))))

    def bootstrap(self, cells: np.ndarray) -> np.ndarray:
        """``(B,)`` bootstrap replicates of :meth:`estimate`."""
        return mean_over_reps(ratio(self.boot_s[:, :, cells].sum(2),
                                    self.boot_n[:, :, cells].sum(2)))


def _defined(block: pd.DataFrame, metric: Metric) -> tuple[np.ndarray, np.ndarray]:
    v, d = metric.per_person(block)
    return np.where(d, v, 0.0), d.astype(float)


def accumulate(table: pd.DataFrame, metrics: Mapping[str, Metric], by: Sequence[str],
               cells: list[tuple[int, ...]], comparisons: Sequence, id_column: str,
               source: str, n_bootstrap: int, n_permutations: int, seed: int,
               ) -> dict[tuple, dict[str, CellSums]]:
    """:class:`CellSums` per (policy, condition) block and metric of one source table.

    ``comparisons`` have ``name``, ``focal_cells`` and ``reference_cells`` (indices into
    ``cells``); ``cells`` are the intersection cells (tuples of group codes, one per ``by``).
    """
    cell_index = {c: i for i, c in enumerate(cells)}
    reps = sorted(int(r) for r in table["replication"].unique())
    blocks = list(table.groupby(["policy", "condition"], sort=False).groups)
    sums = {k: {m: CellSums.empty(len(reps), n_bootstrap, len(cells), len(comparisons),
                                  n_permutations) for m in metrics} for k in blocks}
    for ri, r in enumerate(reps):
        sub = table[table["replication"] == r]
        # The same people in every condition give the same draws: drawn once, reused.
        draws: dict[tuple, np.ndarray] = {}
        subsets: dict[tuple, np.ndarray] = {}
        for key in blocks:
            block = sub[(sub["policy"] == key[0]) & (sub["condition"] == key[1])]
            block = block.sort_values(id_column, kind="stable")
            ids = block[id_column].to_numpy(np.int64)
            code = np.array([cell_index[tuple(int(v) for v in row)]
                             for row in block[list(by)].to_numpy()], dtype=np.int64)
            values = {m: _defined(block, d) for m, d in metrics.items()}
            _bootstrap_block(sums[key], values, ri, r, code, ids, cells, draws, source,
                             n_bootstrap, seed)
            _permute_block(sums[key], values, ri, r, code, ids, comparisons, subsets, source,
                           n_permutations, seed)
    return sums


def _bootstrap_block(sums: dict[str, CellSums], values: dict, ri: int, r: int, code: np.ndarray,
                     ids: np.ndarray, cells: list, draws: dict, source: str, B: int,
                     seed: int) -> None:
    for c in range(len(cells)):
        pos = np.flatnonzero(code == c)
        if len(pos) == 0:
            continue
        # Keyed by cell and replication only: every condition and policy facing the same
        # people draws the same resample (paired contrasts).
        key = (r, c, len(pos), hash(ids[pos].tobytes()))
        if key not in draws:
            rng = generator(seed, "audit-bootstrap", source, r, *cells[c])
            draws[key] = rng.integers(0, len(pos), size=(B, len(pos)))
        idx = pos[draws[key]]
        for m, (v, d) in values.items():
            cs = sums[m]
            cs.s[ri, c], cs.n[ri, c] = v[pos].sum(), d[pos].sum()
            cs.boot_s[ri, :, c] = v[idx].sum(axis=1)
            cs.boot_n[ri, :, c] = d[idx].sum(axis=1)


def _permute_block(sums: dict[str, CellSums], values: dict, ri: int, r: int, code: np.ndarray,
                   ids: np.ndarray, comparisons: Sequence, subsets: dict, source: str, P: int,
                   seed: int) -> None:
    for q, comp in enumerate(comparisons):
        fpos = np.flatnonzero(np.isin(code, comp.focal_cells))
        rpos = np.flatnonzero(np.isin(code, comp.reference_cells))
        if len(fpos) == 0 or len(rpos) == 0:
            continue
        pool = np.concatenate([fpos, rpos])
        key = (r, q, len(fpos), len(pool), hash(ids[pool].tobytes()))
        if key not in subsets:
            rng = generator(seed, "audit-permutation", source, r, comp.name)
            subsets[key] = random_subsets(rng, len(pool), len(fpos), P)
        sel = pool[subsets[key]]
        for m, (v, d) in values.items():
            s_tot, n_tot = v[pool].sum(), d[pool].sum()
            s_f, n_f = v[sel].sum(axis=1), d[sel].sum(axis=1)
            sums[m].perm_gap[q, ri] = ratio(s_f, n_f) - ratio(s_tot - s_f, n_tot - n_f)
            sums[m].gap[q, ri] = (ratio(v[fpos].sum(), d[fpos].sum())
                                  - ratio(v[rpos].sum(), d[rpos].sum()))
