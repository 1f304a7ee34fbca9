"""Thin-plate regression spline basis for one covariate, built the way mgcv builds ``bs="tp"``.

Wood (2003), "Thin plate regression splines", JRSS-B 65:95-114. For a 1-D covariate and penalty
order m = 2 the thin-plate spline is

    f(x) = sum_j delta_j eta(|x - x_j|) + alpha_0 + alpha_1 x,   eta(r) = r^3 / 12,

with knots x_j at the distinct covariate values, subject to T' delta = 0 (T = [1, x_j]) and with
wiggliness penalty delta' E delta (E_ij = eta(|x_i - x_j|)). The *regression* spline keeps only
the k eigenvectors U_k of E with the largest absolute eigenvalues D_k, writes delta = U_k Z d
where Z spans the null space of T' U_k, and so has k - 2 penalized coefficients d (penalty
Z' D_k Z) plus the 2 unpenalized ones alpha. As in mgcv (``smoothCon`` with ``absorb.cons``),
the sum-to-zero constraint sum_i f(x_i) = 0 over the data is absorbed by a QR decomposition of
the constraint, dropping one coefficient, so the term has k - 1 columns and penalty rank k - 2.

We finally rotate the k - 1 columns so the penalty is diagonal (the last column, unpenalized, is
the centred linear trend), and scale it as mgcv does (``S * ||X||_inf^2 / ||S||_1``) so smoothing
parameters are of order one. Neither rotation nor scaling changes fitted values, EDF or the test.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.linalg import eigsh

__all__ = ["ThinPlateSpline", "default_basis_size", "resolve_basis_size", "MIN_BASIS_SIZE"]

MIN_BASIS_SIZE = 3  # penalty null space (1, x) plus one wiggly direction


def default_basis_size(x: np.ndarray, k: int = 10) -> int:
    """The basis size used for a covariate: ``min(k, distinct values - 1)`` (mgcv's rule of thumb
    for covariates with few distinct values, e.g. sparsity 1..12)."""
    n_unique = np.unique(np.asarray(x, dtype=float)).size
    return int(min(k, n_unique - 1))


def resolve_basis_size(x: np.ndarray, k: int | None = None,
                       default: int = 10) -> tuple[int, str | None]:
    """The basis size a thin-plate term of ``x`` gets, and a warning when the request changed.

    ``k=None`` asks for :func:`default_basis_size`. As mgcv does (``smooth.construct.tp``),
    a size below 3, the smallest a 1-D thin-plate spline with its linear null space allows, is
    raised to 3 with a warning. A size above the number of distinct values is lowered to that
    number with a warning (mgcv stops with an error there). Fewer than 3 distinct values
    cannot carry a smooth: ``ValueError``.
    """
    n_unique = int(np.unique(np.asarray(x, dtype=float)).size)
    if n_unique < MIN_BASIS_SIZE:
        raise ValueError(f"a smooth needs at least {MIN_BASIS_SIZE} distinct covariate values, "
                         f"got {n_unique}")
    wanted = default_basis_size(x, default) if k is None else int(k)
    if wanted < MIN_BASIS_SIZE:
        return MIN_BASIS_SIZE, (f"basis dimension k={wanted} raised to the minimum "
                                f"{MIN_BASIS_SIZE} ({n_unique} distinct values)")
    if wanted > n_unique:
        return n_unique, (f"basis dimension k={wanted} lowered to {n_unique}, the number of "
                          "distinct values")
    return wanted, None


def _eta(r: np.ndarray) -> np.ndarray:
    # 1-D, m = 2 thin-plate radial function: Gamma(-3/2) / (2^4 sqrt(pi) Gamma(2)) r^3 = r^3 / 12.
    return r**3 / 12.0


class ThinPlateSpline:
    """A centred thin-plate regression spline term ``s(x, k=k, bs="tp")``.

    Args:
        k: basis dimension before the centring constraint (the term has ``k - 1`` columns).

    Attributes:
        knots_: the distinct covariate values the radial basis is built on.
        penalty_: diagonal of the (scaled) penalty on the ``k - 1`` coefficients; the last entry
            is 0 (the linear trend is unpenalized).
        rank_: rank of the penalty (``k - 2``).
    """

    def __init__(self, k: int = 10):
        self.k = k

    def _raw(self, x: np.ndarray) -> np.ndarray:
        # Uncentred k-column basis [E(x, knots) U_k Z, 1, x] (x shifted for numerical stability).
        x = np.asarray(x, dtype=float)
        radial = _eta(np.abs(x[:, None] - self.knots_[None, :])) @ self.delta_map_
        return np.column_stack([radial, np.ones_like(x), x - self.shift_])

    def fit(self, x: np.ndarray) -> ThinPlateSpline:
        """Builds the basis and penalty from the covariate values of the data."""
        x = np.asarray(x, dtype=float)
        knots = np.unique(x)
        k = int(self.k)
        if k < 3:
            raise ValueError(f"basis dimension k must be at least 3, got {k}")
        if knots.size < k:
            raise ValueError(f"k={k} needs at least {k} distinct covariate values, "
                             f"got {knots.size}")
        self.shift_ = float(np.mean(x))
        self.knots_ = knots
        kc = knots - self.shift_
        e = _eta(np.abs(kc[:, None] - kc[None, :]))
        if knots.size > 4 * k:
            # Only the k largest-magnitude eigenpairs are needed (mgcv uses Lanczos too).
            evals, evecs = eigsh(e, k=k, which="LM", v0=np.ones(knots.size))
        else:
            evals, evecs = np.linalg.eigh(e)
        order = np.argsort(-np.abs(evals))[:k]
        uk, dk = evecs[:, order], evals[order]
        t = np.column_stack([np.ones_like(kc), kc])
        # Z: orthonormal basis of the null space of T' U_k (the radial coefficients' constraint).
        q, _ = np.linalg.qr((t.T @ uk).T, mode="complete")
        z = q[:, 2:]
        self.delta_map_ = uk @ z                                # delta = U_k Z d
        s_radial = z.T @ (dk[:, None] * z)
        s_full = np.zeros((k, k))
        s_full[: k - 2, : k - 2] = (s_radial + s_radial.T) / 2
        # Absorb the centring constraint 1' X beta = 0 (QR of the constraint, drop first column).
        raw = self._raw(x)
        c = raw.sum(axis=0)[:, None]
        qc, _ = np.linalg.qr(c, mode="complete")
        zc = qc[:, 1:]
        s_c = zc.T @ s_full @ zc
        # Rotate so the penalty is diagonal; the smallest eigenvalue is the (exact) null space.
        ev, rot = np.linalg.eigh((s_c + s_c.T) / 2)
        order = np.argsort(-ev)
        ev, rot = ev[order], rot[:, order]
        ev[-1] = 0.0
        ev = np.maximum(ev, 0.0)
        self.coef_map_ = zc @ rot                              # raw k coefs = coef_map_ @ beta
        design = raw @ self.coef_map_
        scale = np.abs(design).sum(axis=1).max() ** 2 / max(ev.max(), 1e-300)
        self.penalty_ = ev * scale
        self.rank_ = int(np.sum(ev > 0))
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        """The ``(n, k - 1)`` centred design matrix at covariate values ``x``."""
        return self._raw(np.asarray(x, dtype=float)) @ self.coef_map_
