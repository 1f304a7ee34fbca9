"""A rating study from any scenario: its rejected applicants rate its policies' recourses.

A scenario's ``study:`` section turns the rejected applicants of one replication x condition
into participants. Each participant rates the recourse every study policy gives them (no row
where a policy found none), on acceptance and willingness to act, with the study's response
model (default: the calibrated 7-point rating model). The table has the long schema a real
study exports (:data:`~simstudy.study.simulated.STUDY_COLUMNS`: ``uid, item, sparsity,
proximity, accept, act``) plus ``policy``, ``blocked`` (the recourse needs a feature the
participant truly cannot change), ``cost`` and the population's group columns, so ``simstudy
analyze`` reads it like a real export and also fits the policy contrast
(:mod:`simstudy.study.contrast`)::

    study:
      participants: 200                 # drawn (keyed by id) from the rejected applicants
      baseline: universal-oracle        # reference of the policy contrast
      power: {participants: [50, 100, 200], simulations: 200}

Participants are drawn (keyed by id) among the rejected applicants for whom every study
policy found a recourse, so that each rates every policy once. They are the people of the run
(:class:`~simstudy.people.People`): the person who
answered a policy's questions is the person who rates its recourse, with the same hidden truth
and dispositions. Distances follow the published study: ``sparsity`` is the number of changed
features and ``proximity`` the sum of ``|change| / feature range`` over them, a categorical
feature's change counting one (:func:`~simstudy.metrics.published_proximity`).

Random others (``random_others: k``): as the published design showed each participant random
recourses besides the chosen ones, each participant also rates ``k`` random recourses
(:func:`random_recourse_pool`, ``policy`` ``random``, items after the policies'): the ``j``-th
acts on a random non-empty subset of the person's reported-actionable features, each set to a
value uniform over its training range, drawn from ``entity_uniforms(seed, "study-random:j",
id)``; it is measured like the policies' recourses (:func:`~simstudy.metrics.evaluate_recourse`
for cost and sparsity, the hidden truth for ``blocked``, the same proximity) and rated by the
same person with the same response model.

Power (:func:`simulate_power_study`): for N participants and simulation r, N applicants are
drawn from the same eligible applicants (without replacement while the pool suffices), each
simulated participant gets fresh dispositions (independent standard normals, as people are
drawn) and fresh rating noise, both from the stream ``generator(seed, "study-power", N, r)``;
the policy contrast and the distance smooth are refitted and tested. The recourses themselves
are the run's: a power simulation re-draws people's responses, not the policies' answers.

The ``study:`` section itself is declared in :mod:`simstudy.study.section`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.gamm import fit_gamm
from ..core.registry import build
from ..core.rng import derive_seed, entity_uniforms
from ..core.store import write_csv, write_parquet
from ..metrics import evaluate_recourse, published_proximity
from ..people.response import ResponseInputs
from ..primitives.recourse import Recourse
from .contrast import fit_policy_contrast
from .power import PowerTask, clopper_pearson, smallest_n
from .section import StudyPowerSpec, StudySectionSpec, study_response

__all__ = [
    "POOL_COLUMNS",
    "POWER_COLUMNS",
    "published_proximity",
    "write_study_files",
    "study_pool",
    "eligible",
    "choose_participants",
    "study_table",
    "RANDOM_POLICY",
    "random_recourse",
    "random_recourse_pool",
    "StudyPowerTask",
    "response_inputs",
    "simulated_table",
    "simulate_power_study",
    "power_curve",
]

#: The ``policy`` of the random recourses a study's participants also rate.
RANDOM_POLICY = "random"
#: What the pool keeps of each (applicant, policy) recourse.
POOL_COLUMNS = ["applicant_id", "policy", "sparsity", "proximity", "cost", "cost_unweighted",
                "blocked"]
#: One line per power simulation (``parts/n{N}.csv``).
POWER_COLUMNS = ["n", "sim", "p_policy", "estimate", "p_smooth", "edf", "F",
                 "significant_policy", "significant_smooth"]


def study_pool(recourse: pd.DataFrame, features: tuple[str, ...], feature_range: dict[str, float],
               group_columns: list[str], categorical: tuple[str, ...] = ()) -> pd.DataFrame:
    """Every found recourse of one replication x condition, as the study's response inputs.

    Args:
        recourse: the run's rows of that replication x condition (one per applicant x policy).
        features: the globally actionable features (``act_*`` / ``theta_*`` / ``x_*`` columns).
        feature_range: each feature's training range.
        group_columns: group columns to carry.
        categorical: the categorical features (a change of category counts one unit,
            :func:`~simstudy.metrics.published_proximity`).

    Returns:
        :data:`POOL_COLUMNS` plus ``group_columns``, one row per found recourse.
    """
    found = recourse[recourse["found"].astype(bool)].reset_index(drop=True)
    proximity = published_proximity(
        np.column_stack([found[f"act_{f}"].to_numpy(bool) for f in features]),
        np.column_stack([found[f"theta_{f}"].to_numpy(float) for f in features]),
        np.column_stack([found[f"x_{f}"].to_numpy(float) for f in features]),
        np.array([feature_range[f] for f in features]),
        np.array([f in categorical for f in features], dtype=bool))
    pool = pd.DataFrame({
        "applicant_id": found["applicant_id"].to_numpy(np.int64),
        "policy": found["policy"].astype(str).to_numpy(),
        "sparsity": found["sparsity"].to_numpy(np.int64),
        "proximity": proximity,
        "cost": found["cost"].to_numpy(float),
        "cost_unweighted": found["cost_unweighted"].to_numpy(float),
        "blocked": found["blocked"].to_numpy(bool),
    })
    for col in group_columns:
        if col in found:
            pool[col] = found[col].to_numpy()
    return pool


def random_recourse_pool(people: Any, context: Any, ids: np.ndarray, k: int, seed: int,
                         groups: pd.DataFrame | None = None) -> pd.DataFrame:
    """``k`` random recourses per person (see the module docstring), as pool rows.

    Args:
        people: the run's people (``ids`` among them).
        context: the replication's :class:`~simstudy.policies.RecourseContext`.
        ids: the participants.
        k: random recourses per participant.
        seed: the study's seed.
        groups: group columns per applicant id (index), carried onto the rows.

    Returns:
        :data:`POOL_COLUMNS` (``policy`` :data:`RANDOM_POLICY`) plus ``item_offset`` (``j``)
        and the group columns, ``k`` rows per id.
    """
    ids = np.asarray(ids, dtype=np.int64)
    rows = people.rows(ids)
    x = people.x[rows]
    profiles = people.reported.subset(rows)
    feature_range = np.asarray(context.feature_range, dtype=float)
    parts = []
    for j in range(k):
        rec = random_recourse(context, x, profiles, ids, seed, j)
        intervened = rec.intervened
        ev = evaluate_recourse(context.world, context.model, x, rec, profiles, feature_range)
        acted = intervened & rec.found[:, None]
        part = pd.DataFrame({
            "applicant_id": ids, "policy": RANDOM_POLICY,
            "sparsity": ev["sparsity"].astype(np.int64),
            "proximity": published_proximity(acted, rec.values, x, feature_range,
                                             context.world.roles.categorical_mask()),
            "cost": ev["cost"], "cost_unweighted": ev["cost_unweighted"],
            "blocked": people.truth_columns(ev["x_cf"], ev["found"], acted, rows)["blocked"],
            "item_offset": j})
        parts.append(part[ev["found"]])
    out = pd.concat(parts, ignore_index=True)
    if groups is not None:
        for col in groups.columns:
            out[col] = groups[col].reindex(out["applicant_id"]).to_numpy()
    return out


def random_recourse(context: Any, x: np.ndarray, profiles: Any, ids: np.ndarray, seed: int,
                    j: int) -> Recourse:
    """The ``j``-th random recourse of each person (see the module docstring): a random
    non-empty subset of their reported-actionable features, each set uniformly over its training
    range, drawn from ``entity_uniforms(seed, "study-random:j", id)``.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> context = small_context()
        >>> ids, x, profiles = rejected_applicants(context)
        >>> rec = random_recourse(context, x, profiles, ids, 0, 0)
        >>> bool(rec.found.all()), bool((rec.intervened.sum(axis=1) >= 1).all())
        (True, True)
    """
    ids = np.asarray(ids, dtype=np.int64)
    names = context.feature_names
    act_idx = profiles.columns_in(names)
    lower, upper = context.lower[act_idx], context.upper[act_idx]
    can = profiles.actionable
    n_act = len(act_idx)
    u = entity_uniforms(seed, f"study-random:{j}", ids, 2 * n_act + 1)
    pick = can & (u[:, :n_act] < 0.5)
    # nobody draws an empty action: who would pick none takes one of their features
    first = np.minimum((u[:, -1] * can.sum(axis=1)).astype(np.int64),
                       np.maximum(can.sum(axis=1) - 1, 0))
    fallback = can & ((np.cumsum(can, axis=1) - 1) == first[:, None])
    pick = np.where(pick.any(axis=1)[:, None], pick, fallback)
    intervened = np.zeros(x.shape, dtype=bool)
    intervened[:, act_idx] = pick
    values = np.full(x.shape, np.nan)
    values[:, act_idx] = np.where(pick, lower + u[:, n_act:2 * n_act] * (upper - lower), np.nan)
    return Recourse(intervened, values, intervened.any(axis=1))


def eligible(pool: pd.DataFrame, policies: list[str] | tuple[str, ...]) -> pd.DataFrame:
    """The pool rows of the study policies, for applicants every study policy found recourse
    for: each participant rates every policy once (a complete within-participant design, so
    no policy is rated only by the people it could help)."""
    rows = pool[pool["policy"].isin(policies)]
    counts = rows.groupby("applicant_id")["policy"].nunique()
    complete = counts.index[counts == len(policies)]
    return rows[rows["applicant_id"].isin(complete)].reset_index(drop=True)


def choose_participants(ids: np.ndarray, n: int, seed: int) -> np.ndarray:
    """The ``n`` ids with the smallest keyed draw: who takes part does not depend on order."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    u = entity_uniforms(seed, "study-participants", ids)[:, 0]
    return np.sort(ids[np.argsort(u, kind="stable")[:n]])


