"""Feature roles of the known synthetic worlds, without torch (read when documents validate).

CARMA's synthetic worlds share four variables: a binary sensitive attribute ``sex`` (immutable)
and three features ``x1, x2, x3`` that anyone may act on; the graph is a chain, a collider or a
triangle (:data:`KNOWN_GRAPHS`), each with linear and non-linear equations
(:mod:`simstudy.world.known`).

References:
    Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024, https://doi.org/10.1145/3630106.3659003
    (equations: public repository ``ayanmaj92/carma-recourse``).

Example:
    >>> KNOWN_ROLES["collider_linear"].parents["x3"]
    ('sex', 'x1', 'x2')
    >>> sorted(KNOWN_ROLES)[:2]
    ['chain_linear', 'chain_non_linear']
"""

from __future__ import annotations

from .base import FeatureRoles

__all__ = ["KNOWN_GRAPHS", "KNOWN_FORMS", "KNOWN_ROLES", "known_roles"]

#: the parents of each feature in each graph
KNOWN_GRAPHS: dict[str, dict[str, tuple[str, ...]]] = {
    "chain": {"sex": (), "x1": ("sex",), "x2": ("sex", "x1"), "x3": ("sex", "x2")},
    "collider": {"sex": (), "x1": ("sex",), "x2": ("sex",), "x3": ("sex", "x1", "x2")},
    "triangle": {"sex": (), "x1": ("sex",), "x2": ("x1",), "x3": ("sex", "x1", "x2")},
}
#: the equation forms each graph comes in
KNOWN_FORMS: tuple[str, ...] = ("linear", "non_linear")


def known_roles(graph: str) -> FeatureRoles:
    """The roles of a synthetic world with the given graph."""
    return FeatureRoles(
        names=("sex", "x1", "x2", "x3"),
        immutable=("sex",),
        actionable=("x1", "x2", "x3"),
        sensitive=("sex",),
        parents=dict(KNOWN_GRAPHS[graph]),
        rankings={"causal_order": ("x1", "x2"), "reverse_causal_order": ("x3", "x2")},
        # ``sex`` raises x1 (directly or through the graph), and x1 raises the label's score:
        # 1 is the advantaged level, the reference of audit gaps.
        codebook={"sex": {0: "sex 0", 1: "sex 1"}},
        reference_levels={"sex": 1},
    )


#: ``{kind: roles}`` of every synthetic world (``chain_linear``, ``chain_non_linear``, ...)
KNOWN_ROLES: dict[str, FeatureRoles] = {
    f"{graph}_{form}": known_roles(graph) for graph in KNOWN_GRAPHS for form in KNOWN_FORMS}
