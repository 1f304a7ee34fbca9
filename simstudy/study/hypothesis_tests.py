"""Testing a study's hypotheses (:mod:`simstudy.study.hypotheses`) on one rating table.

Every kind is a linear model of the ratings tested; where some participant gives two or more
of them (a within-participant design) it is a linear mixed model with participant random
intercepts, fitted by REML with statsmodels' ``MixedLM`` (Laird & Ware 1982); for rating
``y_ij`` of participant ``i``,

    y_ij = b0 + beta x_ij + gamma' w_ij + a_i + e_ij,   a_i ~ N(0, sd_a^2),  e_ij ~ N(0, sd^2),

where ``x`` is the tested term and ``w`` the ``adjust`` covariates:

* contrast ``[A, B]``: the ratings of A's and B's recourses, ``x = 1[policy = A]``;
* distance ``D``: all ratings (or one policy's), ``x = D`` (the linear part; the GAMM smooth
  ``s(D)`` is fitted beside it and reported, not tested);
* gap ``[G1, G2]``: ratings of participants in G1 or G2, ``x = 1[group = G1]``.

Where every participant gives one rating of those tested (a between-participant design, as a
live study's contrast of the conditions: each participant rates one condition's plan) the
random intercept cannot be estimated (it is confounded with ``e_ij``): the model is then fitted
by ordinary least squares without it, and ``t = beta / se`` is read on Student's t with the
residual degrees of freedom (:func:`design_model`, the ``model`` column).

The Wald statistic ``z = beta / se`` gives the p-value the direction asks for: ``1 - Phi(z)``
for ``greater`` / ``increasing``, ``Phi(z)`` for ``less`` / ``decreasing``, ``2 (1 - Phi(|z|))``
for ``two-sided``. The family is corrected by Holm's step-down rule (or Bonferroni, or none):
rejections by the rule at its boundary (:func:`reject`, ``p <= alpha / (m - i)``), adjusted
p-values reported beside (the running maximum of ``(m - i) p_(i)``,
:func:`simstudy.analysis.multiplicity.adjust_pvalues`); a hypothesis whose fit
failed or did not converge is ``failed``: never counted as "not significant", and it enters
the adjustment of the others with p = 1 (as a hypothesis tested and not rejected, the
conservative reading). A covariate constant
within the rows tested is left out of that fit (it cannot be estimated) and noted.

References:
    Laird, N. M. and Ware, J. H. (1982). Random-effects models for longitudinal data.
    Biometrics 38(4), 963-974.
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian
    Journal of Statistics 6(2), 65-70.

Example:
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> uid = np.repeat(np.arange(40), 2)
    >>> policy = np.tile(["b", "a"], 40)
    >>> act = 4 + rng.normal(0, 1, 40)[uid] + 0.9 * (policy == "a") + rng.normal(0, 1, 80)
    >>> table = pd.DataFrame({"uid": uid, "policy": policy, "act": act,
    ...                       "sparsity": np.tile([1, 2], 40)})
    >>> h = HypothesisSpec.model_validate({"contrast": ["a", "b"], "direction": "greater"})
    >>> res = evaluate_hypotheses(table, [h], alpha=0.05)
    >>> bool(res.loc[0, "rejected"]), bool(res.loc[0, "failed"])
    (True, False)
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.regression.mixed_linear_model import MixedLM

from ..analysis.gamm import fit_gamm
from ..analysis.multiplicity import adjust_pvalues
from .hypotheses import GROUP_VALUES, HypothesisSpec, hypothesis_names

__all__ = ["evaluate_hypothesis", "evaluate_hypotheses", "reject", "group_mask",
           "design_model", "fit_design", "HYPOTHESIS_COLUMNS", "one_sided_p"]

#: Columns of :func:`evaluate_hypotheses`' table (``hypotheses.csv`` of ``simstudy analyze``).
HYPOTHESIS_COLUMNS = ["hypothesis", "label", "kind", "response", "direction", "model",
                      "estimate", "se", "z", "p", "p_adjusted", "rejected", "failed",
                      "multiplicity", "alpha", "n_ratings", "n_participants", "smooth_edf",
                      "smooth_p", "smooth_status", "note"]


def one_sided_p(z: float, direction: str, df: float | None = None) -> float:
    """The p-value of statistic ``z`` in the stated direction: standard normal (Wald), or
    Student t with ``df`` degrees of freedom (ordinary least squares).

    Example:
        >>> round(one_sided_p(1.645, "greater"), 3), round(one_sided_p(1.645, "two-sided"), 2)
        (0.05, 0.1)
    """
    dist = stats.norm if df is None else stats.t(df)
    if direction in ("greater", "increasing"):
        return float(dist.sf(z))
    if direction in ("less", "decreasing"):
        return float(dist.cdf(z))
    return float(2 * dist.sf(abs(z)))


def group_mask(values: pd.Series, name: str) -> np.ndarray:
    """Rows of group ``name`` in a group column: ``privileged`` / ``non_privileged`` read a
    0/1 (or boolean) column as 1 / 0; any other name is matched as text.

    Example:
        >>> group_mask(pd.Series([True, False]), "non_privileged").tolist()
        [False, True]
    """
    numeric = pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values)
    if name in GROUP_VALUES and numeric:
        return (values.astype(float) == GROUP_VALUES[name]).to_numpy()
    return (values.astype(str) == name).to_numpy()


def reject(p: np.ndarray, alpha: float, method: str) -> np.ndarray:
    """Which hypotheses the family rejects, by the rule itself at its boundary: Holm's
    step-down rejects the ``i``-th smallest p-value (``i = 0..m-1``) while every one up to it
    has ``p <= alpha / (m - i)``; Bonferroni ``p <= alpha / m``; none ``p <= alpha``. NaN (a
    failed fit) is never rejected and counts in ``m``.

    Raises:
        ValueError: a ``method`` other than these three.

    Example:
        >>> reject(np.array([0.025, 0.05]), 0.05, "holm").tolist()
        [True, True]
    """
    if method not in ("holm", "bonferroni", "none"):
        raise ValueError(f"unknown multiplicity {method!r}; choose holm, bonferroni or none")
    p = np.asarray(p, dtype=float)
    m = len(p)
    filled = np.where(np.isnan(p), np.inf, p)
    if method == "none":
        return filled <= alpha
    if method == "bonferroni":
        return filled <= alpha / m
    out = np.zeros(m, dtype=bool)
    for i, j in enumerate(np.argsort(filled, kind="stable")):
        if not filled[j] <= alpha / (m - i):
            break
        out[j] = True
    return out


def _rows(table: pd.DataFrame, h: HypothesisSpec, policy: str) -> tuple[pd.DataFrame, np.ndarray]:
    """The rows a hypothesis reads and its tested term ``x``."""
    if h.kind == "contrast":
        if policy not in table:
            raise ValueError(f"a contrast needs the column {policy!r}")
        names = table[policy].astype(str)
        sub = table[names.isin(h.contrast)]
        return sub, (sub[policy].astype(str) == h.contrast[0]).to_numpy(float)
    sub = table
    if h.policy is not None:
        if policy not in table:
            raise ValueError(f"policy: {h.policy!r} needs the column {policy!r}")
        sub = table[table[policy].astype(str) == h.policy]
    if h.kind == "distance":
        return sub, pd.to_numeric(sub[h.distance]).to_numpy(float)
    if h.by not in table:
        raise ValueError(f"by: the table has no group column {h.by!r}")
    first, second = group_mask(sub[h.by], h.gap[0]), group_mask(sub[h.by], h.gap[1])
    sub = sub[first | second]
    return sub, first[first | second].astype(float)


def design_model(groups: np.ndarray) -> str:
    """The model the design supports for the rows tested (the rule the preregistration states):
    ``mixed`` (participant random intercepts, REML) when some participant gives two or more of
    the ratings tested, ``ols`` (ordinary least squares, t test) when every participant gives
    one: a random intercept is then confounded with the residual and cannot be estimated.

    Example:
        >>> design_model(np.array([1, 1, 2])), design_model(np.array([1, 2, 3]))
        ('mixed', 'ols')
    """
    _, counts = np.unique(groups, return_counts=True)
    return "mixed" if len(counts) and counts.max() >= 2 else "ols"


def fit_design(y: np.ndarray, design: np.ndarray, groups: np.ndarray, model: str
               ) -> tuple[Any, float | None, bool]:
    """``(fit, df, converged)``: ``y`` on ``design`` by the model :func:`design_model` chose,
    ordinary least squares (``df`` its residual degrees of freedom, for Student's t) or a
    linear mixed model with a random intercept per group, REML (``df`` ``None``: Wald on the
    normal). Warnings are the caller's to filter."""
    if model == "ols":
        fit = OLS(y, design).fit()
        return fit, float(fit.df_resid), True
    fit = MixedLM(y, design, groups=groups).fit(reml=True)
    return fit, None, bool(getattr(fit, "converged", True))


def _fit_term(y: np.ndarray, design: np.ndarray, groups: np.ndarray, model: str
              ) -> tuple[float, float, float | None]:
    """The tested term's estimate, standard error and (OLS) residual degrees of freedom;
    raises ``ValueError`` where the mixed model did not converge."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit, df, converged = fit_design(y, design, groups, model)
    if df is not None:
        return float(fit.params[1]), float(fit.bse[1]), df
    if not converged:
        raise ValueError("the mixed model did not converge")
    return float(np.asarray(fit.fe_params)[1]), float(np.asarray(fit.bse_fe)[1]), None


def evaluate_hypothesis(table: pd.DataFrame, h: HypothesisSpec, group: str = "uid",
                        policy: str = "policy", smooth: bool = True) -> dict:
    """One hypothesis on one table: estimate, se, z, p (unadjusted), failed, the model used
    (:func:`design_model`), the smooth's status and a note.

    Args:
        table: the long rating table.
        h: the hypothesis.
        group: the participant column.
        policy: the column naming each rated recourse's policy.
        smooth: also fit the distance smooth of a distance hypothesis (reported beside).
    """
    out = {"estimate": math.nan, "se": math.nan, "z": math.nan, "p": math.nan, "failed": True,
           "model": "", "n_ratings": 0, "n_participants": 0, "smooth_edf": math.nan,
           "smooth_p": math.nan, "smooth_status": "", "note": ""}
    missing = [c for c in (group, h.response, *h.adjust) if c not in table]
    if missing:
        raise ValueError(f"column(s) {missing} not in the data (columns: {list(table.columns)})")
    sub, x = _rows(table, h, policy)
    y = pd.to_numeric(sub[h.response], errors="coerce").to_numpy(float)
    covariates = [pd.to_numeric(sub[c], errors="coerce").to_numpy(float) for c in h.adjust]
    keep = ~np.isnan(y) & ~np.isnan(x)
    for w in covariates:
        keep &= ~np.isnan(w)
    notes = []
    used, used_names = [], []
    for name, w in zip(h.adjust, covariates, strict=True):
        if np.ptp(w[keep]) if keep.any() else True:
            used.append(w[keep])
            used_names.append(name)
        else:
            notes.append(f"{name} constant in the rows tested: left out")
    y, x, groups = y[keep], x[keep], sub[group].to_numpy()[keep]
    out["n_ratings"], out["n_participants"] = int(len(y)), int(len(np.unique(groups)))
    if len(y) < 3 or np.ptp(x) == 0:
        out["note"] = "; ".join([*notes, "the tested term does not vary in the rows tested"])
        return out
    model = out["model"] = design_model(groups)
    design = np.column_stack([np.ones(len(y)), x, *used])
    try:
        beta, se, df = _fit_term(y, design, groups, model)
    except (ValueError, np.linalg.LinAlgError) as exc:
        out["note"] = "; ".join([*notes, f"fit failed: {exc}"])
        return out
    if not np.isfinite(se) or se <= 0:
        out["note"] = "; ".join([*notes, "the standard error is not finite"])
        return out
    z = beta / se
    out.update(estimate=beta, se=se, z=z, p=one_sided_p(z, h.direction, df), failed=False)
    if h.kind == "distance" and h.smooth and smooth:
        _smooth(out, notes, h, group, groups, x, y, used_names, used)
    out["note"] = "; ".join(notes)
    return out


def _smooth(out: dict, notes: list[str], h: HypothesisSpec, group: str, groups: np.ndarray,
            x: np.ndarray, y: np.ndarray, names: list[str], covariates: list[np.ndarray]
            ) -> None:
    """The smooth reported beside a distance hypothesis, with the same ``adjust`` covariates
    (those left in its linear model): ``smooth_status`` is ``fitted``, ``too_few_distances``
    (fewer than 4 distinct distances: not a failed fit) or ``failed``."""
    if len(np.unique(x)) < 4:
        out["smooth_status"] = "too_few_distances"
        notes.append("smooth not fitted: fewer than 4 distinct distances")
        return
    frame = pd.DataFrame({group: groups, h.distance: x, h.response: y,
                          **dict(zip(names, covariates, strict=True))})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = fit_gamm(frame, h.response, h.distance, group=group, adjust=names)
        out["smooth_edf"], out["smooth_p"] = float(model.edf_), float(model.test_.p)
        out["smooth_status"] = "fitted"
    except (ValueError, np.linalg.LinAlgError) as exc:
        out["smooth_status"] = "failed"
        notes.append(f"smooth not fitted: {exc}")


def evaluate_hypotheses(table: pd.DataFrame, hypotheses: list[HypothesisSpec], alpha: float = 0.05,
                    multiplicity: str = "holm", group: str = "uid", policy: str = "policy",
                    smooth: bool = True) -> pd.DataFrame:
    """Tests every hypothesis of the family and adjusts for multiplicity.

    Returns:
        One row per hypothesis (:data:`HYPOTHESIS_COLUMNS`); ``rejected`` by the rule at its
        boundary (:func:`reject`; False where the fit failed; ``failed`` says so).
    """
    rows = []
    for name, h in zip(hypothesis_names(hypotheses), hypotheses, strict=True):
        res = evaluate_hypothesis(table, h, group, policy, smooth)
        rows.append({"hypothesis": name, "label": h.label(), "kind": h.kind,
                     "response": h.response, "direction": h.direction, **res})
    frame = pd.DataFrame(rows)
    frame["p_adjusted"] = adjust_pvalues(frame["p"].to_numpy(float), multiplicity,
                                         missing="count")
    frame["rejected"] = (~frame["failed"]) & reject(frame["p"].to_numpy(float), alpha,
                                                    multiplicity)
    frame["multiplicity"], frame["alpha"] = multiplicity, alpha
    return frame[HYPOTHESIS_COLUMNS]
