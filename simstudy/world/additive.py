"""A known structural causal model given as a table of additive-noise equations.

Each feature ``j`` (in causal order) has a structural equation

    ``x_j = g_j( f_j(pa_j) + u_j )``,   ``u_j ~ p_j`` independent,

with ``f_j`` any function of the parents, ``p_j`` the exogenous distribution and ``g_j`` an
optional strictly increasing link (the identity unless given). Every equation is invertible given
its parents, ``u_j = g_j^{-1}(x_j) - f_j(pa_j)``, so abduction is exact and the density is

    ``log p(x) = sum_j [ log p_j(u_j(x)) + log |d g_j^{-1}(x_j) / d x_j| ]``

(the last term is zero for the identity link). A world is then data: its
:class:`~simstudy.world.base.FeatureRoles`, one :class:`Equation` per feature and a label rule;
:class:`AdditiveNoiseSCM` provides sampling, abduction, counterfactuals (Pearl's abduction,
action, prediction), the exact log-density and the label for any such table.

References:
    Pearl, "Causality", 2nd ed., Cambridge University Press, 2009 (ch. 7).
    Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003.

Example:
    >>> import torch
    >>> from simstudy.core.rng import generator
    >>> from simstudy.world.base import FeatureRoles
    >>> roles = FeatureRoles(names=("a", "b"), immutable=("a",), actionable=("b",),
    ...                      sensitive=(), parents={"a": (), "b": ("a",)})
    >>> table = SCMTable("toy", roles, (Equation("a", (), lambda: 0.0, Normal(1.0)),
    ...                                 Equation("b", ("a",), lambda a: 2 * a, Normal(0.5))),
    ...                  label_score=lambda x, u: x["b"])
    >>> world = AdditiveNoiseSCM(table)
    >>> x = world.sample(4, generator(0, "example"))
    >>> bool(torch.allclose(world.predict(world.abduct(x)), x))
    True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import torch

from .base import FeatureRoles, causal_order_check

__all__ = ["Normal", "Bernoulli", "Gamma", "NormalMixture", "Link", "Equation", "SCMTable",
           "AdditiveNoiseSCM"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


@dataclass(frozen=True)
class Normal:
    """``N(mean, sd^2)`` exogenous noise."""

    sd: float
    mean: float = 0.0

    def sample(self, n: int, generator: np.random.Generator) -> np.ndarray:
        return generator.normal(self.mean, self.sd, n)

    def log_prob(self, u: torch.Tensor) -> torch.Tensor:
        return -0.5 * ((u - self.mean) / self.sd) ** 2 - math.log(self.sd) - _HALF_LOG_2PI


@dataclass(frozen=True)
class Bernoulli:
    """``Bernoulli(p)`` noise on ``{0, 1}``: a probability mass (``-inf`` off the support)."""

    p: float = 0.5

    def sample(self, n: int, generator: np.random.Generator) -> np.ndarray:
        return (generator.random(n) < self.p).astype(np.float64)

    def log_prob(self, u: torch.Tensor) -> torch.Tensor:
        mass = torch.where(u == 1, torch.tensor(math.log(self.p), dtype=u.dtype),
                           torch.tensor(math.log1p(-self.p), dtype=u.dtype))
        return torch.where((u == 0) | (u == 1), mass, torch.full_like(mass, -math.inf))


@dataclass(frozen=True)
class Gamma:
    """``Gamma(shape, scale)`` noise on ``(0, inf)``."""

    shape: float
    scale: float

    def sample(self, n: int, generator: np.random.Generator) -> np.ndarray:
        return generator.gamma(self.shape, self.scale, n)

    def log_prob(self, u: torch.Tensor) -> torch.Tensor:
        lp = ((self.shape - 1) * torch.log(u.clamp_min(1e-300)) - u / self.scale
              - math.lgamma(self.shape) - self.shape * math.log(self.scale))
        return torch.where(u > 0, lp, torch.full_like(lp, -math.inf))


@dataclass(frozen=True)
class NormalMixture:
    """A mixture of normals: ``sum_c w_c N(means_c, sds_c^2)`` (weights sum to one)."""

    weights: tuple[float, ...]
    means: tuple[float, ...]
    sds: tuple[float, ...]

    def sample(self, n: int, generator: np.random.Generator) -> np.ndarray:
        # one uniform picks the component, one normal draw places the value in it
        component = np.searchsorted(np.cumsum(self.weights), generator.random(n), side="right")
        component = np.minimum(component, len(self.weights) - 1)
        z = generator.normal(0.0, 1.0, n)
        return np.asarray(self.means)[component] + np.asarray(self.sds)[component] * z

    def log_prob(self, u: torch.Tensor) -> torch.Tensor:
        terms = [math.log(w) - 0.5 * ((u - m) / s) ** 2 - math.log(s) - _HALF_LOG_2PI
                 for w, m, s in zip(self.weights, self.means, self.sds, strict=True)]
        return torch.logsumexp(torch.stack(terms), dim=0)


@dataclass(frozen=True)
class Link:
    """A strictly increasing link ``g`` of an equation ``x = g(f(pa) + u)``.

    Attributes:
        forward: ``g``.
        inverse: ``g^{-1}`` (defined where ``inside`` holds).
        log_derivative_inverse: ``log |d g^{-1}(x) / dx|``.
        inside: where ``x`` lies in the image of ``g`` (the density is zero elsewhere).
    """

    forward: Callable[[torch.Tensor], torch.Tensor]
    inverse: Callable[[torch.Tensor], torch.Tensor]
    log_derivative_inverse: Callable[[torch.Tensor], torch.Tensor]
    inside: Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Equation:
    """The structural equation of one feature: ``x = link(mean(*parents) + u)``, ``u ~ noise``.

    ``mean`` takes the parents' columns in the order of ``parents`` (no argument for a root)
    and may return a constant.
    """

    name: str
    parents: tuple[str, ...]
    mean: Callable[..., torch.Tensor | float]
    noise: Normal | Bernoulli | Gamma | NormalMixture
    link: Link | None = None


@dataclass(frozen=True)
class SCMTable:
    """A known world as data: its roles, one equation per feature, and its label rule.

    Attributes:
        name: the world's name.
        roles: feature names in causal order and their roles; the equations' parents must be
            the roles' parents.
        equations: one per feature, in the order of ``roles.names``.
        label_score: ``s(x, u)`` from the feature and noise columns (``{name: column}``); the
            ground-truth label is ``1[sigmoid(s) >= 0.5]``.
        description: where the equations come from.

    Example:
        >>> from simstudy.world import KNOWN_TABLES
        >>> table = KNOWN_TABLES["collider_linear"]
        >>> [eq.name for eq in table.equations], table.equations[3].parents
        (['sex', 'x1', 'x2', 'x3'], ('sex', 'x1', 'x2'))
    """

    name: str
    roles: FeatureRoles
    equations: tuple[Equation, ...]
    label_score: Callable[[Mapping[str, torch.Tensor], Mapping[str, torch.Tensor]],
                          torch.Tensor]
    description: str = ""

    def __post_init__(self) -> None:
        names = tuple(eq.name for eq in self.equations)
        if names != self.roles.names:
            raise ValueError(f"{self.name}: equations {names} differ from the features "
                             f"{self.roles.names}")
        for eq in self.equations:
            if tuple(eq.parents) != tuple(self.roles.parents.get(eq.name, ())):
                raise ValueError(f"{self.name}: the parents of {eq.name!r} differ from the graph")
        causal_order_check(self.roles)


def _as_column(value: torch.Tensor | float, like: torch.Tensor) -> torch.Tensor:
    return value if isinstance(value, torch.Tensor) else torch.full_like(like, float(value))


class AdditiveNoiseSCM:
    """A known world from an :class:`SCMTable`; implements :class:`~simstudy.world.CausalWorld`.

    Args:
        table: the world's equations and roles.

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world.known import known_world
        >>> world = known_world("triangle_linear")
        >>> x = world.sample(3, generator(0, "example"))
        >>> tuple(x.shape), world.roles.names
        ((3, 4), ('sex', 'x1', 'x2', 'x3'))
    """

    def __init__(self, table: SCMTable):
        self.table = table
        self.roles = table.roles
        self.name = table.name

    # -- one equation at a time ---------------------------------------------------------------
    @staticmethod
    def _natural(eq: Equation, cols: Mapping[str, torch.Tensor], u: torch.Tensor
                 ) -> torch.Tensor:
        z = _as_column(eq.mean(*(cols[p] for p in eq.parents)), u) + u
        return z if eq.link is None else eq.link.forward(z)

    @staticmethod
    def _inverse(eq: Equation, cols: Mapping[str, torch.Tensor], x: torch.Tensor
                 ) -> torch.Tensor:
        z = x if eq.link is None else eq.link.inverse(x)
        return z - _as_column(eq.mean(*(cols[p] for p in eq.parents)), x)

    # -- protocol -----------------------------------------------------------------------------
    def sample_noise(self, n: int, generator: np.random.Generator) -> torch.Tensor:
        """``(n, d)`` exogenous draws, feature by feature in causal order."""
        return torch.from_numpy(np.stack([eq.noise.sample(n, generator)
                                          for eq in self.table.equations], axis=1))

    def predict(self, u: torch.Tensor) -> torch.Tensor:
        cols: dict[str, torch.Tensor] = {}
        for j, eq in enumerate(self.table.equations):
            cols[eq.name] = self._natural(eq, cols, u[:, j])
        return torch.stack([cols[n] for n in self.roles.names], dim=1)

    def abduct(self, x: torch.Tensor) -> torch.Tensor:
        cols = {n: x[:, j] for j, n in enumerate(self.roles.names)}
        return torch.stack([self._inverse(eq, cols, cols[eq.name])
                            for eq in self.table.equations], dim=1)

    def sample(self, n: int, generator: np.random.Generator) -> torch.Tensor:
        return self.predict(self.sample_noise(n, generator))

    def counterfactual(self, x: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor
                       ) -> torch.Tensor:
        return self.intervene(self.abduct(x), intervened, values)

    def intervene(self, u: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor
                  ) -> torch.Tensor:
        """Action and prediction: features from noise ``u`` under ``do(X_I := values_I)``."""
        return self.intervene_with_log_prob(u, intervened, values, log_prob=False)[0]

    def intervene_with_log_prob(
        self, u: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor,
        log_prob: bool = True, person: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Counterfactual features and, optionally, their log-density in one pass.

        An intervened feature's noise is recomputed from its value and its parents'
        counterfactual values; every other feature keeps its own. ``person``: optional row of
        ``u`` of each action (one row of ``u`` per person, many actions per person).
        """
        if person is not None:
            u = u.index_select(0, person)
        values = values.to(u.dtype)
        cols: dict[str, torch.Tensor] = {}
        lp = torch.zeros(u.shape[0], dtype=u.dtype) if log_prob else None
        for j, eq in enumerate(self.table.equations):
            natural = self._natural(eq, cols, u[:, j])
            hit = intervened[:, j]
            x_j = torch.where(hit, values[:, j], natural) if bool(hit.any()) else natural
            cols[eq.name] = x_j
            if log_prob:
                noise = (torch.where(hit, self._inverse(eq, cols, x_j), u[:, j])
                         if bool(hit.any()) else u[:, j])
                lp = lp + self._log_term(eq, x_j, noise)
        x_cf = torch.stack([cols[n] for n in self.roles.names], dim=1)
        return x_cf, lp

    @staticmethod
    def _log_term(eq: Equation, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``log p_j(u_j) + log |d g_j^{-1}/dx_j|`` (``-inf`` off the link's image)."""
        term = eq.noise.log_prob(u)
        if eq.link is None:
            return term
        inside = eq.link.inside(x)
        term = term + eq.link.log_derivative_inverse(x)
        return torch.where(inside, term, torch.full_like(term, -math.inf))

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        u = self.abduct(x)
        lp = torch.zeros(x.shape[0], dtype=x.dtype)
        for j, eq in enumerate(self.table.equations):
            lp = lp + self._log_term(eq, x[:, j], u[:, j])
        return lp

    # -- label --------------------------------------------------------------------------------
    def label_probability(self, x: torch.Tensor) -> torch.Tensor:
        """``sigmoid(s(x, u(x)))``: the label rule's probability, with ``u`` abducted."""
        u = self.abduct(x)
        names = self.roles.names
        score = self.table.label_score({n: x[:, j] for j, n in enumerate(names)},
                                       {n: u[:, j] for j, n in enumerate(names)})
        return torch.sigmoid(score)

    def label(self, x: torch.Tensor, generator: np.random.Generator | None = None
              ) -> torch.Tensor:
        """Ground-truth label ``1[sigmoid(s) >= 0.5]`` of each row (deterministic)."""
        return (self.label_probability(x) >= 0.5).to(torch.int64)