def response_inputs(rows: pd.DataFrame, z: np.ndarray) -> ResponseInputs:
    """Response inputs of pool rows; ``z`` ``(len(rows), 4)``: the raters' dispositions
    (accept, act, accept slope, act slope)."""
    return ResponseInputs(
        cost=rows["cost"].to_numpy(float), cost_unweighted=rows["cost_unweighted"].to_numpy(float),
        sparsity=rows["sparsity"].to_numpy(float), proximity_l1=rows["proximity"].to_numpy(float),
        accept_effect=z[:, 0], act_effect=z[:, 1], accept_slope_effect=z[:, 2],
        act_slope_effect=z[:, 3], blocked=rows["blocked"].to_numpy(bool))


def _table(rows: pd.DataFrame, uid: np.ndarray, accept: np.ndarray, act: np.ndarray,
           policies: list[str], group_columns: list[str]) -> pd.DataFrame:
    item = rows["policy"].map({p: i for i, p in enumerate(policies)})
    if "item_offset" in rows:  # random others come after the policies
        item = item.fillna(len(policies) + rows["item_offset"])
    item = item.to_numpy(np.int64)
    table = pd.DataFrame({"uid": uid, "item": item, "sparsity": rows["sparsity"].to_numpy(),
                          "proximity": np.round(rows["proximity"].to_numpy(float), 6),
                          "accept": accept, "act": act, "policy": rows["policy"].to_numpy(),
                          "blocked": rows["blocked"].to_numpy(bool).astype(np.int64),
                          "cost": rows["cost"].to_numpy(float),
                          "applicant_id": rows["applicant_id"].to_numpy()})
    for col in group_columns:
        if col in rows:
            table[col] = rows[col].to_numpy()
    return table.sort_values(["uid", "item"], kind="stable").reset_index(drop=True)


