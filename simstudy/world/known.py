"""CARMA's known synthetic worlds (and the Loan world) as tables of structural equations.

The worlds are declared, graph, equations, roles and levels in agreement, in
:mod:`simstudy.world.known_specs` (torch-free, with their equations written out); here each
declaration gets its noise (``U_sex ~ Bernoulli(0.5)``, ``U_1`` a mixture of two normals,
``U_2`` and ``U_3`` normal) and becomes an :class:`~simstudy.world.additive.SCMTable`.

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
from .known_specs import KNOWN_WORLDS, KnownWorld, KnownWorldSpec
from .loan_roles import LOAN_ROLES

__all__ = ["KNOWN_TABLES", "LOAN_TABLE", "known_world", "build_known_world"]

_SEX = Bernoulli(0.5)
_U1 = NormalMixture(weights=(0.5, 0.5), means=(-2.0, 1.5), sds=(math.sqrt(1.5), 1.0))
_UNIT = Normal(1.0)
_SOURCE = "CARMA (Majumdar & Valera, FAccT 2024), public code: sem_equations/{}.py"


def _table(world: KnownWorld) -> SCMTable:
    noise = {"sex": _SEX, "x1": _U1, "x2": Normal(world.x2_sd), "x3": _UNIT}
    equations = tuple(Equation(feature, world.graph[feature], world.means[feature],
                               noise[feature]) for feature in world.roles.names)
    source = _SOURCE.format(world.name.split("_")[0] + "sens")
    return SCMTable(world.name, world.roles, equations, world.label_score, description=source)


#: the structural equations of every known synthetic world (:data:`KNOWN_WORLDS`), by kind
KNOWN_TABLES: dict[str, SCMTable] = {name: _table(w) for name, w in KNOWN_WORLDS.items()}


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
