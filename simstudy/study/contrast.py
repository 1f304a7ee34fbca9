"""Policy contrasts in a rating study: a linear mixed model with participant random intercepts.

When every participant rates the recourses of several policies, the question "is one policy's
recourse accepted / acted on more than another's?" is a within-participant comparison. For
rating ``y_ij`` of participant ``i`` on a recourse from policy ``p(j)``,

    y_ij = b0 + beta_p(j) + a_i + e_ij,   a_i ~ N(0, sd_a^2),   e_ij ~ N(0, sd^2),

with ``beta_baseline = 0`` (treatment coding against the baseline policy), fitted by REML with
statsmodels' ``MixedLM`` (a maintained implementation; nothing here re-derives it). Each
``beta_p`` is the mean rating difference "policy p minus baseline" with a Wald interval
``beta_p +- z_{1 - a/2} se_p``, and the omnibus Wald test ``beta' V^-1 beta ~ chi^2_{P-1}``
asks whether any policy differs from the baseline. The policy effect is total: it includes
every route by which a policy changes ratings (the distance of its recourses, whether they need
a feature the person cannot change).

Where every participant rates one recourse of those compared (a between-participant design)
the random intercept cannot be estimated: the model is fitted by ordinary least squares
without it, its intervals and p-values on Student's t (``model`` column ``ols``; the rule of
:func:`~simstudy.study.hypothesis_tests.design_model`).

References:
    Laird, N. M. and Ware, J. H. (1982). Random-effects models for longitudinal data.
    Biometrics 38(4), 963-974.

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> uid = np.repeat(np.arange(60), 2)
    >>> policy = np.tile(["universal", "personal"], 60)
    >>> act = 4 + rng.normal(0, 1, 60)[uid] + 0.8 * (policy == "personal") \\
    ...     + rng.normal(0, 1, 120)
    >>> data = pd.DataFrame({"uid": uid, "policy": policy, "act": act})
    >>> res = fit_policy_contrast(data, "act", baseline="universal")
    >>> bool(res.table.loc[0, "lower"] > 0)
    True
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.tools.sm_exceptions import ConvergenceWarning

from .hypothesis_tests import design_model, fit_design

__all__ = ["ContrastResult", "fit_policy_contrast", "policy_contrasts", "CONTRAST_COLUMNS"]

#: Columns of the table :func:`policy_contrasts` returns (one row per response x policy).
CONTRAST_COLUMNS = ["response", "model", "policy", "baseline", "estimate", "se", "lower", "upper",
                    "z", "p", "mean_policy", "mean_baseline", "n_ratings", "n_participants",
                    "sd_intercept", "sd_resid", "omnibus_chi2", "omnibus_df", "omnibus_p",
                    "converged"]


@dataclass
class ContrastResult:
    """One response's policy contrasts: the table and the omnibus test."""

    table: pd.DataFrame
    omnibus_chi2: float
    omnibus_df: int
    omnibus_p: float
    converged: bool


def fit_policy_contrast(
    data: pd.DataFrame, response: str, policy: str = "policy", group: str = "uid",
    baseline: str | None = None, level: float = 0.95,
) -> ContrastResult:
    """Fits ``response ~ policy + (1 | group)`` by REML; every policy against the baseline.

    Args:
        data: the long rating table.
        response: the rating column (e.g. ``act``).
        policy: the column naming the policy each rated recourse came from.
        group: the participant column.
        baseline: the reference policy (default: the first in sorted order).
        level: confidence level of the intervals.

    Returns:
        A :class:`ContrastResult`; ``table`` has the columns of :data:`CONTRAST_COLUMNS`.
    """
    missing = [c for c in (response, policy, group) if c not in data.columns]
    if missing:
        raise ValueError(f"column(s) {missing} not in the data (columns: {list(data.columns)})")
    sub = data[[response, policy, group]].dropna()
    labels = sorted(sub[policy].astype(str).unique())
    if baseline is None:
        baseline = labels[0]
    if baseline not in labels:
        raise ValueError(f"baseline policy {baseline!r} is not in column {policy!r} "
                         f"(values: {labels})")
    others = [p for p in labels if p != baseline]
    if not others:
        raise ValueError(f"column {policy!r} holds one policy only ({baseline!r}); "
                         "a contrast needs two")
    y = sub[response].to_numpy(float)
    which = sub[policy].astype(str).to_numpy()
    design = np.column_stack([np.ones(len(y))] + [(which == p).astype(float) for p in others])
    k = len(others)
    model = design_model(sub[group].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        fit, df, converged = fit_design(y, design, sub[group].to_numpy(), model)
    if df is not None:
        beta, sd_a, dist = np.asarray(fit.params)[1:], math.nan, stats.t(df)
    else:
        beta = np.asarray(fit.fe_params)[1:]
        sd_a = float(np.sqrt(max(float(np.asarray(fit.cov_re)[0, 0]), 0.0)))
        dist = stats.norm
    cov = np.asarray(fit.cov_params())[1:k + 1, 1:k + 1]
    se = np.sqrt(np.diag(cov))
    zq = dist.ppf(0.5 + level / 2)
    z = beta / se
    chi2 = float(beta @ np.linalg.solve(cov, beta))
    omnibus_p = float(stats.chi2.sf(chi2, k))
    means = sub.groupby(policy)[response].mean()
    means.index = means.index.astype(str)
    table = pd.DataFrame({
        "response": response, "model": model, "policy": others, "baseline": baseline,
        "estimate": beta, "se": se, "lower": beta - zq * se, "upper": beta + zq * se, "z": z,
        "p": 2 * dist.sf(np.abs(z)), "mean_policy": [means[p] for p in others],
        "mean_baseline": means[baseline], "n_ratings": len(y),
        "n_participants": int(sub[group].nunique()), "sd_intercept": sd_a,
        "sd_resid": float(np.sqrt(fit.scale)), "omnibus_chi2": chi2, "omnibus_df": k,
        "omnibus_p": omnibus_p, "converged": converged,
    })[CONTRAST_COLUMNS]
    return ContrastResult(table, chi2, k, omnibus_p, converged)


def policy_contrasts(
    data: pd.DataFrame, responses: list[str], policy: str = "policy", group: str = "uid",
    baseline: str | None = None, level: float = 0.95,
) -> pd.DataFrame:
    """:func:`fit_policy_contrast` for each response; one table (:data:`CONTRAST_COLUMNS`)."""
    return pd.concat([fit_policy_contrast(data, r, policy, group, baseline, level).table
                      for r in responses], ignore_index=True)