def study_table(pool: pd.DataFrame, people: Any, response: Any, study: StudySectionSpec,
                policies: list[str], seed: int, group_columns: list[str],
                context: Any = None) -> pd.DataFrame:
    """The simulated study of a run: the chosen participants rate each study policy's recourse.

    Args:
        pool: :func:`study_pool` of the study's replication x condition.
        people: the run's :class:`~simstudy.people.People` of that replication x condition.
        response: the study's response model.
        study: the ``study:`` section.
        policies: the study policies (item order).
        seed: the replication's seed (participants and rating noise are keyed from it).
        group_columns: group columns to carry.
        context: the replication's :class:`~simstudy.policies.RecourseContext` (needed for
            ``study.random_others``).
    """
    rows = eligible(pool, policies)
    chosen = choose_participants(rows["applicant_id"].to_numpy(), study.participants, seed)
    rows = rows[rows["applicant_id"].isin(chosen)].reset_index(drop=True)
    if study.random_others:
        groups = rows.drop_duplicates("applicant_id").set_index("applicant_id")[
            [c for c in group_columns if c in rows]]
        rows = pd.concat([rows, random_recourse_pool(people, context, chosen,
                                                     study.random_others, seed, groups)],
                         ignore_index=True)
    who = people.rows(rows["applicant_id"].to_numpy())
    inputs = people.response_inputs(who, rows["cost"].to_numpy(float),
                                    rows["cost_unweighted"].to_numpy(float),
                                    rows["sparsity"].to_numpy(float),
                                    rows["proximity"].to_numpy(float),
                                    rows["blocked"].to_numpy(bool))
    u = np.empty((len(rows), 2))
    for p in policies:
        mine = np.flatnonzero(rows["policy"].to_numpy() == p)
        u[mine] = entity_uniforms(seed, f"study-rating:{p}", rows["applicant_id"].to_numpy()[mine],
                                  2)
    for j in range(study.random_others):
        mine = np.flatnonzero((rows["policy"].to_numpy() == RANDOM_POLICY)
                              & (rows.get("item_offset", pd.Series(-1, rows.index)) == j))
        u[mine] = entity_uniforms(seed, f"study-rating:{RANDOM_POLICY}:{j}",
                                  rows["applicant_id"].to_numpy()[mine], 2)
    accept, act = response.ratings(inputs, u)
    table = _table(rows, rows["applicant_id"].to_numpy(), accept, act, policies, group_columns)
    if study.exclude_blocked:
        table = table[table["blocked"] == 0].reset_index(drop=True)
    return table


