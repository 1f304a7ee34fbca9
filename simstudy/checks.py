"""Contract checks for every registered world, policy and response model.

Like Gymnasium's ``check_env`` and scikit-learn's ``check_estimator``: each check takes one
instance, exercises the protocol it claims to follow, and raises :class:`ContractError` naming
the broken promise. :func:`registered_kinds` lists what the registries hold and
:func:`example_spec` builds a small instance of each kind, so a test parametrised over the
registries checks a new kind without new test code.

A spec class may define ``check_example() -> dict``: a small document of its kind (few samples,
short training) for these checks; without it the kind's defaults are used.

Checks:

* world (:func:`check_world`): ``predict(abduct(x)) == x``; the counterfactual without an
  intervention is the factual; an intervened feature takes its value and features that are not
  its descendants keep theirs; ``log_prob`` is finite on the world's own data; ``label``, where
  the world has one, gives one 0/1 label per row.
* policy (:func:`check_policy`): never acts on a feature the person cannot change (nor on any
  feature outside the globally actionable ones); every point it shows is causally consistent
  by value (:func:`check_recourse_values`): each feature not intervened equals the world's
  counterfactual of the interventions (or, for a generator proposing points without the
  world's equations, keeps its factual value throughout), for people beyond the training range
  too; answers do not depend on the order or the size of the batch; the same seed gives the
  same answer, also from a freshly built and fitted policy. No recourse moves a feature against
  the person's direction or beyond their bound on the change (when the profiles carry limits),
  nor to a value that is not one of a feature's levels.
* response model (:func:`check_response_model`): probabilities in ``[0, 1]``; ratings on the
  model's scale; answers are a function of each row's inputs and keyed uniforms only (same
  uniforms, same answers; a subset or a reordering of rows answers the same).

Example:
    >>> from simstudy.checks import registered_kinds
    >>> "oracle" in registered_kinds()["policy"]
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .core.registry import entries
from .core.rng import entity_uniforms
from .people.population import RankingSampler
from .policies.base import RecourseContext
from .primitives.consistency import inconsistent_features, world_counterfactual
from .primitives.levels import level_columns, off_level
from .primitives.limits import limit_violations
from .primitives.profiles import ActionabilityProfiles

__all__ = [
    "ContractError",
    "registered_kinds",
    "example_spec",
    "check_world",
    "check_policy",
    "check_recourse_values",
    "check_response_model",
    "check_profiles",
    "beyond_range",
]


class ContractError(AssertionError):
    """A registered kind breaks its protocol."""


def _registries() -> dict[str, dict[str, type]]:
    return {family: entries(family) for family in ("world", "policy", "response")}


def registered_kinds() -> dict[str, list[str]]:
    """The registered kinds of each family: ``{"world": [...], "policy": [...], ...}``."""
    return {what: sorted(reg) for what, reg in _registries().items()}


def example_spec(what: str, kind: str) -> Any:
    """A validated small spec of a registered kind (its ``check_example()`` or defaults)."""
    spec_cls = _registries()[what][kind]
    example = getattr(spec_cls, "check_example", None)
    document = dict(example()) if example is not None else {"kind": kind}
    document.setdefault("kind", kind)
    return spec_cls.model_validate(document)


def _fail(what: str, message: str) -> None:
    raise ContractError(f"{what}: {message}")


# -- worlds ------------------------------------------------------------------------------------
@torch.no_grad()
def check_world(world: Any, x: torch.Tensor, name: str = "world", atol: float = 1e-6,
                needs_label: bool = False) -> None:
    """Checks the causal-world protocol on factual rows ``x`` (``(n, d)``, the world's data).

    ``atol`` is in units of each feature's spread in ``x`` (numerical inverses are not exact).
    ``needs_label``: the world's kind declares a label rule (retraining may use it), so
    ``label`` must exist.
    """
    x = torch.as_tensor(x, dtype=torch.float64)
    n, d = x.shape
    scale = x.std(dim=0).clamp_min(1e-12).numpy()
    if d != world.roles.dim:
        _fail(name, f"data has {d} columns, the world {world.roles.dim} features")
    back = world.predict(world.abduct(x)).numpy()
    err = np.abs(back - x.numpy()) / scale
    if not np.all(err <= atol):
        _fail(name, f"predict(abduct(x)) differs from x by up to {err.max():.3g} spreads")
    none = torch.zeros(n, d, dtype=torch.bool)
    cf = world.counterfactual(x, none, torch.zeros(n, d, dtype=torch.float64)).numpy()
    err = np.abs(cf - x.numpy()) / scale
    if not np.all(err <= atol):
        _fail(name, f"the counterfactual without intervention differs from the factual by up "
                    f"to {err.max():.3g} spreads")
    names = world.roles.names
    for feature in world.roles.actionable:
        j = names.index(feature)
        intervened = none.clone()
        intervened[:, j] = True
        values = x.clone()
        values[:, j] = x[:, j] + float(scale[j])
        cf = world.counterfactual(x, intervened, values).numpy()
        if not np.allclose(cf[:, j], values[:, j].numpy(), rtol=0.0, atol=atol * scale[j]):
            _fail(name, f"do({feature} := v) does not set {feature} to v")
        keep = [k for k, f in enumerate(names)
                if f != feature and f not in world.roles.descendants(feature)]
        err = np.abs(cf[:, keep] - x.numpy()[:, keep]) / scale[keep]
        if keep and not np.all(err <= atol):
            _fail(name, f"do({feature} := v) changes a feature that is not its descendant")
    logp = world.log_prob(x).numpy()
    if logp.shape != (n,) or not np.all(np.isfinite(logp)):
        _fail(name, f"log_prob is not finite on {int((~np.isfinite(logp)).sum())} of its own "
                    "data rows")
    label = getattr(world, "label", None)
    if needs_label and label is None:
        _fail(name, "the kind declares labels but the world has no label(x)")
    if label is not None:
        y = np.asarray(label(x, np.random.default_rng(0)))
        if y.shape != (n,) or not np.isin(y, (0, 1)).all():
            _fail(name, "label(x) must give one 0/1 label per row")


# -- policies ----------------------------------------------------------------------------------
def check_profiles(features: tuple[str, ...], ids: np.ndarray, seed: int = 0
                   ) -> ActionabilityProfiles:
    """Ranking profiles with 1..K actionable features (unit costs), keyed by id, for checks."""
    scores, levels = RankingSampler().sample(features, entity_uniforms(seed, "check-profiles",
                                                                       ids, 2))
    return ActionabilityProfiles(features, scores, levels, np.where(scores > 0, 1.0, np.inf))


def beyond_range(x: np.ndarray, allowed: np.ndarray, lower: np.ndarray, upper: np.ndarray
                 ) -> np.ndarray:
    """A copy of ``x`` in which every other person (rows 0, 2, ...) has the last feature they
    cannot change set a tenth of its range above the training maximum.

    Real applicants lie outside the training range now and then; a policy that clamps its search
    to that range would move such a feature, which it must never do.
    """
    x = np.array(x, dtype=np.float64, copy=True)
    for i in range(0, len(x), 2):
        forbidden = np.flatnonzero(~allowed[i])
        if len(forbidden):
            j = forbidden[-1]
            x[i, j] = upper[j] + 0.1 * (upper[j] - lower[j])
    return x


def check_recourse_values(world: Any, x: np.ndarray, recourse: Any,
                          feature_range: np.ndarray, name: str = "policy",
                          tolerance: float = 1e-9) -> None:
    """Checks by value that every recourse shown is causally consistent.

    For each found recourse, the point shown (its ``counterfactual``; for a policy that
    proposes only an action, the world's counterfactual of it) must give every intervened
    feature its value and every other feature the value of the world's counterfactual of the
    interventions, or (a point proposed without the world's equations) keep every other
    feature at its factual value; equality within ``tolerance`` times the feature's range
    (:func:`~simstudy.primitives.consistency.inconsistent_features`). A feature the person may
    not act on can then only stay or follow the allowed interventions.

    Example:
        >>> import numpy as np
        >>> from simstudy.primitives import Recourse
        >>> from simstudy.world import LoanSCM
        >>> x = np.array([[1.0, 30.0, 0.1, 1.0, 2.0, 1.0, 0.5]])
        >>> moved = x.copy()
        >>> moved[0, 6] = 9.0  # savings moved, nothing intervened
        >>> rec = Recourse(np.zeros((1, 7), bool), x, np.array([True]), counterfactual=moved)
        >>> try:
        ...     check_recourse_values(LoanSCM(), x, rec, np.ones(7))
        ... except ContractError as error:
        ...     print(str(error).split("(")[1])
        savings off by up to 8.5)
    """
    found = np.asarray(recourse.found, dtype=bool)
    if not found.any():
        return
    x = np.asarray(x, dtype=np.float64)[found]
    inter = np.asarray(recourse.intervened, dtype=bool)[found]
    values = np.asarray(recourse.values, dtype=np.float64)[found]
    if recourse.counterfactual is None:
        return  # the world itself turns the action into the point: consistent by definition
    point = np.asarray(recourse.counterfactual, dtype=np.float64)[found]
    bad = inconsistent_features(world, x, inter, values, point, feature_range, tolerance)
    if bad.any():
        caused = world_counterfactual(world, x, inter, values)
        gap = np.where(bad, np.abs(point - caused), 0.0).max(axis=0)
        j = int(gap.argmax())
        _fail(name, f"shows {int(bad.any(axis=1).sum())} of {len(x)} people a point that is "
                    f"not the world's counterfactual of its interventions "
                    f"({world.roles.names[j]} off by up to {gap[j]:.3g})")


def _answer(rec) -> dict[str, np.ndarray]:
    found = np.asarray(rec.found, dtype=bool)
    out = {"found": found, "intervened": rec.intervened & found[:, None],
           "values": np.where(rec.intervened & found[:, None], rec.values, np.nan)}
    if rec.counterfactual is not None:
        out["counterfactual"] = np.where(found[:, None], rec.counterfactual, np.nan)
    return out


def _same(a: dict, b: dict, rows: np.ndarray | slice, rtol: float) -> str | None:
    """The first answer that differs: decisions exactly, values up to ``rtol``."""
    for key, value in a.items():
        other = b.get(key)
        mine = value[rows]
        if other is None or mine.shape != other.shape:
            return key
        if mine.dtype == bool:
            if not np.array_equal(mine, other):
                return key
        elif not np.allclose(mine, other, rtol=rtol, atol=rtol, equal_nan=True):
            return key
    return None


def check_policy(
    make: Callable[[], Any], context: RecourseContext, x: np.ndarray, ids: np.ndarray,
    profiles: ActionabilityProfiles, name: str = "policy", seed: int = 0, rtol: float = 1e-6,
    recommend_kwargs: Callable[[np.ndarray], dict] | None = None, outside_range: bool = True,
) -> None:
    """Checks the recourse-policy contract.

    Args:
        make: builds a fresh unfitted policy (called twice: determinism from scratch).
        context: what the policy is fitted on.
        x: the features of the people asking.
        ids: their ids.
        profiles: their reported actionability profiles.
        name: how failures name the policy.
        seed: the policy stream.
        rtol: relative tolerance of intervention values and counterfactuals in the invariance
            comparisons; who gets recourse and which features it changes must be identical.
            The default allows for float32 networks, whose results move in the last bits with
            the shape of the batch (matrix-product blocking); 0 asks for identical values.
        recommend_kwargs: extra keyword arguments of ``recommend`` for the people at the given
            rows (for example a feedback session for a policy that asks questions).
        outside_range: first place every other person beyond the training range on a feature
            they cannot change (:func:`beyond_range`), where clamping to the range would move it.
    """
    extra = recommend_kwargs or (lambda rows: {})
    names = context.feature_names
    cols = profiles.columns_in(names)
    allowed = np.zeros(x.shape, dtype=bool)
    allowed[:, cols] = profiles.actionable
    if outside_range:
        x = beyond_range(x, allowed, context.lower, context.upper)
    policy = make().fit(context)

    def ask(p, rows):
        return _answer(p.recommend(x[rows], profiles.subset(rows), ids[rows], seed,
                                   **extra(rows)))

    everyone = np.arange(len(ids))
    rec = policy.recommend(x, profiles, ids, seed, **extra(everyone))
    first = _answer(rec)
    acting = first["intervened"]
    if (acting & ~allowed).any():
        bad = int((acting & ~allowed).any(axis=1).sum())
        _fail(name, f"acts on a feature the person cannot change for {bad} of {len(ids)} people")
    check_recourse_values(context.world, x, rec, context.feature_range, name)
    levels = level_columns(names, context.world.roles.levels)
    if levels and off_level(first["values"], acting, levels).any():
        bad = int(off_level(first["values"], acting, levels).sum())
        _fail(name, f"sets a feature with levels to a value that is not a level for {bad} of "
                    f"{len(ids)} people")
    if profiles.limits is not None:
        bad = limit_violations(profiles.limits, x, acting, first["values"],
                               context.feature_range, cols)
        if bad.any():
            _fail(name, f"moves a feature against the person's direction or beyond their bound "
                        f"for {int(bad.sum())} of {len(ids)} people")
    key = _same(first, ask(policy, everyone), everyone, rtol)
    if key is not None:
        _fail(name, f"the same seed gives a different {key} on a second call")
    key = _same(first, ask(make().fit(context), everyone), everyone, rtol)
    if key is not None:
        _fail(name, f"a freshly fitted policy with the same seed gives a different {key}")
    order = np.random.default_rng(0).permutation(len(ids))
    key = _same(first, ask(policy, order), order, rtol)
    if key is not None:
        _fail(name, f"the order of the batch changes {key}")
    half = len(ids) // 2
    parts = [ask(policy, everyone[:half]), ask(policy, everyone[half:])]
    joined = {k: np.concatenate([p[k] for p in parts]) for k in first if k in parts[0]}
    key = _same(first, joined, everyone, rtol)
    if key is not None:
        _fail(name, f"splitting the batch in two changes {key}")


# -- response models ---------------------------------------------------------------------------
def check_response_model(model: Any, make_inputs: Callable[[np.ndarray], Any], n: int,
                         name: str = "response", seed: int = 0) -> None:
    """Checks the response-model protocol.

    Args:
        model: the response model (``probabilities``, ``ratings``, ``scale``).
        make_inputs: the model's inputs for rows ``0..n-1`` selected by an index array.
        n: rows to check.
        name: how failures name the model.
        seed: key of the uniforms.
    """
    rows = np.arange(n)
    inputs = make_inputs(rows)
    for label, p in zip(("accept", "act"), model.probabilities(inputs), strict=True):
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (n,) or not np.all((p >= 0) & (p <= 1)):
            _fail(name, f"P({label}) must be {n} values in [0, 1]")
    u = entity_uniforms(seed, "check-ratings", rows, 2)
    first = model.ratings(inputs, u)
    low, high = model.scale
    for label, r in zip(("accept", "act"), first, strict=True):
        r = np.asarray(r)
        if r.shape != (n,) or not np.all((r >= low) & (r <= high)) \
                or not np.all(r == np.round(r)):
            _fail(name, f"{label} ratings must be {n} whole numbers in [{low}, {high}]")
    again = model.ratings(make_inputs(rows), u)
    if any(not np.array_equal(a, b) for a, b in zip(first, again, strict=True)):
        _fail(name, "the same inputs and uniforms give different ratings")
    order = np.random.default_rng(seed).permutation(n)[: max(1, n // 2)]
    part = model.ratings(make_inputs(order), u[order])
    if any(not np.array_equal(a[order], b) for a, b in zip(first, part, strict=True)):
        _fail(name, "a subset or reordering of rows changes their ratings")
