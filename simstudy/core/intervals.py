"""Confidence intervals that stay inside their metric's range: one rule for every table.

A population metric is a mean over replications of a per-replication figure. Its interval
follows what the metric's values can be (:attr:`simstudy.metrics.Metric.values`):

* ``proportion`` (a share of 0/1 values: validity, plausibility, ...): the Wilson (1927) score
  interval at an *effective sample size*. With replication shares p_r over n_r people and
  their mean p, the variance of p is taken as the larger of the binomial variance and the
  spread between replications,

      v = max(p (1 - p) h, (t_{R-1} / z)^2 s^2 / R),   h = (1 / R^2) sum_r 1 / n_r,

  (s^2 the sample variance of the p_r, R >= 2 replications; the factor (t_{R-1} / z)^2 is Korn
  & Graubard's degrees-of-freedom adjustment of a variance estimated from R replications, so
  near p = 1/2 the interval is as wide as the Student-t one), and n_eff = p (1 - p) / v (1 / h
  when v = 0). The interval is the set of proportions pi with

      |p - pi| <= z sqrt(pi (1 - pi) / n_eff),

  i.e. (p + z^2 / 2n - z sqrt(p (1 - p) / n + z^2 / 4n^2)) / (1 + z^2 / n) to the same with
  ``+``, n = n_eff. It lies in [0, 1] for every p in [0, 1] and n > 0, is never empty, and
  a single replication gets the plain Wilson interval over its people.
* ``nonnegative`` (costs, distances, durations) and ``real``: the Student-t interval over
  replications, intersected with the range. The true mean lies in the range, so the
  intersection covers it exactly as often as the t interval does.

:func:`metric_interval` applies the rule; the run summary (``summary.csv``) and the fairness
audit both call it, so the same figure gets the same interval in both.

References:
    Wilson, E. B. (1927), "Probable inference, the law of succession, and statistical
    inference", JASA 22:209-212. Kish, L. (1965), *Survey Sampling*, Wiley (the design effect).
    Korn, E. L. & Graubard, B. I. (1998), "Confidence intervals for proportions with small
    expected number of positive counts estimated from survey data", Survey Methodology
    24:193-201 (intervals for proportions at an effective sample size).

Example:
    >>> lo, hi = proportion_interval([0.9, 1.0, 0.6], [10, 12, 9])
    >>> 0.0 <= lo < 0.833 < hi <= 1.0
    True
    >>> [round(v, 3) for v in wilson_interval(0.0, 20)]
    [0.0, 0.161]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import stats

from .bounds import VALUE_RANGES

__all__ = ["VALUE_RANGES", "wilson_interval", "clopper_pearson", "proportion_interval",
           "t_interval", "metric_interval", "mean_sd_ci", "wald_interval", "around"]


def around(estimate: float, lower: float, upper: float) -> tuple[float, float]:
    """``(lower, upper)`` stretched to hold ``estimate``: every interval here is computed as the
    estimate minus and plus a non-negative distance, so an estimate outside its interval is
    rounding (Wilson's bound at ``p = 1`` was ``1 - 2^-53``) or a bootstrap distribution lying
    to one side of a biased statistic; either way the reported interval holds its estimate.
    A non-finite estimate leaves the interval as it is.

    Example:
        >>> around(1.0, 0.7, 0.9999999999999999)
        (0.7, 1.0)
    """
    if not np.isfinite(estimate):
        return float(lower), float(upper)
    return float(min(lower, estimate)), float(max(upper, estimate))



def wilson_interval(p: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` (in [0, 1]) observed over ``n``
    (possibly an effective, fractional) trials; NaN when ``n <= 0`` or ``p`` is not finite.

    The bounds are written as ``p`` minus and plus their distances from it,

        p - lower = (half + z^2/n (p - 1/2)) / (1 + z^2/n),
        upper - p = (half - z^2/n (p - 1/2)) / (1 + z^2/n),
        half = z sqrt(p (1 - p) / n + z^2 / 4n^2),

    both non-negative in exact arithmetic and clipped at 0 against rounding, then the bounds
    clipped to [0, 1]: the interval holds ``p``, 0 and 1 included, by construction.
    """
    if not (np.isfinite(p) and n > 0):
        return np.nan, np.nan
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"a proportion is in [0, 1], got {p}")
    z = float(stats.norm.ppf(0.5 + level / 2))
    z2n = z * z / n
    half = z * np.sqrt(max(p * (1 - p), 0.0) / n + z2n / (4 * n))
    shift = z2n * (p - 0.5)
    below = max(0.0, (half + shift) / (1 + z2n))
    above = max(0.0, (half - shift) / (1 + z2n))
    return float(max(0.0, p - below)), float(min(1.0, p + above))


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial confidence interval for a proportion (power's interval over simulations):
    the ``(1 - level) / 2`` quantile of Beta(k, n - k + 1) and the ``(1 + level) / 2``
    quantile of Beta(k + 1, n - k), 0 at ``k = 0`` and 1 at ``k = n``; it holds ``k / n``.
    NaN when ``trials <= 0``.

    References:
        Clopper & Pearson, "The use of confidence or fiducial limits illustrated in the case of
        the binomial", Biometrika 26(4):404-413, 1934, https://doi.org/10.1093/biomet/26.4.404.

    Example:
        >>> [round(v, 3) for v in clopper_pearson(8, 10)]
        [0.444, 0.975]
    """
    if trials <= 0:
        return np.nan, np.nan
    if not 0 <= successes <= trials:
        raise ValueError(f"successes {successes} outside 0..{trials}")
    a = 1.0 - level
    lo = 0.0 if successes == 0 else stats.beta.ppf(a / 2, successes, trials - successes + 1)
    hi = 1.0 if successes == trials else stats.beta.ppf(1 - a / 2, successes + 1,
                                                         trials - successes)
    return around(successes / trials, lo, hi)


def wald_interval(estimate: float, se: float, level: float = 0.95,
                  df: float | None = None) -> tuple[float, float]:
    """``estimate -/+ z se`` (``z`` the normal quantile of ``(1 + level) / 2``, or Student's t
    quantile on ``df`` degrees of freedom where given); NaN when the standard error is not a
    finite non-negative number.

    Example:
        >>> [round(v, 3) for v in wald_interval(1.0, 0.5)]
        [0.02, 1.98]
        >>> [round(v, 3) for v in wald_interval(1.0, 0.5, df=29)]
        [-0.023, 2.023]
    """
    if not (np.isfinite(se) and se >= 0 and np.isfinite(estimate)):
        return np.nan, np.nan
    q = stats.norm.ppf(0.5 + level / 2) if df is None else stats.t.ppf(0.5 + level / 2, df)
    half = float(q) * float(se)
    return float(estimate - half), float(estimate + half)


def proportion_interval(shares: Sequence[float], counts: Sequence[float],
                        level: float = 0.95) -> tuple[float, float]:
    """Wilson interval of the mean of replication shares at their effective sample size
    (see the module docstring). Replications with nobody counted are left out."""
    p_r = np.asarray(shares, dtype=float)
    n_r = np.asarray(counts, dtype=float)
    ok = np.isfinite(p_r) & (n_r > 0)
    if not ok.any():
        return np.nan, np.nan
    p_r, n_r = p_r[ok], n_r[ok]
    r = len(p_r)
    p = float(p_r.mean())
    h = float(np.sum(1.0 / n_r)) / r**2
    n_eff = 1.0 / h
    if r >= 2:
        z = float(stats.norm.ppf(0.5 + level / 2))
        df_factor = (float(stats.t.ppf(0.5 + level / 2, r - 1)) / z) ** 2
        between = df_factor * float(p_r.var(ddof=1)) / r
        if between > p * (1 - p) * h:
            n_eff = p * (1 - p) / between
    return wilson_interval(p, n_eff, level)


def t_interval(values: Sequence[float], level: float = 0.95,
               bounds: tuple[float, float] = (-np.inf, np.inf)) -> tuple[float, float]:
    """Student-t interval of the mean of replication values, intersected with ``bounds``;
    NaN with fewer than two finite values."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return np.nan, np.nan
    m = float(v.mean())
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1)) * float(v.std(ddof=1)) / np.sqrt(
        len(v))
    return float(max(bounds[0], m - half)), float(min(bounds[1], m + half))


def metric_interval(values_kind: str, shares: Sequence[float],
                    counts: Sequence[float] | None = None,
                    level: float = 0.95) -> tuple[float, float]:
    """The interval of a metric's replication-level values by the rule of its kind.

    Args:
        values_kind: ``proportion``, ``nonnegative`` or ``real`` (:data:`VALUE_RANGES`).
        shares: the metric per replication.
        counts: people per replication in its denominator (needed for proportions).
        level: confidence level.
    """
    if values_kind not in VALUE_RANGES:
        raise ValueError(f"unknown kind of values {values_kind!r}; use one of "
                         f"{sorted(VALUE_RANGES)}")
    if values_kind == "proportion":
        if counts is None:
            raise ValueError("a proportion's interval needs the counts behind each share")
        return proportion_interval(shares, counts, level)
    return t_interval(shares, level, VALUE_RANGES[values_kind])


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