@dataclass(frozen=True)
class StudyPowerTask(PowerTask):
    """One simulated study of a scenario's power analysis."""

    pool: pd.DataFrame
    policies: tuple[str, ...]
    baseline: str
    response: Any
    power: StudyPowerSpec
    exclude_blocked: bool

    def analysed_table(self) -> tuple[pd.DataFrame, dict]:
        """The simulated table the tests read, and what the part file records beside them
        (nothing for this design)."""
        return simulated_table(self), {}


def simulated_table(task: StudyPowerTask) -> pd.DataFrame:
    """The table of one simulated study (see the module docstring): N applicants drawn from
    the eligible pool (with replacement only where ``power.sample`` says so, or, for plans
    written before that field, where the pool is smaller than N), fresh dispositions and
    rating noise from the study's own stream; the pool's group columns are carried."""
    gen = task.generator("study-power")
    pool = eligible(task.pool, task.policies)
    applicants = np.unique(pool["applicant_id"].to_numpy())
    n = task.n_participants
    replace = task.power.sample == "with_replacement" or n > len(applicants)
    drawn = gen.choice(applicants, size=n, replace=replace)
    z = gen.standard_normal((n, 4))
    by_applicant = {a: idx for a, idx in pool.groupby("applicant_id").indices.items()}
    take = [by_applicant[a] for a in drawn]
    uid = np.repeat(np.arange(n), [len(t) for t in take])
    rows = pool.iloc[np.concatenate(take)].reset_index(drop=True)
    accept, act = task.response.ratings(response_inputs(rows, z[uid]), gen.random((len(rows), 2)))
    groups = [c for c in pool.columns if c not in POOL_COLUMNS]
    table = _table(rows, uid, accept, act, list(task.policies), groups)
    if task.exclude_blocked:
        table = table[table["blocked"] == 0].reset_index(drop=True)
    return table


