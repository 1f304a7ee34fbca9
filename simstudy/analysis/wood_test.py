"""Wood's (2013) test that a penalized smooth term is zero, as mgcv's ``summary.gam`` computes it.

Wood, S. N. (2013), "On p-values for smooth components of an extended generalized additive
model", Biometrika 100:221-228. For a smooth with coefficients b, model-matrix columns X_t and
Bayesian covariance V_b, let R be the triangular factor of X_t (so f = X_t b has covariance
R V_b R') and r its reference rank, the smooth's alternative EDF tr(2F - F^2) over its block
(mgcv's ``edf1``), at most the number of columns. The statistic is

    T = (R b)' [R V_b R']_r^- (R b),

with a rank-r pseudo-inverse; a fractional r = k + nu uses the first k - 1 eigen-directions in
full and a 2 x 2 blend of directions k and k + 1 (whose two orientations give two statistics
whose p-values are averaged). Under H0, T is a weighted sum of chi^2_1 variables with weights 1
(k - 1 times) and (1 + nu +- sqrt((1 + nu)(1 - nu))) / 2; with an estimated scale each is divided
by chi^2_k0 / k0, k0 = max(1, round(rdf)), rdf = n - total EDF. As in mgcv 1.8-41, the upper
tail is the exact probability of a weighted sum of chi-squares with weights of both signs,

    P[T_ref > T] = P[sum_i w_i chi^2_1 - (T / k0) chi^2_k0 > 0],

(:func:`psum_chisq`); an integer r (no fractional part) uses the F(r, rdf) or chi^2_r reference.
``F`` reported is T / r. The older Pearson / Liu-Tang-Zhang moment approximation
(:func:`liu_tail`, :func:`mixture_f_tail`) is kept for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import integrate, stats

__all__ = ["SmoothTest", "smooth_test", "psum_chisq", "liu_tail", "mixture_f_tail"]


@dataclass(frozen=True)
class SmoothTest:
    """Result of the test of one smooth: ``ref_df`` (r), ``stat`` (T), ``F`` = T / r, ``p``."""

    ref_df: float
    stat: float
    F: float
    p: float


def liu_tail(x: np.ndarray | float, weights: np.ndarray) -> np.ndarray:
    """P[sum_i w_i chi^2_1 > x] by the Liu-Tang-Zhang (2009) moment-matched chi-square."""
    w = np.asarray(weights, dtype=float)
    mu = w.sum()
    c2 = np.sum(w**2)
    c3 = np.sum(w**3)
    c4 = np.sum(w**4)
    s1 = c3 / c2**1.5
    s2 = c4 / c2**2
    t = (np.asarray(x, dtype=float) - mu) / np.sqrt(2.0 * c2)
    if s1**2 > s2:
        a = 1.0 / (s1 - np.sqrt(s1**2 - s2))
        delta = s1 * a**3 - a**2
        dof = a**2 - 2.0 * delta
    else:
        a = 1.0 / s1
        delta = 0.0
        dof = c2**3 / c3**2
    q = t * np.sqrt(2.0) * a + dof + delta
    if delta > 0:
        return stats.ncx2.sf(q, dof, delta)
    return stats.chi2.sf(q, dof)


def psum_chisq(q: float, weights, df=None) -> float:
    """P[sum_j w_j chi^2_{h_j} > q] exactly, by Imhof's (1961) inversion of the characteristic
    function (weights may have either sign; ``df`` are the integer h_j, default 1):

        P[Q > q] = 1/2 + (1/pi) int_0^inf sin(theta(u)) / (u rho(u)) du,
        theta(u) = (1/2) sum_j h_j atan(w_j u) - q u / 2,
        rho(u)   = prod_j (1 + w_j^2 u^2)^(h_j / 4).

    mgcv's ``psum.chisq`` computes the same probability with Davies' (1980) algorithm; a short
    numerical integral (scipy's QUADPACK) is used here because no maintained Python package
    provides either method.

    References:
        Imhof, J. P. (1961), "Computing the distribution of quadratic forms in normal
        variables", Biometrika 48:419-426.

    Example:
        >>> round(psum_chisq(3.0, [1.0, 1.0]), 6) == round(float(stats.chi2.sf(3.0, 2)), 6)
        True
    """
    w = np.asarray(weights, dtype=float)
    h = np.ones_like(w) if df is None else np.asarray(df, dtype=float)
    keep = w != 0
    w, h = w[keep], h[keep]
    if w.size == 0:
        raise ValueError("at least one weight must be non-zero")

    hw = float(h @ w)

    def phase(u):
        return 0.5 * (h @ np.arctan(np.multiply.outer(w, u)))

    def envelope(u):  # 1 / (u rho(u))
        return np.exp(-0.25 * (h @ np.log1p(np.multiply.outer(w, u) ** 2))) / u

    def integrand(u: float) -> float:
        if u == 0.0:
            return 0.5 * (hw - q)
        return float(np.sin(phase(u) - 0.5 * q * u) * envelope(u))

    quad = dict(limit=200, epsabs=1e-10, epsrel=1e-8)
    omega = 0.5 * q
    if abs(omega) < 1e-12:
        value = integrate.quad(integrand, 0.0, np.inf, **quad)[0]
    else:
        # sin(phase - omega u) = sin(phase) cos(omega u) - cos(phase) sin(omega u): past the
        # first period the two smooth, decaying parts go to QUADPACK's Fourier-integral rule.
        a = 2.0 * np.pi / abs(omega)
        value = integrate.quad(integrand, 0.0, a, **quad)[0]
        value += integrate.quad(lambda u: float(np.sin(phase(u)) * envelope(u)), a, np.inf,
                                weight="cos", wvar=omega, limlst=200)[0]
        value -= integrate.quad(lambda u: float(np.cos(phase(u)) * envelope(u)), a, np.inf,
                                weight="sin", wvar=omega, limlst=200)[0]
    return float(min(1.0, max(0.0, 0.5 + value / np.pi)))


def mixture_f_tail(x: float, weights: np.ndarray, res_df: float, n_quad: int = 50) -> float:
    """P[sum_i w_i chi^2_1 / (chi^2_rdf / rdf) > x] by quadrature over the denominator."""
    probs = (np.arange(1, n_quad + 1) - 0.5) / n_quad
    q = stats.chi2.ppf(probs, res_df)
    return float(np.mean(liu_tail(x * q / res_df, weights)))


def smooth_test(
    coef: np.ndarray, xt: np.ndarray, vb: np.ndarray, rank: float, res_df: float = -1.0
) -> SmoothTest:
    """Wood's (2013) test of a smooth term (mgcv ``testStat`` with ``type = 0``).

    Args:
        coef: the smooth's coefficients b.
        xt: the smooth's model-matrix columns (n x q), or any matrix with the same X_t'X_t.
        vb: Bayesian covariance of b (q x q).
        rank: reference rank r (mgcv passes min(q, edf1)).
        res_df: residual degrees of freedom of an estimated scale; <= 0 for a known scale.
    """
    r_fac = np.linalg.qr(xt, mode="r")
    evals, evecs = _eigen(r_fac @ vb @ r_fac.T)
    vec, vec1, rank, k, k1, nu = _projections(evals, evecs, rank)
    rb = r_fac @ coef
    d = float(np.sum((vec.T @ rb) ** 2))
    d1 = float(np.sum((vec1.T @ rb) ** 2))
    pval = _p_value(d, d1, rank, k, k1, nu, res_df)
    return SmoothTest(ref_df=float(rank), stat=d, F=d / rank if rank > 0 else np.nan,
                      p=min(1.0, pval))


def _eigen(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Eigen-decomposition of the symmetrised v, largest first, with eigenvector signs fixed
    # (first element non-negative) so the statistic is well defined.
    v = (v + v.T) / 2
    evals, evecs = np.linalg.eigh(v)
    order = np.argsort(-evals)
    evals, evecs = evals[order], evecs[:, order]
    signs = np.sign(evecs[0, :])
    signs[signs == 0] = 1.0
    return evals, evecs * signs


def _projections(evals: np.ndarray, evecs: np.ndarray, rank: float) -> tuple:
    """The two projection matrices of the statistic (equal at an integer rank), the rank used
    (lowered to the numerical rank), its integer part ``k``, ``k1`` and fractional part ``nu``."""
    k = max(0, int(np.floor(rank)))
    nu = abs(rank - k)
    k1 = k + 1 if nu > 0 else k
    r_est = int(np.sum(evals > evals.max() * np.finfo(float).eps ** 0.9))
    if r_est < k1:
        k1 = k = r_est
        nu = 0.0
        rank = float(r_est)
    vec = evecs[:, :k1].copy()
    if nu > 0 and k > 0:
        if k > 1:
            vec[:, : k - 1] /= np.sqrt(evals[: k - 1])
        b12 = np.sqrt(max(0.5 * nu * (1 - nu), 0.0))
        ev = np.diag(evals[k - 1:k1] ** -0.5)
        blend = ev @ np.array([[1.0, b12], [b12, nu]]) @ ev
        eb, ebv = np.linalg.eigh(blend)
        root = ebv @ np.diag(np.sqrt(np.maximum(eb, 0.0))) @ ebv.T
        vec1 = vec.copy()
        vec1[:, k - 1:k1] = (root @ np.diag([-1.0, 1.0]) @ vec[:, k - 1:k1].T).T
        vec[:, k - 1:k1] = (root @ vec[:, k - 1:k1].T).T
    else:
        if k == 0:
            vec = vec / np.sqrt(evals[0]) if vec.shape[1] else evecs[:, :1] / np.sqrt(evals[0])
        else:
            vec = vec / np.sqrt(evals[:k])
        vec1 = vec
        if k == 1:
            rank = 1.0
    return vec, vec1, rank, k, k1, nu


def _p_value(d: float, d1: float, rank: float, k: int, k1: int, nu: float,
             res_df: float) -> float:
    """The p-value of the statistics ``d``, ``d1``: a weighted chi^2 sum at a fractional rank,
    else the plain chi^2 (known scale) or F (estimated scale) reference."""
    rank1 = rank
    if nu > 0:
        if k1 == 1:
            rank1 = 1.0
            weights = np.array([1.0])
        else:
            weights = np.ones(k1)
            rp = nu + 1
            weights[k - 1] = (rp + np.sqrt(rp * (2 - rp))) / 2
            weights[k1 - 1] = rp - weights[k - 1]
        if res_df <= 0:
            pval = (psum_chisq(d, weights) + psum_chisq(d1, weights)) / 2
        else:
            k0 = max(1, round(res_df))
            dfs = np.append(np.ones(weights.size), k0)
            pval = (psum_chisq(0.0, np.append(weights, -d / k0), dfs)
                    + psum_chisq(0.0, np.append(weights, -d1 / k0), dfs)) / 2
    else:
        pval = 2.0
    if pval > 1.0:
        # Integer reference rank: the plain F / chi^2 reference.
        if res_df <= 0:
            pval = float((stats.chi2.sf(d, rank1) + stats.chi2.sf(d1, rank1)) / 2)
        else:
            pval = float((stats.f.sf(d / rank1, rank1, res_df)
                          + stats.f.sf(d1 / rank1, rank1, res_df)) / 2)
    return pval
