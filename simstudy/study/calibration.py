"""Calibrating the rating model to pilot data by maximum likelihood (``simstudy calibrate``).

The rating model (:mod:`simstudy.people.rating`) says participant ``i`` rates recourse ``j`` by
cutting a latent propensity (in rating points) at the half points ``c_k = k + 1/2``:

    eta_ij = b0 + f(d_ij) - p blocked_ij + a_i + e_ij,   f(d) = -s (d - d_min),
    P(y_ij = k | a_i) = Phi((c_k - m_ij) / sd) - Phi((c_{k-1} - m_ij) / sd),

for acceptance and action alike (the blocked penalty ``p`` for action only, where the data has a
``blocked`` column that varies), with the participant's intercepts ``(a_accept, a_act)``
bivariate normal (SDs ``sd_a``, correlation ``rho``) and normal rating noise ``e`` (SD ``sd``).
The scale's thresholds are the model's own half points, so the intercept and the noise SD set
the rating distribution's location and spread on that scale (free thresholds would give a model
the simulator cannot use); the participants' random slopes are not estimated (``sd_slope`` 0:
a pilot of a few ratings per person does not identify them).

**Why not statsmodels.** ``OrderedModel`` fits ordinal regressions without random effects, and
``MixedLM`` random effects without an ordinal response; the participant effects carry most of
the variance here, so they must be integrated out. The marginal likelihood

    L(theta) = prod_i  int prod_j P(accept_ij | a) P(act_ij | a) phi_2(a; 0, Sigma) da

is computed by adaptive Gauss-Hermite quadrature over the participant effects (Liu and Pierce
1994, as ``ordinal::clmm`` and ``lme4`` do): for each participant Newton's method finds the
mode of the integrand and its curvature, and a product rule is centred and scaled there. The
number of nodes per dimension is the first of :data:`NODES` whose log-likelihood at the
maximum moves less than :data:`QUADRATURE_TOLERANCE` at the next count (reported as
``quadrature:``); a fixed, non-adaptive rule of 10 nodes was off by up to 0.40 on an
intercept and 0.55 on an intercept SD where person effects are wide against the rating noise
(``docs/results/calibration.md``). The likelihood is
maximised with scipy's BFGS over unconstrained parameters
(``log`` SDs, ``atanh`` correlation). A single rating's fit is the cumulative probit mixed
model with equidistant thresholds (``theta_1 = (1.5 - b0) / sd``, spacing ``1 / sd``,
``beta = -slope / sd``, ``ST = sd_a / sd``) and agrees with ``ordinal::clmm`` on the same data
within 1e-5 (``tests/data/clmm``). The likelihood is written with torch, so
its gradient is exact: differentiated through the quadrature and through the participants'
modes (implicitly, by one Newton step taken with a graph); BFGS on it reaches the same
estimates as on central differences (within 3e-8 on pilots of 30 participants) in 35-42%
of the time. The covariance of the estimates is the inverse of the Hessian of ``-log L`` at the
maximum, central differences of the exact gradient (statsmodels' ``approx_fprime``; its
standard errors agree with ``approx_hess3`` on the likelihood itself within 2e-6 relative).
Intervals are chosen by measured coverage (:data:`INTERVAL_METHODS`,
``docs/results/calibration.md``): Wald for intercepts, slopes and the blocked penalty (the
profile likelihood covered the same pilots within one); the profile likelihood for SDs and
the correlation (Venzon and Moolgavkar 1988), which reaches the boundary 0 or +-1 where the
data cannot exclude it. Both use Student's t quantile on participants - 1 degrees of freedom
(:data:`INTERVAL_REFERENCE`): with the normal quantile the intervals of intercepts, slopes
and the penalty covered 0.936 on average over 94 pilots of 30 participants (the estimates
spread 1.07 times the standard error on average).

**Goodness of fit.** Replicate studies are simulated from the fitted model with the data's own
design (participants, distances, blocked) and the share of each rating per sparsity compared
with the observed share (:func:`goodness_of_fit`).

References:
    Liu, Q. and Pierce, D. A. (1994). A note on Gauss-Hermite quadrature. Biometrika 81(3),
    624-629.
    Hedeker, D. and Gibbons, R. D. (1994). A random-effects ordinal regression model for
    multilevel analysis. Biometrics 50(4), 933-944.
    Venzon, D. J. and Moolgavkar, S. H. (1988). A method for computing profile-likelihood-based
    confidence intervals. Applied Statistics 37(1), 87-94.
    Christensen, R. H. B. (2019). ordinal: regression models for ordinal data (clmm).

Example:
    >>> import numpy as np, pandas as pd
    >>> from simstudy.people.response_params import RatingResponseParams
    >>> truth = RatingResponseParams(kind="rating").build()
    >>> table = simulate_pilot(truth, 40, np.random.default_rng(1))
    >>> fit = calibrate(table, ratings=["act"])
    >>> row = fit.intervals_.set_index("parameter").loc["act.blocked_penalty"]
    >>> fit.converged_, bool(row["lower"] < 2.0 < row["upper"])
    (True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import optimize, stats
from statsmodels.tools.numdiff import approx_fprime
from torch.special import log_ndtr

from ..analysis.inputs import repeated_rows, unused_top
from ..core.documents import DocumentError, DocumentProblem, load_yaml, validate_data
from ..core.intervals import around, wald_interval
from ..people.response import ResponseInputs
from ..people.response_params import CUTS, RatingResponseParams

__all__ = ["NODES", "QUADRATURE_TOLERANCE", "INTERVAL_METHODS", "INTERVAL_REFERENCE",
           "COVERAGE_PARTICIPANTS", "PilotError", "pilot_problems", "boundary_warnings",
           "Calibration", "calibrate", "simulate_pilot", "goodness_of_fit",
           "calibration_document", "load_calibration", "draw_response"]

#: Adaptive Gauss-Hermite nodes per participant-effect dimension, tried in turn: the first
#: whose log-likelihood at the maximum moves less than :data:`QUADRATURE_TOLERANCE` when the
#: next count is used is kept (``Calibration.quadrature_``).
NODES = (7, 11, 15, 21, 31, 41, 61)
QUADRATURE_TOLERANCE = 1e-6
#: The largest correlation of the participants' intercepts the likelihood distinguishes.
RHO_BOUND = 0.999
_ATANH_BOUND = math.atanh(RHO_BOUND)


class _Bounds:
    """A rating column's category bounds ``c_y`` and ``c_{y-1}`` per row (``rows x 1``), the
    scale's open ends (``y = 7`` above, ``y = 1`` below) stood in by 0 and flagged, so no
    infinity enters a derivative."""

    def __init__(self, y: np.ndarray):
        top = np.r_[CUTS, np.inf][np.clip(y - 1, 0, 6)][:, None]
        bottom = np.r_[-np.inf, CUTS][np.clip(y - 1, 0, 6)][:, None]
        self.has_top = torch.from_numpy(np.isfinite(top))
        self.has_bottom = torch.from_numpy(np.isfinite(bottom))
        self.top = torch.from_numpy(np.where(np.isfinite(top), top, 0.0))
        self.bottom = torch.from_numpy(np.where(np.isfinite(bottom), bottom, 0.0))


def _log_probs(bounds: _Bounds, mean: torch.Tensor, sd: torch.Tensor, derivatives: bool = True
               ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """log P(rating y | latent mean) for ratings 1..7 (``bounds`` per row, ``mean`` rows x
    nodes) and, with ``derivatives``, its first and second derivatives in the mean's shift
    ``a``:

        P = Phi(u) - Phi(l),  u = (c_y - m) / sd,  l = (c_{y-1} - m) / sd,
        d log P / da = (phi(l) - phi(u)) / (sd P),
        d2 log P / da2 = (l phi(l) - u phi(u)) / (sd^2 P) - (d log P / da)^2,

    stable in both tails (above the mean's category the mirror image ``Phi(-l) - Phi(-u)``,
    with ``log_ndtr``), and differentiable in the mean and ``sd`` (torch tensors)."""
    upper, lower = (bounds.top - mean) / sd, (bounds.bottom - mean) / sd
    mirror = bounds.has_bottom & (lower > 0)
    hi = torch.where(mirror, -lower, upper)
    lo = torch.where(mirror, -upper, lower)
    hi_open = ~mirror & ~bounds.has_top                      # hi = +inf: Phi(hi) = 1
    lo_open = torch.where(mirror, ~bounds.has_top, ~bounds.has_bottom)   # lo = -inf
    log_hi = torch.where(hi_open, 0.0, log_ndtr(torch.where(hi_open, 0.0, hi)))
    log_lo = torch.where(lo_open, -math.inf, log_ndtr(torch.where(lo_open, 0.0, lo)))
    # log(1 - exp(d)) for d = log_lo - log_hi <= 0, in its accurate form on either side of
    # -log 2; d is kept below 0 so a vanishing category stays finite (and is floored below)
    d = (log_lo - log_hi).clamp(max=-1e-300)
    near = d > -math.log(2.0)
    log1m = torch.where(near, torch.log(-torch.expm1(torch.where(near, d, -1.0))),
                        torch.log1p(-torch.exp(torch.where(near, -1.0, d))))
    logp = (log_hi + log1m).clamp(min=-1e4)
    if not derivatives:
        return logp
    r_u = torch.where(bounds.has_top, torch.exp(-0.5 * upper ** 2 - _LOG_SQRT_2PI - logp), 0.0)
    r_l = torch.where(bounds.has_bottom, torch.exp(-0.5 * lower ** 2 - _LOG_SQRT_2PI - logp),
                      0.0)
    d1 = (r_l - r_u) / sd
    d2 = (lower * r_l - upper * r_u) / sd ** 2 - d1 ** 2
    return logp, d1, d2


_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


@dataclass
class Calibration:
    """A fitted rating model (see the module docstring).

    Attributes:
        ratings: the ratings fitted (``accept``, ``act``).
        distance: the distance column.
        d_min: the distance at which ``f = 0``.
        names_: the unconstrained parameters, e.g. ``act.intercept``, ``log act.sd_noise``.
        theta_: their estimates; ``covariance_`` their covariance.
        estimates_: natural-scale estimates by parameter (``act.sd_noise``, ...).
        intervals_: ``parameter, estimate, lower, upper`` (95%, natural scale), the
            parameter's ``scale`` and interval ``method``; ``interval_reference_`` the
            quantile's distribution (``t`` or ``normal``), degrees of freedom and value.
        log_likelihood_, converged_: the maximum and whether BFGS reports convergence.
    """

    ratings: list[str]
    distance: str = "sparsity"
    d_min: float = 1.0
    names_: list[str] = field(default_factory=list)
    theta_: np.ndarray | None = None
    covariance_: np.ndarray | None = None
    estimates_: dict[str, float] = field(default_factory=dict)
    intervals_: pd.DataFrame | None = None
    log_likelihood_: float = math.nan
    converged_: bool = False
    n_participants_: int = 0
    n_ratings_: int = 0
    quadrature_: dict = field(default_factory=dict)
    interval_reference_: dict = field(default_factory=dict)
    warnings_: list[str] = field(default_factory=list)

    def response_entry(self) -> dict:
        """The ``response:`` entry (kind ``rating``) of the estimates; unfitted ratings keep
        the model's defaults."""
        e = self.estimates_
        entry: dict[str, Any] = {"kind": "rating", "distance": self.distance}
        for r in self.ratings:
            entry[r] = {"intercept": e[f"{r}.intercept"],
                        "effect": {"kind": "linear", "slope": e[f"{r}.effect.slope"],
                                   "d_min": self.d_min},
                        "sd_intercept": e[f"{r}.sd_intercept"], "sd_slope": 0.0,
                        "sd_noise": e[f"{r}.sd_noise"], "noise": "normal",
                        "blocked_penalty": e.get(f"{r}.blocked_penalty", 0.0)}
        if "intercept_correlation" in e:
            entry["intercept_correlation"] = e["intercept_correlation"]
        return entry


