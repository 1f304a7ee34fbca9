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

is computed by Gauss-Hermite quadrature over the participant effects (a product rule of
:data:`NODES` nodes per dimension, exact for the smooth Gaussian integrand up to a negligible
error with 5-10 ratings per person), and maximised with scipy's BFGS over unconstrained
parameters (``log`` SDs, ``atanh`` correlation). The covariance of the estimates is the inverse
of the numerical Hessian of ``-log L`` at the maximum (statsmodels' ``approx_hess3``); 95%
intervals are Wald intervals on the unconstrained scale, mapped back.

**Goodness of fit.** Replicate studies are simulated from the fitted model with the data's own
design (participants, distances, blocked) and the share of each rating per sparsity compared
with the observed share (:func:`goodness_of_fit`).

References:
    Liu, Q. and Pierce, D. A. (1994). A note on Gauss-Hermite quadrature. Biometrika 81(3),
    624-629.
    Hedeker, D. and Gibbons, R. D. (1994). A random-effects ordinal regression model for
    multilevel analysis. Biometrics 50(4), 933-944.

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
from scipy import optimize, stats
from scipy.special import logsumexp, ndtr
from statsmodels.tools.numdiff import approx_hess3

from ..core.documents import DocumentError, DocumentProblem, load_yaml, validate_data
from ..people.response import ResponseInputs
from ..people.response_params import CUTS, RatingResponseParams

__all__ = ["NODES", "Calibration", "calibrate", "simulate_pilot", "goodness_of_fit",
           "calibration_document", "load_calibration", "draw_response"]

#: Gauss-Hermite nodes per participant-effect dimension.
NODES = 10


def _log_probs(y: np.ndarray, mean: np.ndarray, sd: float) -> np.ndarray:
    """log P(rating y | latent mean) for ratings 1..7 (``y`` per row, ``mean`` rows x nodes),
    stable in both tails: above the mean's category the mirror image ``Phi(-l) - Phi(-u)``."""
    top = np.r_[CUTS, np.inf][np.clip(y - 1, 0, 6)][:, None]
    bottom = np.r_[-np.inf, CUTS][np.clip(y - 1, 0, 6)][:, None]
    upper, lower = (top - mean) / sd, (bottom - mean) / sd
    sign = np.where(lower > 0, -1.0, 1.0)
    p = sign * (ndtr(sign * upper) - ndtr(sign * lower))
    return np.log(np.maximum(p, 1e-300))


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
        intervals_: ``parameter, estimate, lower, upper`` (95%, natural scale).
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
    """``-log L(theta)`` of a table, by Gauss-Hermite quadrature (see the module docstring)."""

    def __init__(self, table: pd.DataFrame, ratings: list[str], distance: str, group: str,
                 blocked: bool, d_min: float, nodes: int):
        order = np.argsort(pd.factorize(table[group])[0], kind="stable")
        t = table.iloc[order]
        codes = pd.factorize(t[group])[0]
        self.starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        self.d = t[distance].to_numpy(float) - d_min
        self.blocked = t["blocked"].to_numpy(float) if blocked else np.zeros(len(t))
        self.y = {r: t[r].to_numpy(np.int64) for r in ratings}
        self.ratings = ratings
        self.has_blocked = blocked
        x, w = np.polynomial.hermite.hermgauss(nodes)
        dims = len(ratings)
        grid = np.stack(np.meshgrid(*([x] * dims), indexing="ij"), -1).reshape(-1, dims)
        self.z = np.sqrt(2.0) * grid                                   # standard normal nodes
        # nodes along the first axis, and each grid node's position on it
        self.axis_of_node = np.repeat(np.arange(nodes), nodes ** (dims - 1))
        self.axis = np.arange(0, nodes ** dims, nodes ** (dims - 1))
        self.log_w = np.log(np.prod(np.stack(np.meshgrid(*([w] * dims), indexing="ij"), -1)
                                    .reshape(-1, dims), axis=1)) - dims / 2 * np.log(np.pi)
        self.names = []
        for r in ratings:
            self.names += [f"{r}.intercept", f"{r}.effect.slope"]
            if blocked and r == "act":
                self.names.append(f"{r}.blocked_penalty")
            self.names += [f"log {r}.sd_intercept", f"log {r}.sd_noise"]
        if dims == 2:
            self.names.append("atanh intercept_correlation")

    def start(self) -> np.ndarray:
        theta = []
        for r in self.ratings:
            theta += [float(np.mean(self.y[r])), 0.0]
            if self.has_blocked and r == "act":
                theta.append(0.0)
            theta += [np.log(0.8), np.log(1.0)]
        if len(self.ratings) == 2:
            theta.append(0.0)
        return np.array(theta)

    def unpack(self, theta: np.ndarray) -> dict[str, float]:
        return dict(zip(self.names, theta, strict=True))

    def __call__(self, theta: np.ndarray) -> float:
        p = self.unpack(theta)
        sds = [np.exp(p[f"log {r}.sd_intercept"]) for r in self.ratings]
        if len(self.ratings) == 2:
            rho = np.tanh(p["atanh intercept_correlation"])
            a = np.column_stack([sds[0] * self.z[:, 0],
                                 sds[1] * (rho * self.z[:, 0] + np.sqrt(1 - rho * rho)
                                           * self.z[:, 1])])
        else:
            a = sds[0] * self.z
        # given the participant, ratings are independent: each rating's log-likelihood is
        # summed per participant at its own distinct effect values (acceptance's intercept
        # takes one value per node of its axis), then joined on the grid
        per_person = self.log_w[None, :]
        for k, r in enumerate(self.ratings):
            mean = (p[f"{r}.intercept"] - p[f"{r}.effect.slope"] * self.d
                    - p.get(f"{r}.blocked_penalty", 0.0) * self.blocked)
            values, where = (a[self.axis, 0], self.axis_of_node) if k == 0 else (a[:, k], None)
            logp = _log_probs(self.y[r], mean[:, None] + values[None, :],
                              np.exp(p[f"log {r}.sd_noise"]))
            summed = np.add.reduceat(logp, self.starts, axis=0)
            per_person = per_person + (summed[:, where] if where is not None else summed)
        value = -float(logsumexp(per_person, axis=1).sum())
        return value if np.isfinite(value) else 1e300


def calibrate(table: pd.DataFrame, ratings: list[str] | None = None,
              distance: str = "sparsity", group: str = "uid", d_min: float = 1.0,
              nodes: int = NODES, level: float = 0.95) -> Calibration:
    """Fits the rating model to a long rating table by maximum likelihood.

    Args:
        table: ``group``, ``distance``, the ratings (1..7) and optionally ``blocked``.
        ratings: the ratings to fit (default: whichever of ``accept``, ``act`` the table has).
        distance: the distance column.
        group: the participant column.
        d_min: the distance at which the distance effect is 0 (1 for sparsity).
        nodes: Gauss-Hermite nodes per dimension.
        level: level of the intervals.

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
    blocked = "blocked" in sub and "act" in ratings and sub["blocked"].astype(float).nunique() > 1
    lik = _Likelihood(sub, ratings, distance, group, blocked, d_min, nodes)
    res = optimize.minimize(lik, lik.start(), method="BFGS", options={"gtol": 1e-5,
                                                                      "maxiter": 500})
    theta = res.x
    hess = approx_hess3(theta, lik)
    try:
        cov = np.linalg.inv(hess)
    except np.linalg.LinAlgError:
        cov = np.full_like(hess, np.nan)
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    zq = stats.norm.ppf(0.5 + level / 2)
    rows, estimates = [], {}
    for name, value, s in zip(lik.names, theta, se, strict=True):
        natural, est = _natural(name, value)
        lo, hi = sorted((_natural(name, value - zq * s)[1], _natural(name, value + zq * s)[1]))
        estimates[natural] = est
        rows.append({"parameter": natural, "estimate": est, "lower": lo, "upper": hi,
                     "scale": name.split(" ")[0] if " " in name else "identity"})
    fit = Calibration(ratings, distance, d_min)
    fit.names_, fit.theta_, fit.covariance_ = lik.names, theta, cov
    fit.estimates_, fit.intervals_ = estimates, pd.DataFrame(rows)
    fit.log_likelihood_ = -float(res.fun)
    # BFGS on a finite-difference gradient often stops at "precision loss" at the maximum:
    # convergence is read from the gradient there and a positive definite Hessian
    gradient = float(np.max(np.abs(getattr(res, "jac", np.full(1, np.inf)))))
    definite = bool(np.all(np.linalg.eigvalsh((hess + hess.T) / 2) > 0))
    fit.converged_ = definite and (bool(res.success) or gradient < 1e-2)
    fit.n_participants_ = int(sub[group].nunique())
    fit.n_ratings_ = int(len(sub))
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
            "ratings": fit.n_ratings_, "method": "maximum likelihood, Gauss-Hermite "
            f"quadrature over participant intercepts ({NODES} nodes per dimension)",
            "converged": fit.converged_, "log_likelihood": fit.log_likelihood_,
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
