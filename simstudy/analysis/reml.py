"""Penalized least squares with smoothing parameters chosen by REML (Gaussian, unknown scale).

The model is y = X beta + e, e ~ N(0, sigma^2 I), with a quadratic penalty
beta' S_lambda beta, S_lambda = sum_j lambda_j S_j, where each S_j acts on its own block of
coefficients (a smooth's wiggliness penalty, or the identity on a random-effect block). Reading
the penalty as the prior beta ~ N(0, sigma^2 S_lambda^-) makes this a linear mixed model, and the
smoothing parameters are estimated by maximizing its restricted likelihood (Wood 2011, "Fast
stable restricted maximum likelihood and marginal likelihood estimation of semiparametric
generalized linear models", JRSS-B 73:3-36). With the scale profiled out,

    -2 l_r(rho) = (n - M_p) log D_p + log|X'X + S_lambda| - log|S_lambda|_+ + const,
    D_p = ||y - X beta_hat||^2 + beta_hat' S_lambda beta_hat,
    sigma_hat^2 = D_p / (n - M_p),

where rho_j = log lambda_j, M_p is the dimension of the penalty null space and, because the
blocks do not overlap, log|S_lambda|_+ = sum_j rank_j rho_j + const. It is minimized by Newton's
method on rho with the exact gradient and Hessian

    d/drho_j   = (n - M_p) D_j / D_p + tr(A^-1 S~_j) - rank_j,
    D_j        = beta' S~_j beta,            S~_j = lambda_j S_j,   A = X'X + S_lambda,
    D_jk       = delta_jk D_j - 2 beta' S~_j A^-1 S~_k beta,
    d2/drho_jk = (n - M_p)(D_jk / D_p - D_j D_k / D_p^2)
                 + delta_jk tr(A^-1 S~_j) - tr(A^-1 S~_j A^-1 S~_k),

using that d beta / d rho_k = -A^-1 S~_k beta and, by the envelope theorem, dD_p/drho_j = D_j.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve, lapack

__all__ = ["PenaltyBlock", "RemlResult", "fit_reml", "low_smoothing_start"]

_RHO_BOUND = 25.0  # |log lambda| beyond this the term is fully smoothed / unpenalized already


@dataclass(frozen=True)
class PenaltyBlock:
    """One penalty: ``lambda * diag(weights)`` on the coefficients ``start:stop``.

    All penalties in simstudy are diagonal after reparametrization (the spline's penalty is
    diagonalized by :class:`~simstudy.analysis.smooth.ThinPlateSpline`, random effects are
    identity-penalized), which keeps the Hessian computations cheap.
    """

    start: int
    stop: int
    weights: np.ndarray

    @property
    def rank(self) -> int:
        return int(np.sum(self.weights > 0))


@dataclass
class RemlResult:
    """A REML fit: coefficients, smoothing parameters, scale and the quantities tests need."""

    beta: np.ndarray
    rho: np.ndarray
    scale: float
    a_inv: np.ndarray          # (X'X + S_lambda)^-1; Bayesian covariance is scale * a_inv
    xtx: np.ndarray
    edf: np.ndarray            # per-coefficient EDF, diag(F), F = A^-1 X'X
    objective: float
    n_iter: int
    converged: bool
    starts: int = 1            # Newton starts tried; the best criterion is kept
    objective_spread: float = 0.0  # worst minus best criterion over the converged starts

    @property
    def vp(self) -> np.ndarray:
        """Bayesian posterior covariance of the coefficients (mgcv's ``Vp``)."""
        return self.scale * self.a_inv


def _penalty_diag(p: int, blocks: list[PenaltyBlock], rho: np.ndarray) -> np.ndarray:
    d = np.zeros(p)
    for block, r in zip(blocks, rho, strict=True):
        d[block.start:block.stop] += np.exp(r) * block.weights
    return d


def _evaluate(xtx, xty, yty, n_minus_mp, blocks, rho, derivatives):
    p = xtx.shape[0]
    a = xtx.copy()
    a[np.diag_indices(p)] += _penalty_diag(p, blocks, rho)
    factor = cho_factor(a, lower=False, check_finite=False)
    beta = cho_solve(factor, xty, check_finite=False)
    dp = max(yty - beta @ xty, 1e-300)
    logdet_a = 2.0 * np.sum(np.log(np.diag(factor[0])))
    ranks = np.array([b.rank for b in blocks], dtype=float)
    value = n_minus_mp * np.log(dp) + logdet_a - ranks @ rho
    if not derivatives:
        return value, beta, dp, None, None, None
    # Inverse from the Cholesky factor (LAPACK potri), symmetrized from its upper triangle.
    a_inv, info = lapack.dpotri(factor[0], lower=0)
    if info != 0:
        raise LinAlgError("cannot invert the penalized normal matrix")
    a_inv = np.triu(a_inv) + np.triu(a_inv, 1).T
    m = len(blocks)
    lam = np.exp(rho)
    d1 = np.empty(m)
    tr1 = np.empty(m)
    sb = []  # S~_j beta restricted to the block
    for j, b in enumerate(blocks):
        sl = slice(b.start, b.stop)
        sbj = lam[j] * b.weights * beta[sl]
        sb.append(sbj)
        d1[j] = beta[sl] @ sbj
        tr1[j] = lam[j] * np.sum(b.weights * np.diag(a_inv)[sl])
    grad = n_minus_mp * d1 / dp + tr1 - ranks
    d2 = np.zeros((m, m))
    tr2 = np.zeros((m, m))
    for j, bj in enumerate(blocks):
        for k in range(j, m):
            bk = blocks[k]
            sub = a_inv[bj.start:bj.stop, bk.start:bk.stop]
            left = (lam[j] * bj.weights)[:, None] * sub
            right = sub * (lam[k] * bk.weights)[None, :]
            tr2[j, k] = tr2[k, j] = np.sum(left * right)
            d2[j, k] = d2[k, j] = -2.0 * sb[j] @ sub @ sb[k]
    d2[np.diag_indices(m)] += d1
    hess = n_minus_mp * (d2 / dp - np.outer(d1, d1) / dp**2) + np.diag(tr1) - tr2
    return value, beta, dp, grad, hess, a_inv


def _initial_rho(xtx: np.ndarray, blocks: list[PenaltyBlock]) -> np.ndarray:
    # Start where penalty and data carry similar weight on each block's penalized directions.
    rho = []
    for b in blocks:
        on = b.weights > 0
        data = np.diag(xtx)[b.start:b.stop][on].mean()
        pen = b.weights[on].mean()
        rho.append(np.log(max(data, 1e-8) / pen))
    return np.array(rho)


def low_smoothing_start(rho: np.ndarray, blocks: list[PenaltyBlock],
                        smooth_blocks: list[int], shift: float = 10.0) -> np.ndarray:
    """A second start: the smooths' log smoothing parameters ``shift`` lower (wiggly fits).

    The REML criterion of a smooth with few distinct covariate values can have a near-linear
    and a wigglier local optimum; Newton from the default start reaches the first. Starting
    also from low smoothing and keeping the better criterion reaches the global one.
    """
    out = np.asarray(rho, dtype=float).copy()
    out[list(smooth_blocks)] -= shift
    return np.clip(out, -_RHO_BOUND, _RHO_BOUND)


def fit_reml(
    x: np.ndarray,
    y: np.ndarray,
    blocks: list[PenaltyBlock],
    null_space_dim: int,
    rho0: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-4,
    xtx: np.ndarray | None = None,
    smooth_blocks: tuple[int, ...] = (),
) -> RemlResult:
    """Fits the penalized model by REML, from one or more starts.

    Args:
        x: ``(n, p)`` design matrix.
        y: ``(n,)`` response.
        blocks: the penalties, on disjoint coefficient ranges.
        null_space_dim: M_p, the number of unpenalized directions of S_lambda.
        rho0: starting log smoothing parameters (warm start); default heuristic.
        max_iter: Newton iterations at most (per start).
        tol: convergence tolerance on the gradient of -2 log restricted likelihood.
        xtx: precomputed ``x' x`` (optional).
        smooth_blocks: indices of the blocks that are smooths; when given, Newton also starts
            from low smoothing of these (:func:`low_smoothing_start`) and the fit with the
            lower criterion is kept (converged fits preferred).

    Returns:
        :class:`RemlResult`.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n, p = x.shape
    if xtx is None:
        xtx = x.T @ x
    xty = x.T @ y
    yty = float(y @ y)
    n_minus_mp = n - null_space_dim
    if n_minus_mp <= 0:
        raise ValueError(f"{n} observations cannot estimate a model with {null_space_dim} "
                         "unpenalized coefficients")
    first = _initial_rho(xtx, blocks) if rho0 is None else np.asarray(rho0, dtype=float).copy()
    starts = [first]
    if smooth_blocks:
        starts.append(low_smoothing_start(first, blocks, smooth_blocks))
    fits = [_newton(xtx, xty, yty, n_minus_mp, blocks, rho, max_iter, tol) for rho in starts]
    best = min(fits, key=lambda f: (not f.converged, f.objective))
    ok = [f.objective for f in fits if f.converged]
    best.starts = len(fits)
    best.objective_spread = float(max(ok) - min(ok)) if ok else float("nan")
    return best


def _newton(xtx, xty, yty, n_minus_mp, blocks, rho, max_iter, tol) -> RemlResult:
    """Newton's method on the REML criterion from one start."""
    rho = np.clip(np.asarray(rho, dtype=float), -_RHO_BOUND, _RHO_BOUND)
    value, beta, dp, grad, hess, a_inv = _evaluate(xtx, xty, yty, n_minus_mp, blocks, rho, True)
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 - reported after the loop
        # Directions pinned at a bound with the gradient pushing outwards are held fixed.
        free = ~(((rho >= _RHO_BOUND) & (grad < 0)) | ((rho <= -_RHO_BOUND) & (grad > 0)))
        # The score is -2 x log restricted likelihood: a gradient below 1e-4 changes it by far
        # less than anything that matters (terms heading to zero variance converge slowly).
        if not free.any() or np.all(np.abs(grad[free]) < tol):
            converged = True
            break
        step = np.zeros_like(rho)
        h = hess[np.ix_(free, free)]
        ev, vec = np.linalg.eigh(h)
        # Make the Hessian positive definite (flat directions = terms at their limit).
        ev = np.maximum(np.abs(ev), 1e-6 * max(1.0, np.abs(ev).max()))
        step[free] = -vec @ ((vec.T @ grad[free]) / ev)
        big = np.max(np.abs(step))
        if big > 5.0:
            step *= 5.0 / big
        accepted = False
        for _ in range(30):
            trial = np.clip(rho + step, -_RHO_BOUND, _RHO_BOUND)
            try:
                t_value = _evaluate(xtx, xty, yty, n_minus_mp, blocks, trial, False)[0]
            except LinAlgError:
                t_value = np.inf
            if t_value <= value + 1e-4 * (grad @ (trial - rho)):
                accepted = True
                break
            step *= 0.5
        if not accepted:
            converged = bool(np.all(np.abs(grad[free]) < 100 * tol))
            break
        old = value
        rho = trial
        value, beta, dp, grad, hess, a_inv = _evaluate(
            xtx, xty, yty, n_minus_mp, blocks, rho, True)
        if abs(old - value) < 1e-10 * (1.0 + abs(value)) and np.max(np.abs(step)) < 1e-4:
            converged = True
            break
    scale = dp / n_minus_mp
    edf = np.einsum("ij,ji->i", a_inv, xtx)
    return RemlResult(beta=beta, rho=rho, scale=float(scale), a_inv=a_inv, xtx=xtx, edf=edf,
                      objective=float(value), n_iter=n_iter, converged=bool(converged))