def _natural(name: str, value: float) -> tuple[str, float]:
    if name.startswith("log "):
        return name[4:], float(np.exp(value))
    if name.startswith("atanh "):
        return name[6:], float(np.tanh(value))
    return name, float(value)


class _Likelihood:
    """``-log L(theta)`` of a table by adaptive Gauss-Hermite quadrature (see the module
    docstring): per participant, Newton's method finds the mode of the integrand over the
    participant's effects and its curvature, and the ``nodes``-point product rule is centred
    and scaled there (Liu and Pierce 1994).

    Computed with torch so that :meth:`value_and_grad` differentiates it exactly: the mode is
    found without a graph, then one more Newton step is taken with one, whose derivative is
    the mode's implicit derivative (the step itself is below the convergence tolerance).
    """

    def __init__(self, table: pd.DataFrame, ratings: list[str], distance: str, group: str,
                 blocked: bool, d_min: float, nodes: int):
        order = np.argsort(pd.factorize(table[group])[0], kind="stable")
        t = table.iloc[order]
        codes = pd.factorize(t[group])[0]
        self.person = torch.from_numpy(codes.astype(np.int64))
        self.n_people = int(codes.max()) + 1
        self.d = torch.from_numpy(t[distance].to_numpy(float) - d_min)
        self.blocked = torch.from_numpy(t["blocked"].to_numpy(float) if blocked
                                        else np.zeros(len(t)))
        self.bounds = {r: _Bounds(t[r].to_numpy(np.int64)) for r in ratings}
        self.mean_rating = {r: float(np.mean(t[r].to_numpy(float))) for r in ratings}
        self.ratings = ratings
        self.has_blocked = blocked
        self.nodes = nodes
        x, w = np.polynomial.hermite.hermgauss(nodes)
        self.x = torch.from_numpy(x)
        self.log_w = torch.from_numpy(np.log(w) + x ** 2)  # the rule's weights times exp(x^2)
        self.mode = torch.zeros((self.n_people, len(ratings)), dtype=torch.float64)
        self.names = []
        for r in ratings:
            self.names += [f"{r}.intercept", f"{r}.effect.slope"]
            if blocked and r == "act":
                self.names.append(f"{r}.blocked_penalty")
            self.names += [f"log {r}.sd_intercept", f"log {r}.sd_noise"]
        if len(ratings) == 2:
            self.names.append("atanh intercept_correlation")

    def start(self) -> np.ndarray:
        theta = []
        for r in self.ratings:
            theta += [self.mean_rating[r], 0.0]
            if self.has_blocked and r == "act":
                theta.append(0.0)
            theta += [np.log(0.8), np.log(1.0)]
        if len(self.ratings) == 2:
            theta.append(0.0)
        return np.array(theta)

    def _sums(self, rows: torch.Tensor) -> torch.Tensor:
        # per participant: the sum of their rows
        out = rows.new_zeros((self.n_people, *rows.shape[1:]))
        return out.index_add(0, self.person, rows)

    def _model(self, theta: torch.Tensor) -> tuple[list, list, torch.Tensor]:
        # each rating's fixed-effect mean per row and noise SD, and the effects' covariance
        p = dict(zip(self.names, theta.unbind(), strict=True))
        means, noise, sds = [], [], []
        for r in self.ratings:
            mean = p[f"{r}.intercept"] - p[f"{r}.effect.slope"] * self.d
            if f"{r}.blocked_penalty" in p:
                mean = mean - p[f"{r}.blocked_penalty"] * self.blocked
            means.append(mean)
            noise.append(torch.exp(p[f"log {r}.sd_noise"]))
            sds.append(torch.exp(p[f"log {r}.sd_intercept"]))
        if len(self.ratings) == 2:
            # bounded at +-RHO_BOUND: beyond it the effects' covariance is near singular and
            # the likelihood flat; an estimate there is warned as a boundary estimate
            rho = torch.tanh(p["atanh intercept_correlation"].clamp(-_ATANH_BOUND,
                                                                    _ATANH_BOUND))
            off = rho * sds[0] * sds[1]
            cov = torch.stack([torch.stack([sds[0] ** 2, off]), torch.stack([off, sds[1] ** 2])])
        else:
            cov = (sds[0] ** 2).reshape(1, 1)
        return means, noise, cov

    def _parts(self, a: torch.Tensor, means: list, noise: list, precision: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        # g(a) = sum log P(y | a) - a' Q a / 2 per participant, its gradient and Hessian in a
        g = -0.5 * torch.einsum("pi,ij,pj->p", a, precision, a)
        d1s, d2s = [], []
        for k, r in enumerate(self.ratings):
            logp, d1, d2 = _log_probs(self.bounds[r], (means[k] + a[self.person, k])[:, None],
                                      noise[k])
            g = g + self._sums(logp[:, 0])
            d1s.append(self._sums(d1[:, 0]))
            d2s.append(self._sums(d2[:, 0]))
        grad = -a @ precision + torch.stack(d1s, dim=1)
        hess = -precision + torch.diag_embed(torch.stack(d2s, dim=1))
        return g, grad, hess

    def _modes(self, means: list, noise: list, precision: torch.Tensor) -> torch.Tensor:
        # Newton's method per participant on g(a) (concave: ordinal probit probabilities are
        # log-concave), halving steps that do not increase g; without a graph
        a = self.mode.clone()
        g, grad, hess = self._parts(a, means, noise, precision)
        for _ in range(100):
            step = -torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
            if float(step.abs().max()) < 1e-10:
                break
            scale = torch.ones(self.n_people, dtype=torch.float64)
            for _ in range(30):
                g_new, grad_new, hess_new = self._parts(a + scale[:, None] * step, means,
                                                        noise, precision)
                worse = g_new < g - 1e-12
                if not bool(worse.any()):
                    break
                scale = torch.where(worse, scale / 2, scale)
            a = a + scale[:, None] * step
            g, grad, hess = g_new, grad_new, hess_new
        return a

    def _value(self, theta: torch.Tensor) -> torch.Tensor | None:
        # -log L as a tensor (with a graph when theta has one), or None where the effects'
        # covariance is not positive definite
        means, noise, cov = self._model(theta)
        try:
            precision = torch.linalg.inv(cov)
            sign, logdet = torch.linalg.slogdet(cov)
        except RuntimeError:
            return None
        if float(sign.detach()) <= 0 or not bool(torch.isfinite(precision.detach()).all()):
            return None
        with torch.no_grad():
            mode = self._modes(means, noise, precision)
        # one Newton step with a graph: the same mode, and the mode's derivative in theta
        _, grad, hess = self._parts(mode, means, noise, precision)
        a = mode - torch.linalg.solve(hess, grad.unsqueeze(-1)).squeeze(-1)
        _, _, hess = self._parts(a, means, noise, precision)
        self.mode = a.detach()
        # nodes a = mode + sqrt(2) L x with L L' the inverse of -hess (the integrand's
        # curvature at its mode); int f(a) da = 2^(d/2) |L| sum_k w_k exp(x_k^2) f(a_k)
        chol = torch.linalg.cholesky(torch.linalg.inv(-hess))
        dims = len(self.ratings)
        x = math.sqrt(2.0) * self.x
        log_norm = (dims / 2 * math.log(2.0)
                    + torch.log(torch.diagonal(chol, dim1=1, dim2=2)).sum(1))
        prior_const = -0.5 * logdet - dims * _LOG_SQRT_2PI
        first = a[:, 0, None] + chol[:, 0, 0, None] * x[None, :]           # people x K
        logp = _log_probs(self.bounds[self.ratings[0]], means[0][:, None] + first[self.person],
                          noise[0], derivatives=False)
        total = self._sums(logp) + self.log_w[None, :]
        if dims == 1:
            total = total - 0.5 * precision[0, 0] * first ** 2 + prior_const
            value = torch.logsumexp(total, dim=1) + log_norm
        else:
            second = (a[:, 1, None, None] + chol[:, 1, 0, None, None] * x[None, :, None]
                      + chol[:, 1, 1, None, None] * x[None, None, :])        # people x K x K
            flat = second.reshape(self.n_people, -1)
            logp = _log_probs(self.bounds[self.ratings[1]],
                              means[1][:, None] + flat[self.person], noise[1],
                              derivatives=False)
            both = (total[:, :, None] + self.log_w[None, None, :]
                    + self._sums(logp).reshape(second.shape))
            f = first[:, :, None]
            both = both + (-0.5 * (precision[0, 0] * f ** 2 + 2 * precision[0, 1] * f * second
                                   + precision[1, 1] * second ** 2) + prior_const)
            value = torch.logsumexp(both.reshape(self.n_people, -1), dim=1) + log_norm
        return -value.sum()

    def __call__(self, theta: np.ndarray) -> float:
        with torch.no_grad():
            out = self._value(torch.as_tensor(np.asarray(theta, dtype=np.float64)))
        value = math.inf if out is None else float(out)
        return value if math.isfinite(value) else 1e300

    def value_and_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """``-log L(theta)`` and its exact gradient (1e300 and a zero gradient where the
        likelihood is not finite)."""
        t = torch.tensor(np.asarray(theta, dtype=np.float64), requires_grad=True)
        out = self._value(t)
        if out is None or not bool(torch.isfinite(out)):
            return 1e300, np.zeros(len(theta))
        (grad,) = torch.autograd.grad(out, t)
        if not bool(torch.isfinite(grad).all()):
            return 1e300, np.zeros(len(theta))
        return float(out), grad.numpy()

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        """The Hessian of ``-log L`` at ``theta``: central differences of the exact gradient
        (statsmodels' ``approx_fprime``), symmetrized."""
        jac = approx_fprime(np.asarray(theta, dtype=np.float64),
                            lambda t: self.value_and_grad(t)[1], centered=True)
        return (jac + jac.T) / 2


def _minimise(fun, x0: np.ndarray, hess_inv: np.ndarray | None = None, gtol: float = 1e-6
              ) -> optimize.OptimizeResult:
    # BFGS on the exact gradient (``fun`` returns the value and the gradient), started from
    # the inverse Hessian when one is known (the profiles)
    options: dict[str, Any] = {"gtol": gtol, "maxiter": 300}
    if hess_inv is not None:
        hess_inv = (hess_inv + hess_inv.T) / 2
        if np.all(np.isfinite(hess_inv)) and np.all(np.linalg.eigvalsh(hess_inv) > 0):
            options["hess_inv0"] = hess_inv
    return optimize.minimize(fun, x0, method="BFGS", jac=True, options=options)


def _profile(lik: _Likelihood, theta: np.ndarray, cov: np.ndarray, j: int, z: float,
             limits: tuple[float, float]) -> tuple[float, float]:
    """The profile-likelihood interval of unconstrained parameter ``j``: the values ``t`` whose
    signed root ``sign(t - theta_j) sqrt(2 (max log L - max_{others} log L(t)))`` lies within
    ``-/+ z`` (the normal quantile gives ``chi2_1(level)``; see :func:`calibrate` for the t
    quantile), each end found by the secant method on the signed root, which is close to
    linear in ``t`` (Venzon and Moolgavkar 1988). An end beyond ``limits`` (a SD near 0, a
    correlation near -1 or 1) is the limit: the data cannot exclude the boundary."""
    best = lik(theta)
    others = np.flatnonzero(np.arange(len(theta)) != j)
    slope = cov[others, j] / cov[j, j]
    cond = cov[np.ix_(others, others)] - np.outer(slope, cov[j, others])
    se = float(np.sqrt(cov[j, j]))
    ends = []
    for side, limit in ((-1.0, limits[0]), (1.0, limits[1])):
        target = side * z
        points = [(float(theta[j]), 0.0, theta[others])]
        t = float(theta[j]) + side * z * se
        end = math.nan
        for _ in range(12):
            t = min(max(t, limits[0]), limits[1])
            t0, _, rest0 = min(points, key=lambda q: abs(q[0] - t))
            full = theta.copy()

            def at(rest, t=t, full=full):
                full[j], full[others] = t, rest
                value, grad = lik.value_and_grad(full)
                return value, grad[others]

            # a gradient of 1e-3 leaves the profile's log-likelihood off by far less than
            # the tolerance of its signed root
            res = _minimise(at, rest0 + slope * (t - t0), cond, gtol=1e-3)
            root = side * math.sqrt(max(0.0, 2.0 * (float(res.fun) - best)))
            points.append((t, root, res.x))
            if abs(root - target) < 1e-3:
                end = t
                break
            if t == limit and abs(root) < z:
                end = limit
                break
            (ta, ra, _), (tb, rb, _) = points[-2], points[-1]
            t = tb + (target - rb) * (tb - ta) / (rb - ra) if rb != ra else tb + side
        ends.append(end)
    return ends[0], ends[1]


#: Participants from which the intervals' coverage is measured
#: (``benchmarks/calibration_coverage.py``); fewer are fitted with a warning.
COVERAGE_PARTICIPANTS = 30


class PilotError(ValueError):
    """A pilot the rating model cannot be calibrated on: ``column``, what is wrong, the fix."""

    def __init__(self, column: str, reason: str, fix: str):
        self.column, self.reason, self.fix = column, reason, fix
        super().__init__(f"column {column!r}: {reason}; fix: {fix}")


def pilot_problems(table: pd.DataFrame, ratings: list[str], distance: str, group: str,
                   scale: tuple[int, int] | None = None) -> list[str]:
    """The pilot checks made before fitting: raises :class:`PilotError` for a pilot that
    cannot identify the model's parameters, returns warnings (each naming its column) for one
    that can, with a caveat.

    Refused: fewer than 2 participants, or none with 2 ratings (the participants' intercept SD
    needs both); rows repeated in every column
    (:func:`~simstudy.analysis.inputs.repeated_rows`); a constant distance or ``blocked``
    column (the slope or the blocked penalty would be written without data behind it);
    ratings (on 1..7, as :func:`calibrate` requires) that leave the scale's top
    :data:`~simstudy.analysis.inputs.UNUSED_TOP` points unused, never exceeding 5 (a 1..5
    scale read as 1..7; :func:`~simstudy.analysis.inputs.unused_top`), unless ``scale``
    states (1, 7). Warned: fewer than :data:`COVERAGE_PARTICIPANTS` participants; no
    ``blocked`` column (the penalty keeps the model's default 0); a 1..7 scale stated whose
    ratings never exceed 5.
    """
    warnings = []
    people = table[group].nunique()
    per_person = table.groupby(group).size()
    if people < 2 or per_person.max() < 2:
        raise PilotError(group, f"{people} participant(s) with at most {per_person.max()} "
                         "rating(s) each: the participants' intercept SD needs 2 or more "
                         "participants with 2 or more ratings", "pool the ratings of more "
                         f"participants (the intervals' coverage is measured from "
                         f"{COVERAGE_PARTICIPANTS})")
    if people < COVERAGE_PARTICIPANTS:
        warnings.append(f"{group}: {people} participants, fewer than the "
                        f"{COVERAGE_PARTICIPANTS} from which the intervals' coverage is "
                        "measured (docs/results/calibration.md)")
    repeated = repeated_rows(table).index
    if len(repeated):
        # a table read from a file keeps its row numbers: file line = row + 2 (the header)
        shown = ", ".join(str(r + 2) if isinstance(r, (int, np.integer)) else str(r)
                          for r in repeated[:5])
        raise PilotError(", ".join(map(str, table.columns)), f"{len(repeated)} row(s) repeat "
                         f"an earlier row in every column (file lines {shown})",
                         "remove the repeated rows (a doubled export?) or add the column "
                         "that tells them apart (e.g. item)")
    if table[distance].nunique() < 2:
        raise PilotError(distance, f"constant ({table[distance].iloc[0]}): the distance "
                         "effect's slope cannot be estimated", "the pilot needs recourses "
                         "of different distances")
    if "act" in ratings:
        if "blocked" not in table:
            warnings.append("blocked: no such column, so act.blocked_penalty is not "
                            "calibrated and keeps the model's default 0.0")
        elif table["blocked"].isna().any():
            first = table.index[np.flatnonzero(table["blocked"].isna().to_numpy())[0]]
            line = first + 2 if isinstance(first, (int, np.integer)) else first
            raise PilotError("blocked", f"empty in {int(table['blocked'].isna().sum())} row(s) "
                             f"(first: file line {line}): the blocked penalty would be fitted "
                             "on nothing", "fill in 0 or 1 for every row (1: the recourse "
                             "needs a feature the participant cannot change)")
        elif table["blocked"].astype(float).nunique() < 2:
            raise PilotError("blocked", f"constant (every value {table['blocked'].iloc[0]}): "
                             "the blocked penalty cannot be estimated and 0.0 would be written "
                             "for it", "include blocked and unblocked recourses in the pilot, "
                             "or drop the column to keep the model's default penalty")
    unused = unused_top(table[ratings], (1, 7))  # the study's 1..7 scale, as analyze reads it
    if unused is not None:
        columns, top = ", ".join(ratings), f"{unused.top:g}"
        if scale is None:
            raise PilotError(columns, f"no rating above {top} in {len(table)} rows: read as "
                             "the study's 1..7 scale this looks like a 1..5 scale",
                             "rerun the pilot on the study's 1..7 scale, or state `scale: [1, "
                             "7]` in the --spec file if it was asked on 1..7")
        warnings.append(f"{columns}: no rating above {top} on the stated 1..7 scale")
    return warnings


def boundary_warnings(fit: Calibration) -> list[str]:
    """Warnings, by parameter, for estimates at the boundary of their range: a correlation
    within 0.01 of -1 or 1 or whose interval reaches both, an SD below 0.01 or whose interval
    reaches 0, a Hessian that is not positive definite (no covariance)."""
    out = []
    for row in fit.intervals_.itertuples():
        name, est, lo, hi = row.parameter, row.estimate, row.lower, row.upper
        if row.scale == "atanh" and (abs(est) > 0.99 or (lo <= -RHO_BOUND and hi >= RHO_BOUND)):
            out.append(f"{name}: estimated at {est:.3f} [{lo:.3f}, {hi:.3f}], at or open to the "
                       "boundary: the pilot does not identify it (more participants with both "
                       "ratings, or fit one rating at a time)")
        elif row.scale == "log" and (est < 0.01 or lo <= 0.0):
            out.append(f"{name}: estimated at {est:.3g} [{lo:.3g}, {hi:.3g}], at or open to the "
                       "boundary 0: the pilot does not tell it from no variation")
    if not fit.converged_:
        out.append("the optimiser did not reach a maximum with a positive definite Hessian: "
                   "the covariance (and draws from it) are not to be trusted")
    return out


#: How each kind of parameter's 95% interval is computed, chosen by the coverage measured in
#: ``benchmarks/calibration_coverage.py`` (docs/results/calibration.md): Wald on the natural
#: scale for locations and slopes (the profile likelihood covered no differently), the profile
#: likelihood for SDs and the correlation (it reaches the boundary 0 or +-1 where the data
#: cannot exclude it).
INTERVAL_METHODS = {"identity": "wald", "log": "profile", "atanh": "profile"}
#: The reference distribution of the intervals' quantile (``reference=`` of :func:`calibrate`):
#: Student's t on participants - 1 degrees of freedom, since with the normal quantile the
#: intervals of locations and slopes covered 0.936 of 0.95 on average with 30 participants
#: (docs/results/calibration.md).
INTERVAL_REFERENCE = "t"


def calibrate(table: pd.DataFrame, ratings: list[str] | None = None,
              distance: str = "sparsity", group: str = "uid", d_min: float = 1.0,
              nodes: int | None = None, level: float = 0.95,
              intervals: dict[str, str] | None = None,
              scale: tuple[int, int] | None = None,
              reference: str = INTERVAL_REFERENCE) -> Calibration:
    """Fits the rating model to a long rating table by maximum likelihood.

    Args:
        table: ``group``, ``distance``, the ratings (1..7) and optionally ``blocked``.
        ratings: the ratings to fit (default: whichever of ``accept``, ``act`` the table has).
        distance: the distance column.
        group: the participant column.
        d_min: the distance at which the distance effect is 0 (1 for sparsity).
        nodes: adaptive Gauss-Hermite nodes per dimension; by default the first of
            :data:`NODES` whose log-likelihood moves less than :data:`QUADRATURE_TOLERANCE`
            at the next count.
        level: level of the intervals.
        intervals: interval method (``wald`` or ``profile``) by scale of the unconstrained
            parameter (``identity``, ``log``, ``atanh``); default :data:`INTERVAL_METHODS`.
        scale: the rating scale the pilot states (``None``: not stated); see
            :func:`pilot_problems`.
        reference: the intervals' quantile: ``t``, Student's t on ``participants - 1``
            degrees of freedom (Wald: ``estimate -/+ t se``; profile: the signed root within
            ``-/+ t``), or ``normal`` (the asymptotic ``z``; profile: ``chi2_1``). The t
            quantile is a small-sample allowance for effects estimated from few participants
            (with 30, ``t = 2.045`` against ``z = 1.960``), chosen by measured coverage.

    Raises:
        PilotError: a pilot the model cannot be calibrated on (:func:`pilot_problems`).

    Returns:
        A fitted :class:`Calibration`.
    """
    ratings = ratings or [r for r in ("accept", "act") if r in table]
    if not ratings:
        raise ValueError("the table has no rating column 'accept' or 'act'")
    for col in (group, distance, *ratings):
        if col not in table:
            raise ValueError(f"column {col!r} not in the data (columns: {list(table.columns)})")
    sub = table.dropna(subset=[group, distance, *ratings])
    for r in ratings:
        values = pd.to_numeric(sub[r])
        if not (values.between(1, 7).all() and (values == values.round()).all()):
            raise ValueError(f"column {r!r}: the rating model's scale is the integers 1..7")
    problems = pilot_problems(sub, ratings, distance, group, scale)
    blocked = "blocked" in sub and "act" in ratings
    methods = {**INTERVAL_METHODS, **(intervals or {})}
    if reference not in ("t", "normal"):
        raise ValueError(f"reference {reference!r}: 't' or 'normal'")
    people = int(sub[group].nunique())
    df = people - 1 if reference == "t" else None
    z = float(stats.norm.ppf(0.5 + level / 2) if df is None
              else stats.t.ppf(0.5 + level / 2, df))
    counts = [nodes] if nodes else list(NODES)
    theta, quadrature = None, {}
    for k, count in enumerate(counts):
        lik = _Likelihood(sub, ratings, distance, group, blocked, d_min, count)
        res = _minimise(lik.value_and_grad, lik.start() if theta is None else theta)
        theta = res.x
        if nodes:
            quadrature = {"nodes": count, "adaptive": True}
            break
        more = counts[k + 1] if k + 1 < len(counts) else 2 * count + 1
        change = abs(_Likelihood(sub, ratings, distance, group, blocked, d_min, more)(theta)
                     - float(res.fun))
        quadrature = {"nodes": count, "adaptive": True, "check_nodes": more,
                      "log_likelihood_change": change}
        if change < QUADRATURE_TOLERANCE:
            break
    warnings = []
    if quadrature.get("log_likelihood_change", 0.0) >= QUADRATURE_TOLERANCE:
        warnings.append(f"quadrature: the log-likelihood still moves by "
                        f"{quadrature['log_likelihood_change']:.2g} from {quadrature['nodes']} "
                        f"to {quadrature['check_nodes']} nodes")
    hess = lik.hessian(theta)
    try:
        cov = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        cov = np.full_like(hess, np.nan)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    definite = bool(np.all(np.linalg.eigvalsh((hess + hess.T) / 2) > 0))
    rows, estimates = [], {}
    for j, (name, value) in enumerate(zip(lik.names, theta, strict=True)):
        natural, est = _natural(name, value)
        scale = name.split(" ")[0] if " " in name else "identity"
        method = methods[scale]
        lo_u = hi_u = math.nan
        if method == "profile" and definite:
            limits = ((-_ATANH_BOUND, _ATANH_BOUND) if scale == "atanh"
                      else (value - 12.0, value + 12.0))
            lo_u, hi_u = _profile(lik, theta, cov, j, z, limits)
            if scale == "identity" and (lo_u == limits[0] or hi_u == limits[1]):
                lo_u = hi_u = math.nan  # a location the profile cannot bound
        if np.isfinite(lo_u) and np.isfinite(hi_u):
            lo, hi = _natural(name, lo_u)[1], _natural(name, hi_u)[1]
            if scale == "log" and lo_u == limits[0]:
                lo = 0.0
            if scale == "atanh":
                lo = -1.0 if lo_u == limits[0] else lo
                hi = 1.0 if hi_u == limits[1] else hi
        else:  # Wald where chosen, and where a profile did not settle
            method = "wald"
            lo, hi = sorted(_natural(name, b)[1]
                            for b in wald_interval(value, se[j], level, df))
        lo, hi = around(est, lo, hi)
        estimates[natural] = est
        rows.append({"parameter": natural, "estimate": est, "lower": lo, "upper": hi,
                     "scale": scale, "method": method})
    fit = Calibration(ratings, distance, d_min)
    fit.names_, fit.theta_, fit.covariance_ = lik.names, theta, cov
    fit.estimates_, fit.intervals_ = estimates, pd.DataFrame(rows)
    fit.log_likelihood_ = -float(lik(theta))
    fit.quadrature_ = quadrature
    # convergence: a small gradient at the maximum and a positive definite Hessian
    gradient = float(np.max(np.abs(lik.value_and_grad(theta)[1])))
    fit.converged_ = definite and gradient < 1e-3
    fit.n_participants_ = people
    fit.interval_reference_ = {"distribution": reference, "df": df, "quantile": z,
                               "level": level}
    fit.n_ratings_ = int(len(sub))
    fit.warnings_ = problems + warnings + boundary_warnings(fit)
    return fit


def simulate_pilot(response: Any, participants: int, rng: np.random.Generator,
                   items: int = 5, blocked_rate: float = 0.3, max_sparsity: int = 5
                   ) -> pd.DataFrame:
    """A pilot table from a rating response: each participant rates ``items`` recourses of
    sparsity uniform on ``1..max_sparsity``, each blocked with probability ``blocked_rate``.
    For recovery checks and the calibration benchmark."""

    n = participants * items
    uid = np.repeat(np.arange(participants), items)
    sparsity = rng.integers(1, max_sparsity + 1, n)
    blocked = rng.random(n) < blocked_rate
    z = rng.standard_normal((participants, 4))[uid]
    inputs = ResponseInputs(cost=np.zeros(n), cost_unweighted=np.zeros(n),
                            sparsity=sparsity.astype(float), proximity_l1=sparsity / 10.0,
                            accept_effect=z[:, 0], act_effect=z[:, 2],
                            accept_slope_effect=z[:, 1], act_slope_effect=z[:, 3],
                            blocked=blocked)
    accept, act = response.ratings(inputs, rng.random((n, 2)))
    return pd.DataFrame({"uid": uid, "item": np.tile(np.arange(items), participants),
                         "sparsity": sparsity, "proximity": sparsity / 10.0, "accept": accept,
                         "act": act, "blocked": blocked.astype(np.int64)})


def goodness_of_fit(fit: Calibration, table: pd.DataFrame, group: str = "uid",
                    replicates: int = 200, seed: int = 0) -> pd.DataFrame:
    """Observed against simulated rating distributions by distance.

    ``replicates`` studies are simulated from the fitted model with the data's own design (its
    participants, distances and blocked recourses; fresh participant effects and noise, stream
    ``default_rng(seed)``); per rating, distance value and category the table gives the observed
    share and the simulated share (mean over replicates) with its 2.5% / 97.5% quantiles.
    """

    model = RatingResponseParams.model_validate(fit.response_entry()).build()
    rng = np.random.default_rng(seed)
    sub = table.dropna(subset=[group, fit.distance, *fit.ratings])
    codes = pd.factorize(sub[group])[0]
    d = sub[fit.distance].to_numpy(float)
    blocked = sub["blocked"].to_numpy(bool) if "blocked" in sub else np.zeros(len(sub), bool)
    sims = {r: np.zeros((replicates, len(sub)), dtype=np.int64) for r in fit.ratings}

    for k in range(replicates):
        z = rng.standard_normal((codes.max() + 1, 4))[codes]
        inputs = ResponseInputs(cost=np.zeros(len(sub)), cost_unweighted=np.zeros(len(sub)),
                                sparsity=d, proximity_l1=d, accept_effect=z[:, 0],
                                act_effect=z[:, 2], blocked=blocked)
        accept, act = model.ratings(inputs, rng.random((len(sub), 2)))
        for r, v in (("accept", accept), ("act", act)):
            if r in sims:
                sims[r][k] = v
    rows = []
    for r in fit.ratings:
        y = sub[r].to_numpy(np.int64)
        for value in np.unique(d):
            at = d == value
            for cat in range(1, 8):
                share = (sims[r][:, at] == cat).mean(axis=1)
                rows.append({"response": r, fit.distance: value, "rating": cat,
                             "n_ratings": int(at.sum()), "observed": float((y[at] == cat).mean()),
                             "simulated": float(share.mean()),
                             "simulated_lower": float(np.quantile(share, 0.025)),
                             "simulated_upper": float(np.quantile(share, 0.975))})
    return pd.DataFrame(rows)


def calibration_document(fit: Calibration, data: str | Path, sha256: str) -> dict:
    """The YAML document ``simstudy calibrate`` writes: ``response:`` (the estimates) and
    ``calibration:`` (data file and sha256, unconstrained estimates and their covariance,
    natural-scale intervals)."""
    return {
        "response": fit.response_entry(),
        "calibration": {
            "data": str(data), "sha256": sha256, "participants": fit.n_participants_,
            "ratings": fit.n_ratings_, "method": "maximum likelihood, adaptive Gauss-Hermite "
            "quadrature over participant intercepts",
            "quadrature": dict(fit.quadrature_),
            "interval_reference": dict(fit.interval_reference_),
            "converged": fit.converged_, "log_likelihood": fit.log_likelihood_,
            "warnings": list(fit.warnings_),
            "parameters": list(fit.names_), "estimate": [float(v) for v in fit.theta_],
            "covariance": [[float(v) for v in row] for row in fit.covariance_],
            "intervals": fit.intervals_.to_dict(orient="records"),
        },
    }


def load_calibration(path: str | Path) -> tuple[Any, dict]:
    """The response spec and the ``calibration:`` entry of a ``simstudy calibrate`` output;
    a problem raises :class:`~simstudy.core.documents.DocumentError` naming file and field."""

    doc = load_yaml(path)
    if not isinstance(doc, dict) or "response" not in doc or "calibration" not in doc:
        raise DocumentError([DocumentProblem(str(path), "response", "not a simstudy calibrate "
                                             "output (needs response: and calibration:)")])
    spec = validate_data(doc["response"], RatingResponseParams, f"{path}: response")
    cal = doc["calibration"]
    need = ("sha256", "parameters", "estimate", "covariance")
    missing = [k for k in need if k not in cal]
    k = len(cal.get("parameters", []))
    if missing or len(cal["estimate"]) != k or np.shape(cal["covariance"]) != (k, k):
        raise DocumentError([DocumentProblem(str(path), "calibration", (
            f"missing {missing}" if missing else "parameters, estimate and covariance "
            "disagree in size"))])
    return spec, cal


def draw_response(spec: Any, calibration: dict, rng: np.random.Generator) -> Any:
    """A response spec with the calibrated parameters drawn from their sampling distribution
    ``N(estimate, covariance)`` (on the unconstrained scale, mapped back)."""
    theta = rng.multivariate_normal(np.asarray(calibration["estimate"], float),
                                    np.asarray(calibration["covariance"], float),
                                    method="eigh")
    data = spec.model_dump()
    for name, value in zip(calibration["parameters"], theta, strict=True):
        path, natural = _natural(name, value)
        node = data
        parts = path.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = natural
    return type(spec).model_validate(data)
