"""Generalized additive mixed model for rating studies, fitted by REML like mgcv.

The published analysis (Tominaga et al.) fits, with R's mgcv,

    gam(y ~ s(x, k = K) + s(uid, bs = "re") + s(uid, x, bs = "re"), method = "REML"),

i.e. y_ij = b0 + f(x_ij) + a_i + c_i x_ij + e_ij with a thin-plate regression spline f, a
participant random intercept a_i ~ N(0, sd_a^2), an independent random slope c_i ~ N(0, sd_c^2)
and e_ij ~ N(0, sd^2). :class:`GAMM` fits the same model: the random effects are
identity-penalized coefficient blocks (participant dummies and dummies times x), the three
smoothing parameters are estimated jointly by REML (:mod:`simstudy.analysis.reml`), and the
smooth is tested with Wood's (2013) statistic (:mod:`simstudy.analysis.wood_test`). For an
identity-penalized block with smoothing parameter lambda (penalty weight w), the random-effect
standard deviation is sqrt(scale / (lambda w)); the residual standard deviation is sqrt(scale).

``smooth="linear"`` replaces f by a linear fixed effect (a linear mixed model), and
``smooth="none"`` drops it; both are used to cross-check the engine against statsmodels.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from .families import make_family
from .laml import MixedDesign, fit_laml
from .reml import PenaltyBlock, RemlResult, fit_reml
from .smooth import ThinPlateSpline, resolve_basis_size
from .wood_test import SmoothTest, smooth_test

__all__ = ["GAMM", "fit_gamm", "FitWarning"]


class FitWarning(UserWarning):
    """A fit went ahead with a change or a caveat the user must see (basis size raised, REML
    not converged, participants with a single rating)."""


class GAMM:
    """``y ~ s(x) + s(uid, bs="re") + s(uid, x, bs="re")`` by REML (scikit-learn style).

    Args:
        k: spline basis dimension; ``None`` means ``min(10, distinct x values - 1)``; raised to
            3 or lowered to the number of distinct values with a :class:`FitWarning`.
        smooth: ``"tp"`` (thin-plate regression spline), ``"linear"`` or ``"none"``.
        random_intercept: include the participant random intercept.
        random_slope: include the participant random slope in x (independent of the intercept).
        multistart: also start REML from low smoothing and keep the better criterion.
        family: ``"gaussian"`` (exact REML, unknown scale), ``"binomial"`` (logit; 0/1
            responses) or ``"ocat"`` (ordered categories 1..``n_categories``, mgcv's ``ocat``);
            the last two by penalized IRLS and Laplace REML (:mod:`simstudy.analysis.laml`).
        n_categories: number of rating levels for ``"ocat"`` (default: the largest rating).
        max_iter: smoothing-parameter iterations at most, per start.

    Attributes (after :meth:`fit`):
        intercept_: the model intercept b0.
        edf_: EDF of the smooth (``nan`` without a smooth); ``test_``: its :class:`SmoothTest`.
        sd_intercept_, sd_slope_, sd_resid_: estimated standard deviations.
        coef_: all coefficients; ``reml_``: the :class:`~simstudy.analysis.reml.RemlResult`.
        groups_: participant labels, in coefficient order.
    """

    def __init__(self, k: int | None = None, smooth: str = "tp", random_intercept: bool = True,
                 random_slope: bool = True, multistart: bool = True, family: str = "gaussian",
                 n_categories: int | None = None, max_iter: int = 100):
        self.max_iter = max_iter
        self.multistart = multistart
        self.family = family
        self.n_categories = n_categories
        self.k = k
        self.smooth = smooth
        self.random_intercept = random_intercept
        self.random_slope = random_slope

    def _fixed_design(self, x: np.ndarray, covariates: np.ndarray | None = None) -> np.ndarray:
        # intercept, smooth (or linear) columns, then the adjustment covariates (at 0 when a
        # prediction gives none: the band is the smooth's at covariates 0)
        cols = [np.ones((x.size, 1))]
        if self.smooth == "tp":
            cols.append(self.basis_.transform(x))
        elif self.smooth == "linear":
            cols.append(x[:, None])
        c = getattr(self, "n_covariates_", 0)
        if c:
            cols.append(np.zeros((x.size, c)) if covariates is None else covariates)
        return np.hstack(cols)

    def fit(self, x, y, groups, rho0: np.ndarray | None = None,
            covariates: np.ndarray | None = None) -> GAMM:
        """Fits the model.

        Args:
            x: distance covariate, shape (n,).
            y: ratings, shape (n,).
            groups: participant id of each rating, shape (n,).
            rho0: optional warm start for the log smoothing parameters.
            covariates: unpenalized linear covariates (the hypothesis's ``adjust:``), shape
                (n, c) (gaussian family only).
        """
        x, y, gidx, n_groups = self._checked(x, y, groups)
        cov = None if covariates is None else np.asarray(covariates, dtype=float).reshape(
            x.size, -1)
        self.n_covariates_ = 0 if cov is None else cov.shape[1]
        if self.family != "gaussian":
            if self.n_covariates_:
                raise ValueError(f"covariates are fitted with the gaussian family only, not "
                                 f"{self.family!r}")
            return self._fit_family(x, y, gidx, n_groups, rho0)
        design, blocks, null_dim = self._gaussian_design(x, gidx, n_groups, cov)
        smooth_blocks = (0,) if self.smooth == "tp" and self.multistart else ()
        self.reml_: RemlResult = fit_reml(design, y, blocks, null_space_dim=null_dim, rho0=rho0,
                                          smooth_blocks=smooth_blocks, max_iter=self.max_iter)
        res = self.reml_
        if not res.converged:
            self._warn(f"REML did not converge in {res.n_iter} Newton iterations; "
                       "read the estimates with caution")
        self._store_gaussian(res, blocks, x.size, n_groups)
        self._test_smooth(res, design)
        return self

    def _checked(self, x, y, groups) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        # Inputs as arrays, participants as indices (``groups_``); refuses what cannot be fit.
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        if self.smooth not in ("tp", "linear", "none"):
            raise ValueError(f"smooth must be 'tp', 'linear' or 'none', got {self.smooth!r}")
        if not (x.shape == y.shape == np.shape(groups)):
            raise ValueError("x, y and groups must have the same length")
        if not np.all(np.isfinite(x)) or not np.all(np.isfinite(y)):
            raise ValueError("x and y must be finite (drop missing ratings first)")
        self.groups_, gidx = np.unique(np.asarray(groups), return_inverse=True)
        n_groups = self.groups_.size
        self.warnings_: list[str] = []
        if n_groups < 2 and (self.random_intercept or self.random_slope):
            raise ValueError(f"participant random effects need at least 2 participants, "
                             f"got {n_groups}")
        return x, y, gidx, n_groups

    def _gaussian_design(self, x: np.ndarray, gidx: np.ndarray, n_groups: int,
                         covariates: np.ndarray | None = None
                         ) -> tuple[np.ndarray, list[PenaltyBlock], int]:
        # The design (fixed part, then random-effect columns), its penalty blocks and the
        # dimension of the unpenalized space.
        blocks: list[PenaltyBlock] = []
        null_dim = 1
        if self.smooth == "tp":
            self._fit_basis(x)
            q = self.k_ - 1
            blocks.append(PenaltyBlock(1, 1 + q, self.basis_.penalty_))
            null_dim += q - self.basis_.rank_
            self.smooth_slice_ = slice(1, 1 + q)
        elif self.smooth == "linear":
            null_dim += 1
            self.smooth_slice_ = slice(1, 2)
        else:
            self.smooth_slice_ = slice(1, 1)
        fixed = self._fixed_design(x, covariates)
        null_dim += self.n_covariates_
        pf = fixed.shape[1]
        # Random-effect columns: dummies (intercepts) and dummies * x (slopes), as dense blocks.
        re_cols = []
        n = x.size
        rows = np.arange(n)
        self.re_slices_ = {}
        start = pf
        for name, enabled, values in (("intercept", self.random_intercept, np.ones(n)),
                                      ("slope", self.random_slope, x)):
            if not enabled:
                continue
            z = np.zeros((n, n_groups))
            z[rows, gidx] = values
            re_cols.append(z)
            self.re_slices_[name] = slice(start, start + n_groups)
            blocks.append(PenaltyBlock(start, start + n_groups, np.ones(n_groups)))
            start += n_groups
        design = np.hstack([fixed, *re_cols]) if re_cols else fixed
        return design, blocks, null_dim

    def _store_gaussian(self, res: RemlResult, blocks: list[PenaltyBlock], n: int,
                        n_groups: int) -> None:
        # Coefficients, scale, random-effect standard deviations and degrees of freedom.
        self.blocks_ = blocks
        self.coef_ = res.beta
        self.intercept_ = float(res.beta[0])
        self.scale_ = res.scale
        self.sd_resid_ = float(np.sqrt(res.scale))
        self.n_obs_ = n
        self.n_groups_ = n_groups
        lam = np.exp(res.rho)
        sds = {}
        for block, lam_j in zip(blocks, lam, strict=True):
            for name, sl in self.re_slices_.items():
                if sl.start == block.start:
                    sds[name] = float(np.sqrt(res.scale / (lam_j * block.weights[0])))
        self.sd_intercept_ = sds.get("intercept", 0.0)
        self.sd_slope_ = sds.get("slope", 0.0)
        self.edf_total_ = float(res.edf.sum())
        self.residual_df_ = n - self.edf_total_

    def _test_smooth(self, res: RemlResult, design: np.ndarray) -> None:
        # The smooth's EDF and Wood's test of it (none without a smooth).
        sl = self.smooth_slice_
        if self.smooth == "tp":
            self.edf_ = float(res.edf[sl].sum())
            # mgcv's alternative EDF, tr(2F - FF) over the block, is the test's reference rank.
            f_rows = res.a_inv[sl, :] @ res.xtx
            f_cols = res.a_inv @ res.xtx[:, sl]
            edf1 = float(2.0 * np.trace(f_rows[:, sl]) - np.einsum("ij,ji->", f_rows, f_cols))
            self.edf1_ = edf1
            q = sl.stop - sl.start
            self.test_: SmoothTest | None = smooth_test(
                res.beta[sl], design[:, sl], res.vp[sl, sl], min(q, edf1),
                res_df=self.residual_df_)
        elif self.smooth == "linear":
            self.edf_ = 1.0
            self.edf1_ = 1.0
            self.test_ = smooth_test(res.beta[sl], design[:, sl], res.vp[sl, sl], 1.0,
                                     res_df=self.residual_df_)
        else:
            self.edf_ = self.edf1_ = float("nan")
            self.test_ = None

    def _fit_basis(self, x: np.ndarray) -> None:
        """The thin plate basis, its size resolved as mgcv does (with a warning when changed)."""
        k, note = resolve_basis_size(x, self.k)
        if note:
            self._warn(note)
        self.k_ = k
        self.basis_ = ThinPlateSpline(k).fit(x)

    def _fit_family(self, x, y, gidx, n_groups, rho0) -> GAMM:
        """Binomial / ordered-categorical fit by penalized IRLS and Laplace REML."""
        n_cat = self.n_categories
        if self.family == "ocat" and n_cat is None:
            n_cat = int(np.max(y))
        self.family_ = make_family(self.family, n_cat)
        y_coded = self.family_.check(y)
        if self.smooth == "tp":
            self._fit_basis(x)
        fixed = self._fixed_design(x)
        penalty = np.zeros(fixed.shape[1])
        if self.smooth == "tp":
            self.smooth_slice_ = slice(1, fixed.shape[1])
            penalty[self.smooth_slice_] = self.basis_.penalty_
        else:
            self.smooth_slice_ = slice(1, fixed.shape[1])
        z_cols, names = [], []
        if self.random_intercept:
            z_cols.append(np.ones_like(x))
            names.append("intercept")
        if self.random_slope:
            z_cols.append(x)
            names.append("slope")
        z = np.column_stack(z_cols) if z_cols else np.zeros((x.size, 0))
        design = MixedDesign(fixed, penalty, gidx, n_groups, z)
        res = fit_laml(design, y_coded, self.family_, self.smooth_slice_, penalty, rho0=rho0,
                       multistart=self.multistart, max_iter=self.max_iter)
        self.laml_ = res
        self.coef_ = res.beta_f
        self.random_coef_ = res.u
        self.intercept_ = float(res.beta_f[0])
        self.n_obs_, self.n_groups_ = x.size, n_groups
        self.scale_ = 1.0
        self.sd_resid_ = float("nan")
        lam_r = np.exp(res.rho[1:] if self.smooth == "tp" else res.rho)
        sds = dict(zip(names, 1.0 / np.sqrt(lam_r), strict=True))
        self.sd_intercept_ = float(sds.get("intercept", 0.0))
        self.sd_slope_ = float(sds.get("slope", 0.0))
        self.edf_total_ = res.edf_total
        self.residual_df_ = x.size - res.edf_total
        self.cut_points_ = (self.family_.cuts_.copy() if self.family == "ocat"
                            else np.zeros(0))
        if not res.converged:
            self._warn(f"Laplace REML did not converge in {res.n_iter} iterations; "
                       "read the estimates with caution")
        sl = self.smooth_slice_
        q = sl.stop - sl.start
        if q and self.smooth in ("tp", "linear"):
            self.edf_ = float(res.edf_f[sl].sum()) if self.smooth == "tp" else 1.0
            self.edf1_ = res.edf1_smooth if self.smooth == "tp" else 1.0
            root_w = np.sqrt(np.maximum(res.weights, 0.0))
            self.test_ = smooth_test(res.beta_f[sl], root_w[:, None] * fixed[:, sl],
                                     res.cov_f[sl, sl], min(q, self.edf1_), res_df=-1.0)
        else:
            self.edf_ = self.edf1_ = float("nan")
            self.test_ = None
        return self

    def predict_response(self, x) -> np.ndarray:
        """Population-level prediction on the response scale (random effects excluded):
        the mean rating (Gaussian), P(y = 1) (binomial) or the ``(n, R)`` category
        probabilities (ocat)."""
        eta = self.predict(x)
        if self.family == "binomial":
            return self.family_.mean(eta)
        if self.family == "ocat":
            return self.family_.probabilities(eta)
        return eta

    def _covariance_fixed(self) -> np.ndarray:
        if self.family == "gaussian":
            k = self._fixed_design(np.zeros(1)).shape[1]
            return self.reml_.vp[:k, :k]
        return self.laml_.cov_f

    def _warn(self, message: str) -> None:
        self.warnings_.append(message)
        warnings.warn(message, FitWarning, stacklevel=3)

    @property
    def fit_result_(self):
        """The REML (Gaussian) or Laplace-REML (other families) fit."""
        return self.laml_ if self.family != "gaussian" else self.reml_

    def predict(self, x) -> np.ndarray:
        """Population-level prediction b0 + f(x) (both random effects excluded)."""
        x = np.asarray(x, dtype=float)
        fixed = self._fixed_design(x)
        return fixed @ self.coef_[: fixed.shape[1]]

    def predict_band(self, x, level: float = 0.95) -> pd.DataFrame:
        """b0 + f(x) with a pointwise Bayesian credible band (``fit``, ``lower``, ``upper``),
        on the link scale (for the binomial family, the log-odds)."""
        x = np.asarray(x, dtype=float)
        fixed = self._fixed_design(x)
        pf = fixed.shape[1]
        fit = fixed @ self.coef_[:pf]
        se = np.sqrt(np.einsum("ij,jk,ik->i", fixed, self._covariance_fixed(), fixed))
        z = stats.norm.ppf(0.5 + level / 2)
        return pd.DataFrame({"x": x, "fit": fit, "se": se, "lower": fit - z * se,
                             "upper": fit + z * se})

    def summary(self) -> dict:
        """The figures the published analysis reports, as a flat dict.

        The smooth test's statistic is reported as mgcv's ``summary.gam`` does: ``F`` (T / r)
        for the Gaussian family, whose scale is estimated, and ``chi_sq`` (T) for the binomial
        and ocat families, whose scale is known; the other is NaN.
        """
        t = self.test_
        return {
            "n": self.n_obs_, "participants": self.n_groups_,
            "edf": self.edf_, "ref_df": t.ref_df if t else float("nan"),
            # mgcv's summary column: F = T / ref_df with an estimated scale (Gaussian),
            # Chi.sq = T with a known one (binomial, ocat)
            "F": t.F if t and self.family == "gaussian" else float("nan"),
            "chi_sq": t.stat if t and self.family != "gaussian" else float("nan"),
            "p": t.p if t else float("nan"),
            "intercept": self.intercept_, "sd_intercept": self.sd_intercept_,
            "sd_slope": self.sd_slope_, "sd_resid": self.sd_resid_,
            "family": self.family,
            "reml_converged": self.fit_result_.converged,
            "reml_iterations": self.fit_result_.n_iter,
            "reml_starts": self.fit_result_.starts, "k": getattr(self, "k_", float("nan")),
        }


def fit_gamm(data: pd.DataFrame, response: str, distance: str, group: str = "uid",
             k: int | None = None, smooth: str = "tp", family: str = "gaussian",
             n_categories: int | None = None, adjust: tuple[str, ...] | list[str] = ()
             ) -> GAMM:
    """Fits :class:`GAMM` to a long rating table, dropping rows with a missing rating;
    ``adjust`` columns enter as unpenalized linear terms (``y ~ s(x) + w + ...``).

    References:
        Wood, *Generalized Additive Models: An Introduction with R*, 2nd ed., CRC, 2017;
        Wood, "On p-values for smooth components of an extended generalized additive model",
        Biometrika 100(1):221-228, 2013, https://doi.org/10.1093/biomet/ass048.

    Example:
        >>> from simstudy.people.rating import published_model
        >>> from simstudy.core.rng import generator
        >>> from simstudy.study.simulated import simulate_study
        >>> table = simulate_study(30, published_model(), generator(1, "example"))
        >>> model = fit_gamm(table, "accept", "proximity")
        >>> model.n_groups_, 0.0 <= model.test_.p <= 1.0
        (30, True)
    """
    sub = data[[group, distance, response, *adjust]].dropna()
    model = GAMM(k=k, smooth=smooth, family=family, n_categories=n_categories)
    return model.fit(sub[distance].to_numpy(float), sub[response].to_numpy(float),
                     sub[group].to_numpy(),
                     covariates=sub[list(adjust)].to_numpy(float) if adjust else None)
