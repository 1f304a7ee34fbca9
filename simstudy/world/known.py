"""CARMA's known synthetic worlds (and the Loan world) as tables of structural equations.

Every synthetic world has a binary sensitive attribute ``sex`` and three actionable features;
``s`` is the logistic sigmoid and ``u1`` the noise of ``x1``. Exogenous noise::

    U_sex ~ Bernoulli(0.5)
    U_1   ~ 0.5 N(-2, 1.5) + 0.5 N(1.5, 1)          (variances)
    U_2   ~ N(0, 1)    (N(0, 0.1) in collider and triangle non-linear)
    U_3   ~ N(0, 1)

Equations (``sex = U_sex``; label ``Y = 1[s(score) >= 0.5]``)::

    chain, linear:        x1 = sex + U_1
                          x2 = sex + 0.5 x1 + U_2
                          x3 = 0.25 sex + 0.5 x2 + U_3
                          score = x1 + 0.5 x2 + x3 + 0.5 u1
    chain, non-linear:    x1 = sex + U_1
                          x2 = sex + 3 s(2 x1) + U_2
                          x3 = 0.25 sex + x2^2 + U_3
                          score = x1^3 + x2 + 0.75 exp(x3) + 0.5 u1 - 50
    collider, linear:     x1 = sex + U_1
                          x2 = 0.5 sex + U_2
                          x3 = 0.05 sex + 0.25 x1 + 0.25 x2 + U_3
                          score = x1 + 0.5 x2 + x3 + 0.5 u1
    collider, non-linear: x1 = 0.5 sex + U_1
                          x2 = 0.5 sex + U_2
                          x3 = 0.25 sex + 0.25 x1^2 + 0.25 x2^2 + U_3
                          score = x1^3 + x2 + 3 x3 + 0.5 u1
    triangle, linear:     x1 = sex + U_1
                          x2 = x1 + U_2
                          x3 = sex + 0.25 x1 + 0.5 x2 + U_3
                          score = x1 + 0.5 x2 + x3 + 0.5 u1
    triangle, non-linear: x1 = sex + U_1
                          x2 = -1 + 3 s(2 x1) + U_2
                          x3 = sex + 0.25 x1^2 + 0.5 x2 + U_3
                          score = -1 + 2^x1 + 0.75 x2^-3 + 0.1 x3^2 + 0.5 u1

The label's noise term is the noise of ``x1``, as CARMA draws it (its data generator passes the
second exogenous column to the label equation); since ``u1`` is abducted exactly from ``x``,
the label is a deterministic function of the features.

The Loan table (:data:`LOAN_TABLE`) restates :class:`~simstudy.world.loan.LoanSCM` (CARMA's
semi-synthetic German-credit world) in the same form, with the education equation's sigmoid as
its link; the registered ``loan`` kind stays :class:`~simstudy.world.loan.LoanSCM`, and the
table is checked against it.

References:
    Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003
    (equations and noise: public repository ``ayanmaj92/carma-recourse``,
    ``causal_flows/causal_nf/sem_equations`` and ``preparators/scm/_base_distributions.py``).

Example:
    >>> from simstudy.core.rng import generator
    >>> world = known_world("chain_non_linear")
    >>> world.label(world.sample(6, generator(0, "example"))).tolist()
    [1, 1, 1, 1, 0, 0]
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from .additive import (
    AdditiveNoiseSCM,
    Bernoulli,
    Equation,
    Gamma,
    Link,
    Normal,
    NormalMixture,
    SCMTable,
)
from .data import WorldData, sampled_world
from .known_roles import KNOWN_ROLES
from .known_specs import KnownWorldSpec
from .loan_roles import LOAN_ROLES

__all__ = ["KNOWN_TABLES", "LOAN_TABLE", "known_world", "build_known_world"]

_SEX = Bernoulli(0.5)
_U1 = NormalMixture(weights=(0.5, 0.5), means=(-2.0, 1.5), sds=(math.sqrt(1.5), 1.0))
_UNIT = Normal(1.0)
_NARROW = Normal(math.sqrt(0.1))
_SOURCE = "CARMA (Majumdar & Valera, FAccT 2024), public code: sem_equations/{}.py"
_s = torch.sigmoid


def _sex() -> float:
    return 0.0


def _table(kind: str, x1, x2, x3, score, u2=_UNIT) -> SCMTable:
    roles = KNOWN_ROLES[kind]
    equations = (Equation("sex", (), _sex, _SEX),
                 Equation("x1", roles.parents["x1"], x1, _U1),
                 Equation("x2", roles.parents["x2"], x2, u2),
                 Equation("x3", roles.parents["x3"], x3, _UNIT))
    source = _SOURCE.format(kind.split("_")[0] + "sens")
    return SCMTable(kind, roles, equations, score, description=source)


KNOWN_TABLES: dict[str, SCMTable] = {t.name: t for t in (
    _table("chain_linear",
           lambda sex: sex,
           lambda sex, x1: sex + 0.5 * x1,
           lambda sex, x2: 0.25 * sex + 0.5 * x2,
           lambda x, u: x["x1"] + 0.5 * x["x2"] + x["x3"] + 0.5 * u["x1"]),
    _table("chain_non_linear",
           lambda sex: sex,
           lambda sex, x1: sex + 3 * _s(2 * x1),
           lambda sex, x2: 0.25 * sex + x2**2,
           lambda x, u: x["x1"]**3 + x["x2"] + 0.75 * torch.exp(x["x3"]) + 0.5 * u["x1"] - 50),
    _table("collider_linear",
           lambda sex: sex,
           lambda sex: 0.5 * sex,
           lambda sex, x1, x2: 0.05 * sex + 0.25 * x1 + 0.25 * x2,
           lambda x, u: x["x1"] + 0.5 * x["x2"] + x["x3"] + 0.5 * u["x1"]),
    _table("collider_non_linear",
           lambda sex: 0.5 * sex,
           lambda sex: 0.5 * sex,
           lambda sex, x1, x2: 0.25 * sex + 0.25 * x1**2 + 0.25 * x2**2,
           lambda x, u: x["x1"]**3 + x["x2"] + 3 * x["x3"] + 0.5 * u["x1"],
           u2=_NARROW),
    _table("triangle_linear",
           lambda sex: sex,
           lambda x1: x1,
           lambda sex, x1, x2: sex + 0.25 * x1 + 0.5 * x2,
           lambda x, u: x["x1"] + 0.5 * x["x2"] + x["x3"] + 0.5 * u["x1"]),
    _table("triangle_non_linear",
           lambda sex: sex,
           lambda x1: -1 + 3 * _s(2 * x1),
           lambda sex, x1, x2: sex + 0.25 * x1**2 + 0.5 * x2,
           lambda x, u: (-1 + 2**x["x1"] + 0.75 * x["x2"]**-3 + 0.1 * x["x3"]**2
                         + 0.5 * u["x1"]),
           u2=_NARROW),
)}


# -- Loan, restated as a table -------------------------------------------------------------------
def _logit_shift(x: torch.Tensor) -> torch.Tensor:
    z = x + 0.5
    return torch.log(z) - torch.log1p(-z)


_HALF_SIGMOID = Link(
    forward=lambda z: -0.5 + torch.sigmoid(z),
    inverse=_logit_shift,
    log_derivative_inverse=lambda x: (-torch.log((x + 0.5).clamp(1e-300, 1.0))
                                      - torch.log((0.5 - x).clamp(1e-300, 1.0))),
    inside=lambda x: (x > -0.5) & (x < 0.5),
)


def _loan_score(x, u):
    income, savings = x["income"], x["savings"]
    sign = torch.where((income >= 0) & (savings >= 0), 1.0, -1.0).to(income.dtype)
    return 0.3 * (-x["loan_amount"] - x["loan_duration"] + income + savings
                  + sign * income * savings)


LOAN_TABLE = SCMTable("loan", LOAN_ROLES, (
    Equation("gender", (), lambda: 0.0, Bernoulli(0.5)),
    Equation("age", (), lambda: -35.0, Gamma(10.0, 3.5)),
    Equation("education", ("gender", "age"),
             lambda g, a: -1.0 + 0.5 * g + torch.sigmoid(0.1 * a), Normal(0.5),
             link=_HALF_SIGMOID),
    Equation("loan_amount", ("gender", "age"),
             lambda g, a: 1.0 + 0.01 * (a - 5.0) * (5.0 - a) + (1.0 - g), Normal(2.0)),
    Equation("loan_duration", ("gender", "age", "loan_amount"),
             lambda g, a, la: -1.0 + 0.1 * a + 2.0 * (1.0 - g) + la, Normal(3.0)),
    Equation("income", ("gender", "age", "education"),
             lambda g, a, e: -4.0 + 0.1 * (a + 35.0) + 2.0 * g + g * e, Normal(2.0)),
    Equation("savings", ("income",),
             lambda i: -4.0 + 1.5 * (i > 0).to(i.dtype) * i, Normal(5.0)),
), _loan_score, description="Karimi et al. (NeurIPS 2020); CARMA sem_equations/loan.py")


def known_world(kind: str) -> AdditiveNoiseSCM:
    """The world of a synthetic kind (``chain_linear``, ..., ``triangle_non_linear``).

    Example:
        >>> from simstudy.world import known_world
        >>> world = known_world("collider_non_linear")
        >>> world.roles.actionable, world.roles.immutable
        (('x1', 'x2', 'x3'), ('sex',))
    """
    if kind not in KNOWN_TABLES:
        raise ValueError(f"unknown known world {kind!r}; known: {sorted(KNOWN_TABLES)}")
    return AdditiveNoiseSCM(KNOWN_TABLES[kind])


def build_known_world(params: KnownWorldSpec, seed: int, cache: Any = None,
                      base_dir: str | Path = ".") -> tuple[AdditiveNoiseSCM, WorldData, dict]:
    """``(world, WorldData, info)``: the synthetic world ``params.kind`` and its sampled, split
    data (the runtime of the six known kinds; ``cache`` and ``base_dir`` are not needed).

    Example:
        >>> spec = KnownWorldSpec(kind="triangle_linear", n_samples=200)
        >>> world, data, info = build_known_world(spec, seed=0)
        >>> world.roles.parents["x2"], len(data.x_val), info["kind"]
        (('x1',), 50, 'triangle_linear')
    """
    return sampled_world(known_world(params.kind), params, seed)
