"""A policy's recourse measured into run-table rows: one row per applicant.

Each row holds the applicant's ids and groups, reported profile, the recourse (action and
counterfactual), its metrics (:func:`~simstudy.metrics.evaluate_recourse`), and the recourse
measured against the people's hidden truth and response model (:func:`people_columns`;
``*_base`` for the base of a refining policy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..metrics import Recourse, evaluate_recourse, published_proximity
from ..people import People
from ..policies.base import RecourseContext
from ..world.base import FeatureRoles

__all__ = ["recourse_table", "people_columns", "policy_table", "group_columns"]


def recourse_table(
    people: People, recourse_metrics: dict[str, np.ndarray], intervened: np.ndarray,
    values: np.ndarray, extras: dict[str, np.ndarray], meta: dict[str, Any],
    sensitive: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per applicant: ids, groups, profile, action, factual and counterfactual, metrics.

    ``sensitive``: the world's sensitive features (:attr:`FeatureRoles.sensitive`), written as
    integer group codes beside the population's group columns.
    """
    names = people.feature_names
    prof = people.reported
    cols: dict[str, Any] = {k: np.full(len(people), v) for k, v in meta.items()}
    cols["applicant_id"] = people.ids
    for feature in sensitive:
        if feature in names:
            cols[feature] = people.x[:, names.index(feature)].astype(np.int64)
    for key, val in people.groups.items():
        cols[key] = val
    cols["n_actionable"] = prof.n_actionable
    for k, f in enumerate(prof.features):
        j = names.index(f)
        cols[f"score_{f}"] = prof.scores[:, k]
        cols[f"weight_{f}"] = prof.weights[:, k]
        cols[f"can_{f}"] = people.true_actionable[:, k]
        cols[f"act_{f}"] = intervened[:, j]
        cols[f"theta_{f}"] = values[:, j]
    for j, f in enumerate(names):
        cols[f"x_{f}"] = people.x[:, j]
        cols[f"xcf_{f}"] = recourse_metrics["x_cf"][:, j]
    for key, val in recourse_metrics.items():
        if key != "x_cf":
            cols[key] = val
    for key, val in extras.items():
        cols[key] = val
    return pd.DataFrame(cols)


def people_columns(people: People, rec: Recourse, ev: dict[str, np.ndarray],
                   feature_range: np.ndarray, categorical: np.ndarray | None = None
                   ) -> dict[str, np.ndarray]:
    """A recourse measured against the people: hidden truth and response probabilities.

    Args:
        people: who received the recourses (row ``i`` of ``rec`` is ``people.ids[i]``).
        rec: the policy's recourse.
        ev: its metrics (:func:`~simstudy.metrics.evaluate_recourse`).
        feature_range: the training range of every feature.
        categorical: which features are categorical (their change counts one unit in the
            published proximity, :func:`~simstudy.metrics.published_proximity`).

    Returns:
        :meth:`People.truth_columns` plus ``p_accept`` and ``p_act`` (NaN where no recourse).
    """
    found = ev["found"]
    intervened = rec.intervened & rec.found[:, None]
    out = people.truth_columns(ev["x_cf"], found, intervened)
    proximity = published_proximity(intervened, rec.values, people.x, feature_range,
                                    categorical)
    inputs = people.response_inputs(np.arange(len(people)), ev["cost"], ev["cost_unweighted"],
                                    intervened.sum(axis=1), proximity, out["blocked"])
    p_accept, p_act = people.response.probabilities(inputs)
    out["p_accept"] = np.where(found, p_accept, np.nan)
    out["p_act"] = np.where(found, p_act, np.nan)
    return out


def policy_table(people: People, rec: Recourse, context: RecourseContext,
                  meta: dict[str, Any]) -> pd.DataFrame:
    """The run-table rows of one policy's recourse for one condition's people."""
    world, model, fr = context.world, context.model, context.feature_range
    ev = evaluate_recourse(world, model, people.x, rec, people.reported, fr)
    extras = {**rec.extras, **people_columns(people, rec, ev, fr,
                                             world.roles.categorical_mask())}
    if rec.base is not None:
        ev_base = evaluate_recourse(world, model, people.x, rec.base, people.reported, fr)
        base = people.truth_columns(ev_base["x_cf"], ev_base["found"],
                                    rec.base.intervened & rec.base.found[:, None])
        extras.update({f"{k}_base": v for k, v in base.items()
                       if k in ("user_loss", "gtp", "gtd", "blocked")})
    return recourse_table(people, ev, rec.intervened & rec.found[:, None], rec.values, extras,
                          meta, world.roles.sensitive)


def group_columns(roles: FeatureRoles, people: People) -> list[str]:
    """The columns a run's rows are summarized by: the world's sensitive features, then the
    population's group columns, ``privileged`` (assigned from the others) last."""
    own = [c for c in people.groups if c != "privileged"]
    return [*(s for s in roles.sensitive if s in roles.names), *own,
            *(["privileged"] if "privileged" in people.groups else [])]

