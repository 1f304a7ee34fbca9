"""The semi-synthetic Loan SCM (Karimi et al. 2020; Majumdar & Valera, CARMA, 2024).

Variables, in causal order, with their exogenous noise::

    G  gender     U_G ~ Bernoulli(0.5)          G = U_G
    A  age        U_A ~ Gamma(10, scale 3.5)    A = -35 + U_A
    E  education  U_E ~ N(0, 0.5^2)             E = -0.5 + s(-1 + 0.5 G + s(0.1 A) + U_E)
    L  loan amt   U_L ~ N(0, 2^2)               L = 1 + 0.01 (A - 5)(5 - A) + (1 - G) + U_L
    D  duration   U_D ~ N(0, 3^2)               D = -1 + 0.1 A + 2 (1 - G) + L + U_D
    I  income     U_I ~ N(0, 2^2)               I = -4 + 0.1 (A + 35) + 2 G + G E + U_I
    S  savings    U_S ~ N(0, 5^2)               S = -4 + 1.5 1[I > 0] I + U_S

with ``s`` the logistic sigmoid. The ground-truth label is
``p(x) = s(0.3 (-L - D + I + S + sgn(I, S) I S))`` with ``sgn = +1`` when ``I >= 0`` and
``S >= 0`` and ``-1`` otherwise; ``Y = 1[p >= 0.5]`` (deterministic, the default) or
``Y ~ Bernoulli(p)``.

Every equation is invertible given its parents, so abduction is exact and the density is
``log p(x) = sum_j log p_Uj(u_j(x)) + log |du_E/dE|`` with ``du_E/dE = 1 / ((E + .5)(.5 - E))``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .data import WorldData, sampled_world
from .loan_roles import LOAN_ROLES
from .specs import LoanWorldSpec

__all__ = ["LoanSCM", "LOAN_ROLES", "loan_label_probability", "loan_label", "build_loan_world"]


_NOISE_SD = {"education": 0.5, "loan_amount": 2.0, "loan_duration": 3.0, "income": 2.0,
             "savings": 5.0}
_AGE_SHAPE, _AGE_SCALE = 10.0, 3.5
G, A, E, L, D, I, S = range(7)


def loan_label_probability(x: torch.Tensor) -> torch.Tensor:
    """Ground-truth approval probability ``p(x)`` of the Loan world.

    References:
        Karimi, von Kügelgen, Schölkopf & Valera, "Algorithmic recourse under imperfect causal
        knowledge: a probabilistic approach", NeurIPS 2020, https://arxiv.org/abs/2006.06831.

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import LoanSCM, loan_label_probability
        >>> p = loan_label_probability(LoanSCM().sample(4, generator(0, "example")))
        >>> [round(v, 3) for v in p.tolist()]
        [0.0, 0.002, 0.007, 1.0]
    """
    income, savings = x[:, I], x[:, S]
    sign = torch.where((income >= 0) & (savings >= 0), 1.0, -1.0).to(x.dtype)
    score = -x[:, L] - x[:, D] + income + savings + sign * income * savings
    return torch.sigmoid(0.3 * score)


def loan_label(
    x: torch.Tensor, stochastic: bool = False, generator: np.random.Generator | None = None
) -> torch.Tensor:
    """Ground-truth label: ``1[p(x) >= 0.5]``, or a Bernoulli(p(x)) draw when ``stochastic``.

    References:
        Karimi, von Kügelgen, Schölkopf & Valera, "Algorithmic recourse under imperfect causal
        knowledge: a probabilistic approach", NeurIPS 2020, https://arxiv.org/abs/2006.06831.

    Example:
        >>> from simstudy.core.rng import generator
        >>> from simstudy.world import LoanSCM, loan_label
        >>> x = LoanSCM().sample(5, generator(0, "example"))
        >>> loan_label(x).tolist()
        [0, 0, 1, 1, 0]
        >>> loan_label(x, stochastic=True, generator=generator(1, "label")).shape
        torch.Size([5])
    """
    p = loan_label_probability(x)
    if not stochastic:
        return (p >= 0.5).to(torch.int64)
    if generator is None:
        raise ValueError("a stochastic label needs an explicit generator")
    draws = torch.from_numpy(generator.random(p.shape[0]))
    return (draws < p).to(torch.int64)


class LoanSCM:
    """The Loan structural causal model; implements :class:`~simstudy.world.CausalWorld`.

    Args:
        params: the ``loan`` world entry (:class:`~simstudy.world.specs.LoanWorldSpec`; it
            says whether the label is drawn, ``stochastic_label``), or its fields as keywords.

    References:
        Karimi, von Kügelgen, Schölkopf & Valera, "Algorithmic recourse under imperfect causal
        knowledge: a probabilistic approach", NeurIPS 2020, https://arxiv.org/abs/2006.06831.
        Majumdar & Valera, "CARMA: A practical framework to generate recommendations for
        causal algorithmic recourse at scale", FAccT 2024.

    Example:
        >>> from simstudy.core.rng import generator
        >>> x = LoanSCM().sample(5, generator(0, "example"))
        >>> tuple(x.shape), LoanSCM.roles.names[:2]
        ((5, 7), ('gender', 'age'))
    """

    roles = LOAN_ROLES
    name = "loan"

    def __init__(self, params: LoanWorldSpec | None = None, /, **values: Any) -> None:
        self.params = params if params is not None else LoanWorldSpec(**values)
        #: draw ``Y ~ Bernoulli(p(x))`` instead of thresholding ``p`` at 0.5
        self.stochastic_label = self.params.stochastic_label

    # -- noise ---------------------------------------------------------------------------
    def sample_noise(self, n: int, generator: np.random.Generator) -> torch.Tensor:
        u = np.empty((n, 7))
        u[:, G] = generator.random(n) < 0.5
        u[:, A] = generator.gamma(_AGE_SHAPE, _AGE_SCALE, n)
        for j, name in ((E, "education"), (L, "loan_amount"), (D, "loan_duration"),
                        (I, "income"), (S, "savings")):
            u[:, j] = generator.normal(0.0, _NOISE_SD[name], n)
        return torch.from_numpy(u)

    def noise_log_prob(self, u: torch.Tensor) -> torch.Tensor:
        """Sum over features of the exogenous log-densities (Bernoulli mass for gender)."""
        return self._noise_log_prob_columns(u.T.contiguous())

    @staticmethod
    def _noise_log_prob_columns(uc: torch.Tensor | list[torch.Tensor],
                                own: list[bool] | None = None, take=None) -> torch.Tensor:
        # one column per feature: the candidates of a search arrive column by column; with
        # ``own``, the features flagged there hold one row per person and ``take`` gathers a
        # person's value for each candidate (the leading run of them is summed per person)
        if own is None:
            own, take = [False] * 7, None
        lead = own[G] and own[A]
        ug, ua = uc[G], uc[A]
        if not lead:
            ug, ua = (take(ug) if own[G] else ug), (take(ua) if own[A] else ua)
        is_binary = (ug == 0) | (ug == 1)
        lp = torch.where(is_binary, math.log(0.5), -math.inf).to(ua.dtype)
        gamma_lp = ((_AGE_SHAPE - 1) * torch.log(ua.clamp_min(1e-300)) - ua / _AGE_SCALE
                    - math.lgamma(_AGE_SHAPE) - _AGE_SHAPE * math.log(_AGE_SCALE))
        lp = lp + torch.where(ua > 0, gamma_lp, torch.full_like(ua, -math.inf))
        for j, name in ((E, "education"), (L, "loan_amount"), (D, "loan_duration"),
                        (I, "income"), (S, "savings")):
            sd = _NOISE_SD[name]
            if lead and not own[j]:
                lp, lead = take(lp), False
            square = 0.5 * (uc[j] / sd) ** 2
            if own[j] and not lead:
                square = take(square)
            lp = lp - square - math.log(sd) - 0.5 * math.log(2 * math.pi)
        return take(lp) if lead else lp

    # -- the structural equations, one feature at a time ------------------------------------
    @staticmethod
    def _equation(j: int, x: list[torch.Tensor], u: torch.Tensor) -> torch.Tensor:
        if j == G:
            return u
        if j == A:
            return u - 35.0
        if j == E:
            return -0.5 + torch.sigmoid(-1.0 + 0.5 * x[G] + torch.sigmoid(0.1 * x[A]) + u)
        if j == L:
            return 1.0 + 0.01 * (x[A] - 5.0) * (5.0 - x[A]) + (1.0 - x[G]) + u
        if j == D:
            return -1.0 + 0.1 * x[A] + 2.0 * (1.0 - x[G]) + x[L] + u
        if j == I:
            return -4.0 + 0.1 * (x[A] + 35.0) + 2.0 * x[G] + x[G] * x[E] + u
        return -4.0 + 1.5 * (x[I] > 0).to(u.dtype) * x[I] + u

    @staticmethod
    def _inverse(j: int, x: list[torch.Tensor]) -> torch.Tensor:
        if j == G:
            return x[G]
        if j == A:
            return x[A] + 35.0
        if j == E:
            z = x[E] + 0.5
            return torch.log(z) - torch.log1p(-z) + 1.0 - 0.5 * x[G] - torch.sigmoid(0.1 * x[A])
        if j == L:
            return x[L] - 1.0 - 0.01 * (x[A] - 5.0) * (5.0 - x[A]) - (1.0 - x[G])
        if j == D:
            return x[D] + 1.0 - 0.1 * x[A] - 2.0 * (1.0 - x[G]) - x[L]
        if j == I:
            return x[I] + 4.0 - 0.1 * (x[A] + 35.0) - 2.0 * x[G] - x[G] * x[E]
        return x[S] + 4.0 - 1.5 * (x[I] > 0).to(x[I].dtype) * x[I]

    # -- protocol --------------------------------------------------------------------------
    def predict(self, u: torch.Tensor) -> torch.Tensor:
        uc = u.T.contiguous()
        cols: list[torch.Tensor] = []
        for j in range(7):
            cols.append(self._equation(j, cols, uc[j]))
        return torch.stack(cols, dim=1)

    def abduct(self, x: torch.Tensor) -> torch.Tensor:
        # Column-major copy: every equation works on whole contiguous columns.
        cols = list(x.T.contiguous())
        return torch.stack([self._inverse(j, cols) for j in range(7)], dim=1)

    def sample(self, n: int, generator: np.random.Generator) -> torch.Tensor:
        return self.predict(self.sample_noise(n, generator))

    def counterfactual(
        self, x: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor
    ) -> torch.Tensor:
        return self.intervene(self.abduct(x), intervened, values)

    def intervene(
        self, u: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor
    ) -> torch.Tensor:
        """Action and prediction steps: features from noise ``u`` under ``do(X_I := values_I)``.

        ``counterfactual(x, ...) == intervene(abduct(x), ...)``; solvers that try many actions
        per person abduct once and call this directly.
        """
        return self.intervene_with_log_prob(u, intervened, values, log_prob=False)[0]

    def intervene_with_log_prob(
        self, u: torch.Tensor, intervened: torch.Tensor, values: torch.Tensor,
        log_prob: bool = True, person: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Counterfactual features and, optionally, their log-density in one pass.

        A non-intervened feature keeps its noise, so only the intervened features' noise is
        recomputed (``u_j = inverse_j(x_cf)``); this avoids a second abduction of ``x_cf``.

        Args:
            u: noise, one row per action, or one row per person when ``person`` is given.
            intervened, values: ``(n, 7)`` the actions.
            person: optional ``(n,)`` row of ``u`` of each action. A search tries many actions
                per person; then a feature that no action of the batch touches (neither it nor
                an ancestor is intervened on), and its noise terms, are computed once per
                person and gathered. Every term is an elementwise function of the person's
                row, computed by the same operations in the same order, so the numbers are
                those of the per-action computation.
        """
        def take(t: torch.Tensor) -> torch.Tensor:
            return t if person is None else t.index_select(0, person)

        u_cols = u.T.contiguous()
        inter_cols = intervened.T.contiguous()
        value_cols = values.T.to(u.dtype).contiguous()
        parents = [[self.roles.names.index(q) for q in self.roles.parents[name]]
                   for name in self.roles.names]
        touched: list[bool] = []
        own: list[torch.Tensor | None] = []  # per-person columns of untouched features
        cols: list[torch.Tensor] = []
        noise: list[torch.Tensor] = []
        for j in range(7):
            hit = bool(inter_cols[j].any())
            touched.append(hit or any(touched[q] for q in parents[j]))
            if not touched[j]:
                own.append(self._equation(j, own, u_cols[j]))
                cols.append(take(own[j]))
                noise.append(u_cols[j])
                continue
            own.append(None)
            if any(touched[q] for q in parents[j]):
                natural = self._equation(j, cols, take(u_cols[j]))
            else:
                # intervened on, but what it would be without the action is the person's
                natural = take(self._equation(j, own, u_cols[j]))
            if hit:
                cols.append(torch.where(inter_cols[j], value_cols[j], natural))
                if log_prob:
                    noise.append(torch.where(inter_cols[j], self._inverse(j, cols),
                                             take(u_cols[j])))
            else:
                cols.append(natural)
                noise.append(take(u_cols[j]))
        x_cf = torch.stack(cols, dim=1)
        if not log_prob:
            return x_cf, None
        # the noise of an untouched feature is the person's (gathered where it is used)
        return x_cf, self._log_prob_columns(cols, noise, own, take)

    def _log_prob_columns(self, x: list[torch.Tensor], u: list[torch.Tensor],
                          own: list[torch.Tensor | None] | None = None,
                          take=None) -> torch.Tensor:
        """``log p`` of features ``x`` with noise ``u`` (columns); where ``own[j]`` is a
        per-person column, ``u[j]`` is per person too and ``take`` gathers it per candidate."""
        per_person = [False] * 7 if own is None else [c is not None for c in own]
        z = (own[E] if per_person[E] else x[E]) + 0.5
        inside = (z > 0) & (z < 1)
        log_jac = -torch.log(z.clamp(1e-300, 1.0)) - torch.log((1.0 - z).clamp(1e-300, 1.0))
        if per_person[E]:
            inside, log_jac = take(inside), take(log_jac)
        lp = self._noise_log_prob_columns(u, per_person, take) + log_jac
        return torch.where(inside, lp, torch.full_like(lp, -math.inf))

    def log_prob(self, x: torch.Tensor) -> torch.Tensor:
        u = self.abduct(x)
        z = x[:, E] + 0.5
        inside = (z > 0) & (z < 1)
        log_jac = -torch.log(z.clamp(1e-300, 1.0)) - torch.log((1.0 - z).clamp(1e-300, 1.0))
        lp = self.noise_log_prob(u) + log_jac
        return torch.where(inside, lp, torch.full_like(lp, -math.inf))

    def label(self, x: torch.Tensor, generator: np.random.Generator | None = None) -> torch.Tensor:
        """Ground-truth label of each row (see :func:`loan_label`)."""
        return loan_label(x, self.stochastic_label, generator)


def build_loan_world(params: LoanWorldSpec, seed: int, cache: Any = None,
                     base_dir: str | Path = ".") -> tuple[LoanSCM, WorldData, dict]:
    """``(LoanSCM, WorldData, info)``: the ``loan`` world and its sampled, split data (the
    runtime of the ``loan`` kind; ``cache`` and ``base_dir`` are not needed).

    Example:
        >>> world, data, info = build_loan_world(LoanWorldSpec(n_samples=200), seed=0)
        >>> world.stochastic_label, len(data.x_train), info["kind"]
        (False, 100, 'loan')
    """
    return sampled_world(LoanSCM(params), params, seed)
