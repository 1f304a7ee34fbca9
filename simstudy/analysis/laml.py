"""Penalized IRLS with Laplace-approximate REML for non-Gaussian rating GAMMs.

The model is eta = F b + sum_t z_t * u[g, t]: fixed columns F (intercept and a penalized
smooth), and per participant g up to two random coefficients (intercept z = 1, slope z = x)
with independent N(0, 1 / lambda_t) priors. For smoothing parameters rho = log lambda (and the
family's parameters tau), beta_hat maximizes the penalized log-likelihood
l(beta) - beta' S beta / 2 by Newton's method (penalized IRLS with the full Hessian), and the
Laplace approximation to the restricted likelihood gives the criterion (Wood 2011, section 3)

    V(rho, tau) = -l(beta_hat) + beta_hat' S beta_hat / 2 + log|H| / 2 - log|S|_+ / 2,
    H = X' W X + S,   W = -d^2 l / d eta^2,

minimized by L-BFGS-B. Its gradient in rho_j is exact,

    dV/drho_j = lambda_j beta' S_j beta / 2 + tr(H^-1 dH/drho_j) / 2 - rank_j / 2,
    dH/drho_j = lambda_j S_j + X' diag(w'_i (X dbeta/drho_j)_i) X,
    dbeta/drho_j = -H^-1 lambda_j S_j beta,   w' = dW/d eta,

(the second term needs only the leverages h_i = x_i' H^-1 x_i); for the family parameters tau,

    dV/dtau = -dl/dtau + tr(H^-1 dH/dtau) / 2,   dbeta/dtau = H^-1 X' dg/dtau,

with dH/dtau = X' diag(dW/dtau + w' X dbeta/dtau) X (g = dl/d eta; beta_hat stays a score
root). H is never formed densely: the random-effect block is block diagonal
(one R x R block per participant), so every solve, log-determinant and the needed parts of H^-1
come from the Schur complement of that block, in O(n) time. This structure is why the engine is
written here rather than taken from a general GLMM library (statsmodels' GLMM fits are
variational or Laplace without a REML smoothing-parameter criterion for penalized smooths).

References:
    Wood, S. N. (2011), "Fast stable restricted maximum likelihood and marginal likelihood
    estimation of semiparametric generalized linear models", JRSS-B 73:3-36.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, sparse
from scipy.linalg import cho_factor, cho_solve

from .families import Family

__all__ = ["MixedDesign", "LamlResult", "fit_laml"]

_RHO_BOUNDS = (-15.0, 20.0)
_TAU_BOUNDS = (-8.0, 4.0)


@dataclass
class MixedDesign:
    """Fixed columns plus per-participant random coefficients, kept in structured form.

    Attributes:
        fixed: ``(n, pf)`` fixed-effect columns; ``fixed_penalty``: ``(pf,)`` diagonal penalty
            (unscaled) of the smooth's columns, 0 elsewhere.
        groups: ``(n,)`` participant index 0..G-1; ``z``: ``(n, R)`` random-effect covariates.
    """

    fixed: np.ndarray
    fixed_penalty: np.ndarray
    groups: np.ndarray
    n_groups: int
    z: np.ndarray

    def __post_init__(self):
        n = self.fixed.shape[0]
        self.onehot = sparse.csr_matrix((np.ones(n), (self.groups, np.arange(n))),
                                        shape=(self.n_groups, n))

    @property
    def n_random(self) -> int:
        return self.z.shape[1]

    def eta(self, beta_f: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = self.fixed @ beta_f
        if self.n_random:
            out = out + np.sum(self.z * u[self.groups], axis=1)
        return out

    def xt(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """X' v as (fixed part, (G, R) random part)."""
        return self.fixed.T @ v, self.onehot @ (self.z * v[:, None])


