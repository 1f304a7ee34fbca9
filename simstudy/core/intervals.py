"""Intervals of replication-level figures.

Every table that reports a mean over replications (the recourse summary, the event world's
summary) draws its interval here, so one figure gets one interval wherever it appears.

Example:
    >>> [round(float(v), 3) for v in mean_sd_ci([1.0, 2.0, 3.0])]
    [2.0, 1.0, -0.484, 4.484]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = ["mean_sd_ci"]


def mean_sd_ci(values: Sequence[float], level: float = 0.95
               ) -> tuple[float, float, float, float]:
    """Mean, standard deviation and Student-t interval of replication-level values.

    Non-finite values are dropped; fewer than two values give no spread and no interval.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return (np.nan,) * 4
    m = float(v.mean())
    if len(v) < 2:
        return m, np.nan, np.nan, np.nan
    sd = float(v.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1)) * sd / np.sqrt(len(v))
    return m, sd, m - half, m + half
