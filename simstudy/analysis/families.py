"""Response distributions for the rating GAMM beyond the Gaussian: yes/no and ordered ratings.

Each family gives, per observation, the log-likelihood l_i(eta_i) of the linear predictor and
its first three derivatives in eta, which is all penalized IRLS (full Newton) and the Laplace
approximate REML of :mod:`simstudy.analysis.laml` need:

* :class:`Binomial` (logit link): l = y eta - log(1 + e^eta), y in {0, 1};
  l' = y - mu, -l'' = mu (1 - mu), -l''' = mu (1 - mu)(1 - 2 mu).
* :class:`OrderedCategorical` (mgcv's ``ocat``): a latent eta + logistic noise falls between cut
  points -inf = theta_0 < theta_1 = -1 < theta_2 < ... < theta_{R-1} < theta_R = inf, so
  P(y = c) = F(theta_c - eta) - F(theta_{c-1} - eta), F logistic. With a, b the two cut points
  minus eta, p = F(b) - F(a), D_m = f^(m-1)(b) - f^(m-1)(a) (f = F', so D1 is f(b) - f(a)):
  l' = -D1 / p, l'' = D2 / p - (D1 / p)^2, l''' = -D3 / p + 3 D1 D2 / p^2 - 2 (D1 / p)^3.
  The free cut points are theta_{c+1} = theta_c + exp(tau_c), c = 1..R-2 (first fixed at -1,
  as in mgcv, so the model keeps its intercept).

References:
    Wood, S. N., Pya, N. and Saefken, B. (2016), "Smoothing parameter and model selection for
    general smooth models", JASA 111:1548-1563 (the ``ocat`` family).

Example:
    >>> import numpy as np
    >>> fam = Binomial()
    >>> round(float(fam.derivatives(np.array([1.0]), np.array([0.0]))[0][0]), 3)
    0.5
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np
from scipy.special import expit, log_expit

from ..core.documents import StrictModel
from ..core.registry import build, entry_model, kinds

__all__ = ["Family", "Binomial", "OrderedCategorical", "make_family", "gaussian_family",
           "binomial_family", "ocat_family"]


def _logistic_density(big_f: np.ndarray):
    """f, f' and f'' of the logistic density at the points where its c.d.f. is ``big_f``
    (all zero at +-inf)."""
    f = big_f * (1 - big_f)
    return f, f * (1 - 2 * big_f), f * (1 - 2 * big_f) ** 2 - 2 * f**2


class Family(ABC):
    """A response distribution: log-likelihood of eta and its derivatives, per observation."""

    name = "family"
    n_theta = 0  # extra parameters estimated with the smoothing parameters

    def check(self, y: np.ndarray) -> np.ndarray:
        """Validates and codes the response; returns it as the family uses it."""
        return np.asarray(y, dtype=float)

    def start_theta(self, y: np.ndarray) -> np.ndarray:
        return np.zeros(0)

    def set_theta(self, tau: np.ndarray) -> None:
        """Sets the family parameters (unconstrained scale); none for a family without any."""
        return None

    def start_eta(self, y: np.ndarray) -> np.ndarray:
        return np.zeros(y.size)

    @abstractmethod
    def loglik(self, y: np.ndarray, eta: np.ndarray) -> float:
        """The log-likelihood of the responses at the linear predictor."""

    @abstractmethod
    def derivatives(self, y: np.ndarray, eta: np.ndarray):
        """(l', -l'', -l''') per observation: the gradient, Newton weight and its derivative."""


    def theta_derivatives(self, y: np.ndarray, eta: np.ndarray):
        """(dl/dtau, dg/dtau, dW/dtau), each ``(n, n_theta)``; g = dl/deta."""
        empty = np.zeros((np.size(y), 0))
        return empty, empty, empty


class Binomial(Family):
    """Bernoulli response with the logit link (``binomial()`` in R)."""

    name = "binomial"

    def check(self, y):
        y = np.asarray(y, dtype=float)
        bad = ~np.isin(y, (0.0, 1.0))
        if bad.any():
            raise ValueError(f"binomial responses must be 0 or 1, got {y[bad][0]:g}")
        return y

    def start_eta(self, y):
        mu = (y + 0.5) / 2.0
        return np.log(mu / (1 - mu))

    def loglik(self, y, eta):
        return float(np.sum(y * log_expit(eta) + (1 - y) * log_expit(-eta)))

    def derivatives(self, y, eta):
        mu = expit(eta)
        w = mu * (1 - mu)
        return y - mu, w, w * (1 - 2 * mu)

    def mean(self, eta: np.ndarray) -> np.ndarray:
        """P(y = 1)."""
        return expit(eta)


class OrderedCategorical(Family):
    """Ordered categories 1..R by a cumulative logit with estimated cut points (mgcv ``ocat``).

    Args:
        n_categories: R, the number of rating levels (e.g. 7 for a 7-point scale).
    """

    name = "ocat"

    def __init__(self, n_categories: int):
        if n_categories < 3:
            raise ValueError("an ordered-categorical response needs at least 3 categories")
        self.n_categories = int(n_categories)
        self.n_theta = self.n_categories - 2
        self.set_theta(np.zeros(self.n_theta))

    def check(self, y):
        y = np.asarray(y, dtype=float)
        bad = (y != np.round(y)) | (y < 1) | (y > self.n_categories)
        if bad.any():
            raise ValueError(f"ordered categories must be integers 1..{self.n_categories}, "
                             f"got {y[bad][0]:g}")
        return y.astype(int)

    def start_theta(self, y):
        # Cut points at the logits of the cumulative shares, shifted so the first is -1.
        counts = np.bincount(y - 1, minlength=self.n_categories) + 0.5
        cum = np.cumsum(counts)[:-1] / counts.sum()
        cuts = np.log(cum / (1 - cum))
        steps = np.maximum(np.diff(cuts), 0.05)
        return np.log(steps)

    def set_theta(self, tau):
        tau = np.asarray(tau, dtype=float)
        self.tau_ = tau
        self.cuts_ = np.concatenate([[-1.0], -1.0 + np.cumsum(np.exp(tau))])

    def start_eta(self, y):
        return np.zeros(y.size)

    def _bounds(self, y, eta):
        full = np.concatenate([[-np.inf], self.cuts_, [np.inf]])
        return full[y - 1] - eta, full[y] - eta

    def loglik(self, y, eta):
        a, b = self._bounds(y, eta)
        return float(np.sum(np.log(np.maximum(expit(b) - expit(a), 1e-300))))

    def derivatives(self, y, eta):
        a, b = self._bounds(y, eta)
        fa, fb = expit(a), expit(b)
        p = np.maximum(fb - fa, 1e-12)  # floor: keeps p^-3 finite far from the data

        da, db = _logistic_density(fa), _logistic_density(fb)
        d1, d2, d3 = (db[m] - da[m] for m in range(3))
        q = d1 / p
        grad = -q
        hess = d2 / p - q**2
        third = -d3 / p + 3 * q * d2 / p - 2 * q**3
        return grad, -hess, -third

    def theta_derivatives(self, y, eta):
        """Derivatives in tau. A cut point theta_j enters l through b (the category's upper
        cut, sign s = +1) or a (its lower cut, s = -1); with v that argument and p, D1, D2 as
        above, dl/dtheta = s f(v) / p, dg/dtheta = s (D1 f(v) / p^2 - f1(v) / p) and
        dh/dtheta = s (f2(v) / p - (D2 f(v) + 2 D1 f1(v)) / p^2 + 2 D1^2 f(v) / p^3), where
        g = dl/deta, h = d2l/deta2, f1 = f', f2 = f''; dtheta_j / dtau_m = exp(tau_m), m < j."""
        a, b = self._bounds(y, eta)
        fa, fb = expit(a), expit(b)
        p = np.maximum(fb - fa, 1e-12)  # floor: keeps p^-3 finite far from the data
        da, db = _logistic_density(fa), _logistic_density(fb)
        d1, d2 = db[0] - da[0], db[1] - da[1]
        n, r = np.size(y), self.n_categories
        out = [np.zeros((n, self.n_theta)) for _ in range(3)]
        step = np.exp(self.tau_)
        rows = np.arange(n)
        for sign, (f0, f1, f2), cut in ((1.0, db, y - 1), (-1.0, da, y - 2)):
            valid = (cut >= 0) & (cut <= r - 2)   # index in cuts_ of this cut point
            dl = sign * f0 / p
            dg = sign * (d1 * f0 / p**2 - f1 / p)
            dh = sign * (f2 / p - (d2 * f0 + 2 * d1 * f1) / p**2 + 2 * d1**2 * f0 / p**3)
            for arr, val in zip(out, (dl, dg, -dh), strict=True):
                contrib = np.zeros((n, self.n_theta + 1))
                contrib[rows[valid], cut[valid]] = val[valid]
                # theta_j moves with every tau_m, m < j: entry m sums the cuts j > m.
                arr += np.cumsum(contrib[:, ::-1], axis=1)[:, ::-1][:, 1:] * step[None, :]
        return tuple(out)

    def probabilities(self, eta: np.ndarray) -> np.ndarray:
        """(n, R) category probabilities at linear predictors eta."""
        cum = expit(self.cuts_[None, :] - np.asarray(eta, dtype=float)[:, None])
        cum = np.column_stack([np.zeros(cum.shape[0]), cum, np.ones(cum.shape[0])])
        return np.diff(cum, axis=1)


# The runtimes of the family kinds; each takes its entry (declared with the runtime in
# :mod:`simstudy.analysis.family_kinds`, which imports this module only when one is built).
def gaussian_family(params: StrictModel, n_categories: int | None = None) -> None:
    """``None``: the gaussian family is the exact REML engine, not a :class:`Family`."""
    return None


def binomial_family(params: StrictModel, n_categories: int | None = None) -> Binomial:
    """The binomial family (logit link)."""
    return Binomial()


def ocat_family(params: StrictModel,
                n_categories: int | None = None) -> OrderedCategorical:
    """The ordered-categorical family over ``n_categories`` (read from the data)."""
    if n_categories is None:
        raise ValueError("the ocat family needs the number of categories")
    return OrderedCategorical(n_categories)


def make_family(name: str, n_categories: int | None = None) -> Family | None:
    """The registered family called ``name`` (``"gaussian"`` gives ``None``: the exact REML
    engine), for data with ``n_categories`` rating categories."""
    if name not in kinds("family"):
        raise ValueError(f"family must be one of {kinds('family')}, got {name!r}")
    return build("family", entry_model("family", name)(), n_categories)