class _Factor:
    """H = X' W X + S for one W and lambda, factorized through the Schur complement."""

    def __init__(self, d: MixedDesign, w: np.ndarray, lam_f: np.ndarray, lam_r: np.ndarray):
        f, z = d.fixed, d.z
        pf, r, g = f.shape[1], d.n_random, d.n_groups
        aff = f.T @ (w[:, None] * f)
        aff[np.diag_indices(pf)] += lam_f
        self.d, self.pf, self.r = d, pf, r
        if r:
            wz = w[:, None] * z
            # afr[g, a, t] = sum_{i in g} w_i f_ia z_it
            afr = (d.onehot @ (f[:, :, None] * wz[:, None, :]).reshape(len(w), pf * r))
            self.afr = np.asarray(afr).reshape(g, pf, r)
            arr = np.asarray(d.onehot @ (wz[:, :, None] * z[:, None, :]).reshape(len(w), r * r))
            arr = arr.reshape(g, r, r)
            arr[:, np.arange(r), np.arange(r)] += lam_r
            self.arr_inv = np.linalg.inv(arr)
            self.logdet_r = float(np.sum(np.linalg.slogdet(arr)[1]))
            self.m = self.afr @ self.arr_inv                               # Afr Arr^-1
            schur = aff - (self.m.transpose(1, 0, 2).reshape(pf, g * r)
                           @ self.afr.transpose(1, 0, 2).reshape(pf, g * r).T)
        else:
            self.logdet_r = 0.0
            schur = aff
        self.chol = cho_factor((schur + schur.T) / 2, lower=False)
        self.logdet = self.logdet_r + 2.0 * float(np.sum(np.log(np.diag(self.chol[0]))))

    def solve(self, bf: np.ndarray, br: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not self.r:
            return cho_solve(self.chol, bf), br
        xf = cho_solve(self.chol, bf - np.einsum("gat,gt->a", self.m, br))
        xr = np.einsum("gts,gs->gt", self.arr_inv,
                       br - np.einsum("gat,a->gt", self.afr, xf))
        return xf, xr

    def inverse_parts(self):
        """C = (H^-1)_ff, CM[g] = C Afr_g Arr_g^-1 (so (H^-1)_fg = -CM[g]) and the diagonal
        blocks D[g] = (H^-1)_gg = Arr_g^-1 + M_g' C M_g."""
        c = cho_solve(self.chol, np.eye(self.pf))
        if not self.r:
            return c, None, None
        cm = c @ self.m
        dg = self.arr_inv + self.m.transpose(0, 2, 1) @ cm
        return c, cm, dg

    def leverages(self, c, cm, dg) -> np.ndarray:
        """h_i = x_i' H^-1 x_i."""
        d = self.d
        f = d.fixed
        h = np.einsum("ia,ab,ib->i", f, c, f)
        if self.r:
            g = d.groups
            h -= 2.0 * np.einsum("ia,iat,it->i", f, cm[g], d.z)
            h += np.einsum("it,its,is->i", d.z, dg[g], d.z)
        return h


@dataclass
class LamlResult:
    """A penalized-likelihood fit with Laplace-REML smoothing parameters."""

    beta_f: np.ndarray
    u: np.ndarray
    rho: np.ndarray            # log lambda: smooth first, then one per random-effect type
    tau: np.ndarray            # family parameters
    objective: float
    converged: bool
    n_iter: int
    cov_f: np.ndarray          # (H^-1)_ff: Bayesian covariance of the fixed coefficients
    edf_f: np.ndarray          # per fixed coefficient EDF, diag(I - H^-1 S)
    edf1_smooth: float         # tr(2F - F F) over the smooth block (the test's rank)
    edf_total: float
    weights: np.ndarray        # final Newton weights W
    starts: int = 1


class _Problem:
    def __init__(self, design: MixedDesign, y: np.ndarray, family: Family,
                 smooth: slice, penalty: np.ndarray):
        self.d, self.y, self.fam, self.smooth = design, y, family, smooth
        self.penalty = penalty     # (pf,) unscaled diagonal; nonzero on the smooth's columns
        self.rank_s = int(np.sum(penalty > 0))
        self.beta_f = np.zeros(design.fixed.shape[1])
        self.u = np.zeros((design.n_groups, design.n_random))
        self.n_rho = 1 + design.n_random if self.rank_s else design.n_random
        self.cache: dict = {}

    def _lams(self, rho):
        if self.rank_s:
            lam_f = np.exp(rho[0]) * self.penalty
            lam_r = np.exp(rho[1:])
        else:
            lam_f = np.zeros_like(self.penalty)
            lam_r = np.exp(rho)
        return lam_f, lam_r

    def _penalized(self, bf, u, lam_f, lam_r):
        eta = self.d.eta(bf, u)
        pen = float(bf @ (lam_f * bf)) + float(np.sum(u**2 * lam_r))
        return self.fam.loglik(self.y, eta) - 0.5 * pen, eta

    def _derivatives(self, eta):
        # The families are log-concave (W > 0); the floor only guards rounding far from the data.
        g, w, w1 = self.fam.derivatives(self.y, eta)
        return g, np.maximum(w, 1e-10), w1

    def pirls(self, rho, max_iter=100):
        """beta_hat at rho (warm-started): Newton on the penalized log-likelihood."""
        lam_f, lam_r = self._lams(rho)
        bf, u = self.beta_f.copy(), self.u.copy()
        obj, eta = self._penalized(bf, u, lam_f, lam_r)
        for _ in range(max_iter):
            g, w, w1 = self._derivatives(eta)
            fac = _Factor(self.d, w, lam_f, lam_r)
            gf, gr = self.d.xt(g)
            gf, gr = gf - lam_f * bf, gr - lam_r * u
            step_f, step_r = fac.solve(gf, gr)
            # Newton decrement: the predicted gain; at rounding level beta_hat is reached (and
            # the factor above is already the one at beta_hat). It must be tight: log|H| is
            # not stationary in beta, so V inherits beta's error to first order.
            if float(step_f @ gf + np.sum(step_r * gr)) < 1e-15 * (1.0 + abs(obj)):
                break
            t = 1.0
            for _ in range(30):
                nf, nu = bf + t * step_f, u + t * step_r
                new, neta = self._penalized(nf, nu, lam_f, lam_r)
                if new >= obj - 1e-12 * abs(obj):
                    break
                t *= 0.5
            else:
                break  # no ascent left at rounding level
            bf, u, obj, eta = nf, nu, new, neta
        self.beta_f, self.u = bf, u
        return bf, u, obj, w, w1, fac, lam_f, lam_r

    def criterion(self, params, gradient=True):
        rho, tau = params[: self.n_rho], params[self.n_rho:]
        self.fam.set_theta(tau)
        bf, u, pen_ll, w, w1, fac, lam_f, lam_r = self.pirls(rho)
        ranks_r = self.d.n_groups
        log_s = (self.rank_s * rho[0] if self.rank_s else 0.0) + ranks_r * float(
            np.sum(rho[1 if self.rank_s else 0:]))
        value = -pen_ll + 0.5 * fac.logdet - 0.5 * log_s
        if not gradient:
            return value
        c, cm, dg = fac.inverse_parts()
        h = fac.leverages(c, cm, dg)
        grad = np.zeros(self.n_rho)
        j = 0
        terms = []
        if self.rank_s:
            terms.append(("smooth", None))
        terms += [("random", t) for t in range(self.d.n_random)]
        for kind, t in terms:
            if kind == "smooth":
                sbf, sbr = lam_f * bf, np.zeros_like(u)
                quad = float(bf @ sbf)
                tr = float(np.sum(lam_f * np.diag(c)))
                rank = self.rank_s
            else:
                sbf = np.zeros_like(bf)
                sbr = np.zeros_like(u)
                sbr[:, t] = lam_r[t] * u[:, t]
                quad = float(u[:, t] @ sbr[:, t])
                tr = float(lam_r[t] * np.sum(dg[:, t, t]))
                rank = self.d.n_groups
            dbf, dbr = fac.solve(-sbf, -sbr)
            deta = self.d.eta(dbf, dbr)
            tr_w = float(np.sum(w1 * deta * h))
            grad[j] = 0.5 * quad + 0.5 * (tr + tr_w) - 0.5 * rank
            j += 1
        if self.fam.n_theta:
            # dV/dtau = -dl/dtau + tr(H^-1 dH/dtau) / 2, dH/dtau = X' diag(dW/dtau
            # + w' X dbeta/dtau) X, dbeta/dtau = H^-1 X' dg/dtau (the score stays zero).
            eta = self.d.eta(bf, u)
            dl, dgr, dw = self.fam.theta_derivatives(self.y, eta)
            g_tau = np.zeros(self.fam.n_theta)
            for m in range(self.fam.n_theta):
                dbf, dbr = fac.solve(*self.d.xt(dgr[:, m]))
                deta = self.d.eta(dbf, dbr)
                g_tau[m] = -float(dl[:, m].sum()) + 0.5 * float(np.sum((dw[:, m] + w1 * deta) * h))
            grad = np.concatenate([grad, g_tau])
        self.cache = dict(fac=fac, c=c, cm=cm, dg=dg, w=w, lam_f=lam_f, lam_r=lam_r)
        return value, grad


def fit_laml(design: MixedDesign, y: np.ndarray, family: Family, smooth: slice,
             penalty: np.ndarray, rho0: np.ndarray | None = None, multistart: bool = True,
             max_iter: int = 200) -> LamlResult:
    """Fits by penalized IRLS, choosing smoothing (and family) parameters by Laplace REML.

    Args:
        design: the structured model matrix.
        y: the coded response (``family.check``).
        family: the response distribution.
        smooth: the smooth's columns within ``design.fixed`` (empty slice: no smooth).
        penalty: ``(pf,)`` unscaled diagonal penalty on the fixed columns.
        rho0: starting log smoothing parameters; default: penalty comparable to the data.
        multistart: also start from low smoothing of the smooth, and restart every random
            effect whose variance collapsed towards zero from interior values (see
            :func:`_restart_collapsed_variances`); the best criterion is kept.
    """
    prob = _Problem(design, y, family, smooth, penalty)
    tau0 = family.start_theta(y)
    family.set_theta(tau0)
    if rho0 is None:
        rho0 = _default_rho(prob, design, penalty)
    n_starts = 2 if multistart and prob.rank_s else 1
    bounds = [_RHO_BOUNDS] * prob.n_rho + [_TAU_BOUNDS] * family.n_theta
    prob.beta_f[0] = float(np.mean(family.start_eta(y)))
    fits = []
    x0 = np.concatenate([np.asarray(rho0, dtype=float), tau0])
    for attempt in range(n_starts):
        if attempt:
            # Second start: the default start with the smooth at low smoothing (wiggly); the
            # family parameters start where the first fit left them.
            x0 = np.concatenate([np.asarray(rho0, dtype=float), fits[0][2].x[prob.n_rho:]])
            x0[0] -= 10.0
        fits.append(_minimize_from(prob, x0, bounds, max_iter))
    best = min(fits, key=lambda f: (not f[1], f[0]))
    if multistart:
        best, extra = _restart_collapsed_variances(prob, best, bounds, max_iter)
        n_starts += extra
    value, converged, res, bf, u, cache = best
    family.set_theta(res.x[prob.n_rho:])
    edf_f, edf_r, edf1 = _edf(design, smooth, cache)
    return LamlResult(beta_f=bf, u=u, rho=res.x[: prob.n_rho], tau=res.x[prob.n_rho:],
                      objective=float(value), converged=converged, n_iter=int(res.nit),
                      cov_f=cache["c"], edf_f=edf_f, edf1_smooth=edf1,
                      edf_total=float(edf_f.sum() + edf_r), weights=cache["w"],
                      starts=n_starts)


#: A random effect whose standard deviation times the root mean square of its covariate is
#: below this (on the linear predictor's scale) is "collapsed": the criterion is flat there,
#: so a vanishing gradient says nothing about whether an interior optimum is better.
COLLAPSED_EFFECT = 0.05
#: Interior restarts of a collapsed variance: sd * rms(z) on the linear predictor's scale.
INTERIOR_EFFECTS = (0.3, 1.0)


def _restart_collapsed_variances(prob: _Problem, best: tuple, bounds: list, max_iter: int,
                                 rounds: int = 2, tol: float = 1e-6) -> tuple[tuple, int]:
    """Restarts the minimisation with each collapsed variance moved back inside.

    As sd_t -> 0 (rho_t -> inf) the Laplace criterion flattens: L-BFGS-B reports a zero
    gradient there whether or not a better interior optimum exists. For every random effect t
    whose effect on eta, sd_t rms(z_t), is below :data:`COLLAPSED_EFFECT`, the fit restarts
    from the current optimum with rho_t = -2 log(e / rms(z_t)) for each e in
    :data:`INTERIOR_EFFECTS` (and once with every collapsed variance moved together); the
    lowest criterion is kept, and the check repeats from the new optimum (``rounds`` times at
    most). Returns the best fit and the number of extra minimisations.
    """
    first = 1 if prob.rank_s else 0
    rms = np.sqrt(np.maximum(np.mean(prob.d.z ** 2, axis=0), 1e-12))
    extra = 0
    for _ in range(rounds):
        x_best = best[2].x
        sd = np.exp(-0.5 * x_best[first:first + prob.d.n_random])
        collapsed = np.flatnonzero(sd * rms < COLLAPSED_EFFECT)
        if not collapsed.size:
            break
        starts = []
        for e in INTERIOR_EFFECTS:
            inside = -2.0 * np.log(e / rms)
            for t in collapsed:
                x0 = x_best.copy()
                x0[first + t] = inside[t]
                starts.append(x0)
            if collapsed.size > 1:
                x0 = x_best.copy()
                x0[first + collapsed] = inside[collapsed]
                starts.append(x0)
        fits = [_minimize_from(prob, x0, bounds, max_iter) for x0 in starts]
        extra += len(fits)
        challenger = min(fits, key=lambda f: (not f[1], f[0]))
        if not (challenger[1] and challenger[0] < best[0] - tol):
            break
        best = challenger
    return best, extra


def _default_rho(prob: _Problem, design: MixedDesign, penalty: np.ndarray) -> np.ndarray:
    # Start with each penalty comparable to its columns' share of the data.
    w0 = 0.25
    counts = np.bincount(design.groups, minlength=design.n_groups).mean()
    rho_r = [np.log(w0 * counts * max(np.mean(design.z[:, t] ** 2), 1e-8))
             for t in range(design.n_random)]
    on = penalty > 0
    rho_s = ([np.log(w0 * np.mean(np.sum(design.fixed[:, on] ** 2, axis=0)) / np.mean(
        penalty[on]))] if prob.rank_s else [])
    return np.array(rho_s + rho_r, dtype=float)


def _minimize_from(prob: _Problem, x0: np.ndarray, bounds: list, max_iter: int) -> tuple:
    """One L-BFGS-B minimisation of the criterion from ``x0``: ``(value, converged, result,
    beta_f, u, cache)`` refitted exactly at the optimum."""

    def fun(params):
        try:
            value, grad = prob.criterion(params)
        except (np.linalg.LinAlgError, ValueError):
            return 1e30, np.zeros_like(params)  # outside the usable region: step back
        if not np.isfinite(value) or not np.all(np.isfinite(grad)):
            return 1e30, np.zeros_like(params)
        return value, grad

    x0 = np.clip(x0, [b[0] for b in bounds], [b[1] for b in bounds])
    res = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": max_iter, "ftol": 1e-12, "gtol": 1e-5})
    # Refit exactly at the optimum so the cached factor matches the reported parameters.
    final, grad = prob.criterion(res.x)
    lo, hi = np.array(bounds).T
    free = ~(((res.x >= hi - 1e-9) & (grad < 0)) | ((res.x <= lo + 1e-9) & (grad > 0)))
    converged = bool(res.success or np.all(np.abs(grad[free]) < 1e-3))
    return final, converged, res, prob.beta_f.copy(), prob.u.copy(), dict(prob.cache)


def _edf(design: MixedDesign, smooth: slice, cache: dict) -> tuple[np.ndarray, float, float]:
    """EDF per fixed coefficient, of the random effects, and the smooth block's tr(2F - FF),
    with F = I - H^-1 S."""
    c = cache["c"]
    lam_f, lam_r = cache["lam_f"], cache["lam_r"]
    cm = cache["cm"]
    edf_f = 1.0 - np.diag(c) * lam_f
    edf_r = 0.0
    if design.n_random:
        edf_r = float(np.sum(1.0 - cache["dg"][:, np.arange(design.n_random),
                                                np.arange(design.n_random)] * lam_r))
    sl = smooth
    if sl.stop > sl.start:
        f_ss = np.eye(sl.stop - sl.start) - c[sl, sl] * lam_f[None, sl]
        f_fs = -c[:, sl] * lam_f[None, sl]
        f_fs[sl, :] = f_ss
        f_sf = -c[sl, :] * lam_f[None, :]
        f_sf[:, sl] = f_ss
        ff = float(np.einsum("ij,ji->", f_sf, f_fs))
        if design.n_random:
            # random k: F[s,k] F[k,s] = (H^-1)_{sk}^2 lambda_k lambda_s
            ff += float(np.einsum("gst,t,s->", cm[:, sl, :] ** 2, lam_r, lam_f[sl]))
        edf1 = 2.0 * float(np.trace(f_ss)) - ff
    else:
        edf1 = 0.0
    return edf_f, edf_r, edf1