def simulate_power_study(task: StudyPowerTask) -> dict:
    """Simulates, refits and tests one study (see the module docstring); one part-file row."""
    table = simulated_table(task)
    n = task.n_participants
    spec = task.power
    out = {"n": n, "sim": task.sim, "p_policy": math.nan, "estimate": math.nan,
           "p_smooth": math.nan, "edf": math.nan, "F": math.nan}
    with warnings.catch_warnings():
        # hundreds of refits: per-fit notes (basis size raised, ...) would flood the log
        warnings.simplefilter("ignore")
        out.update(_tests(table, task))
    out["significant_policy"] = int(out["p_policy"] < spec.alpha)
    out["significant_smooth"] = int(out["p_smooth"] < spec.alpha)
    return out


def _tests(table: pd.DataFrame, task: StudyPowerTask) -> dict:
    """p-values of the policy contrast and of the smooth (NaN where a fit is impossible)."""
    spec = task.power
    out = {}
    try:
        res = fit_policy_contrast(table, spec.outcome, baseline=task.baseline)
        if spec.contrast is None:
            out["p_policy"] = res.omnibus_p
        else:
            row = res.table[res.table["policy"] == spec.contrast].iloc[0]
            out["p_policy"], out["estimate"] = float(row["p"]), float(row["estimate"])
    except (ValueError, IndexError, np.linalg.LinAlgError):
        pass  # an impossible fit (e.g. one policy left) counts as not significant
    try:
        model = fit_gamm(table, spec.outcome, spec.distance, group="uid")
        out.update({"p_smooth": float(model.test_.p), "edf": float(model.edf_),
                    "F": float(model.test_.F)})
    except (ValueError, np.linalg.LinAlgError):
        pass
    return out


def power_curve(rows: pd.DataFrame, spec: StudyPowerSpec) -> tuple[pd.DataFrame, dict]:
    """Power per participant count and test, and the smallest N reaching the target.

    Returns:
        The table (``test, n, simulations, failed, fitted, significant, power, lower,
        upper``; power among the fitted studies) and, per test,
        the smallest N whose ``spec.read_from`` value (interval ``lower`` bound or point
        ``estimate``) reaches ``spec.target_power`` (``None`` if none does).
    """
    out = []
    for test in ("policy", "smooth"):
        for n, grp in rows.groupby("n"):
            # a fit that failed (no p-value) is its own count, never "not significant"
            p = grp[f"p_{test}"] if f"p_{test}" in grp else pd.Series(0.0, grp.index)
            fitted = grp[p.notna()]
            x, m = int(fitted[f"significant_{test}"].sum()), len(fitted)
            lo, hi = clopper_pearson(x, m, spec.confidence) if m else (math.nan, math.nan)
            out.append({"test": test, "n": int(n), "simulations": len(grp),
                        "failed": len(grp) - m, "fitted": m, "significant": x,
                        "power": x / m if m else math.nan, "lower": lo, "upper": hi})
    table = pd.DataFrame(out)
    column = "lower" if spec.read_from == "lower" else "power"
    return table, smallest_n(table, spec.target_power, column, by="test")


def write_study_files(scenario: Any, recourse: pd.DataFrame, people: Any, context: Any,
                      policy_names: list[str], out: Any) -> list[str]:
    """Writes a run's ``study_pool.parquet`` and ``study.csv``; returns their names.

    Args:
        scenario: the scenario (with a ``study:`` section).
        recourse: the run's table (every replication x condition x policy).
        people: the people of the study's replication x condition.
        context: that replication's :class:`~simstudy.policies.RecourseContext`.
        policy_names: the scenario's policy names, in order.
        out: the run directory.
    """
    study = scenario.study
    condition = study.condition or scenario.conditions[0].name
    rows = recourse[(recourse["replication"] == study.replication)
                    & (recourse["condition"] == condition)]
    names = context.feature_names
    feature_range = dict(zip(names, np.asarray(context.feature_range, dtype=float), strict=True))
    groups = [c for c in (*context.world.roles.sensitive, *people.groups) if c in rows.columns]
    pool = study_pool(rows, context.world.roles.actionable, feature_range, groups,
                      context.world.roles.categorical)
    write_parquet(pool, out / "study_pool.parquet")
    table = study_table(pool, people, build("response", study_response(scenario)[0]), study,
                        study.study_policies(policy_names), derive_seed(people.seed, "study"),
                        groups, context)
    write_csv(table, out / "study.csv")
    return ["study_pool.parquet", "study.csv"]
