"""The causal oracle: exact grid search with the true structural causal model.

Following the individual-actionability study (2026, Appendix C.2.3) and CARMA (2024): for each
person, each individually actionable feature ``k`` takes one of the values of its grid

    ``around_x_clipped`` (default): ``clip(linspace(2 min_k - x_k, 2 max_k - x_k, 25), min_k,
    max_k)`` (duplicates removed), or
    ``span``: ``linspace(min_k, max_k, 25)``, the same for everyone, or
    ``around_x``: CARMA's grid, ``linspace(2 min_k - x_k, 2 max_k - x_k, 25)`` unclipped,

or "no action"; every combination is an action ``do(X_I := θ_I)``. Why the default is the
first reading is argued in :func:`oracle_grid`. The oracle returns the
cheapest action (individually weighted cost, see :func:`simstudy.metrics.weighted_cost`; the
weight placement comes with the people's profiles) whose counterfactual
the decision model approves and, unless switched off, is plausible
(``log p(x_cf) >= log p(x)``). Ties go to the first action in enumeration order
(``itertools.product`` over features in the world's order, "no action" first, then the grid in
ascending order), so the result equals a one-by-one enumeration exactly.

Speed comes from visiting candidates in increasing cost and stopping at the first feasible one:
people are grouped by their set of actionable features, and candidates are evaluated in cost
tiers (the cheapest 256, then up to 4096, 65536, all) for all unresolved people of a chunk
together. Costs are separable sums over features, so a tier's threshold and its candidates come
from pruned partial sums without forming every combination's cost (up to 26^4 per person with
four actionable features); only the last tier forms them all, for the few people still without
an action. Memory is bounded by blocks of people.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

import numpy as np
import torch

from ..core.progress import progress as show_progress
from ..metrics import Recourse, cost_terms, finish_cost, normalized_change, weighted_cost
from ..primitives.profiles import ActionabilityProfiles
from .base import RecourseContext, RecoursePolicy
from .params import OracleParams

__all__ = ["CausalOracle", "oracle_grid", "enumerate_one_by_one", "within_limits",
           "on_levels"]

_TIERS = (256, 4096, 65536)


def oracle_grid(
    x: np.ndarray, lower: np.ndarray, upper: np.ndarray, n_values: int = 25,
    grid: Literal["around_x_clipped", "span", "around_x"] = "around_x_clipped",
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate values for each person and feature.

    ``around_x_clipped``: ``clip(linspace(x - 2 (x - min), x + 2 (max - x), n), min, max)``;
    ``span``: ``linspace(min, max, n)``; ``around_x``: CARMA's public grid, the first without
    clipping (values may leave the training range).

    Why ``around_x_clipped`` is the default: the study's appendix (C.2.3) says it creates the
    bins "around" the factual feature value "while ensuring the feature value lies within the
    feasible range (minimum and maximum from the training dataset)". Its oracle is CARMA's
    (``run_brute_force_oracle.py``), whose grid is the unclipped
    ``linspace(x - 2 (x - min), x + 2 (max - x), bins)``, placed relative to each factual, with
    repeated values removed; keeping that placement and bringing the values into the range, as
    the appendix adds, is clipping, whose repeats CARMA's code already drops. A grid spanning
    ``[min, max]`` the same way for everyone is not placed around the factual, which the
    appendix states. The ``span`` reading stays as a named option; both are measured in the
    README ("compare with").

    Args:
        x: ``(n, K)`` factual values of the features searched.
        lower, upper: ``(K,)`` feasible range (training minimum and maximum).
        n_values: grid size per feature.
        grid: ``around_x_clipped``, ``span`` or ``around_x`` (above).

    Returns:
        ``values`` ``(n, K, n_values)`` ascending, and ``usable`` of the same shape, false for
        values repeated after clipping.

    References:
        Individual-actionability study (2026), App. C.2.3; CARMA's public code
        (https://github.com/ayanmaj92/carma-recourse, ``run_brute_force_oracle.py``).

    Example:
        >>> values, usable = oracle_grid(np.array([[2.0]]), np.array([0.0]), np.array([10.0]), 5)
        >>> values[0, 0].tolist(), usable[0, 0].tolist()
        ([0.0, 3.0, 8.0, 10.0, 10.0], [True, True, True, True, False])
        >>> oracle_grid(np.array([[2.0]]), np.array([0.0]), np.array([10.0]), 5, "span")[0][0, 0]
        array([ 0. ,  2.5,  5. ,  7.5, 10. ])
    """
    steps = np.linspace(0.0, 1.0, n_values)
    if grid in ("around_x_clipped", "around_x"):
        start, stop = 2 * lower - x, 2 * upper - x
    elif grid == "span":
        start, stop = np.broadcast_to(lower, x.shape), np.broadcast_to(upper, x.shape)
    else:
        raise ValueError(f"unknown oracle grid {grid!r}")
    values = start[..., None] + (stop - start)[..., None] * steps
    if grid != "around_x":
        values = np.clip(values, lower[None, :, None], upper[None, :, None])
    usable = np.ones(values.shape, dtype=bool)
    usable[..., 1:] = values[..., 1:] != values[..., :-1]
    return values, usable


def on_levels(grid: np.ndarray, usable: np.ndarray, x: np.ndarray, features, levels
              ) -> tuple[np.ndarray, np.ndarray]:
    """The grid of each feature with levels made of its codes (ascending), the factual's own
    code unusable; other features unchanged.

    A search over levels tries each code: when a feature's codes fit in the grid, its options
    are every code inside the span of the person's grid (for the default grid, the training
    range); with more codes than grid values, each grid value is snapped to its nearest code
    (repeats unusable).
    """
    grid, usable = grid.copy(), usable.copy()
    n, _, n_values = grid.shape
    for k, feature in enumerate(features):
        codes = np.asarray(levels.get(feature, ()), dtype=np.float64)
        if not len(codes):
            continue
        if len(codes) <= n_values:
            lo, hi = grid[:, k].min(axis=1), grid[:, k].max(axis=1)
            pad = n_values - len(codes)
            values = np.concatenate([codes, np.full(pad, codes[-1])])
            inside = (codes[None, :] >= lo[:, None]) & (codes[None, :] <= hi[:, None])
            grid[:, k] = values[None, :]
            usable[:, k] = np.concatenate([inside, np.zeros((n, pad), bool)], axis=1)
            usable[:, k] &= grid[:, k] != x[:, k, None]
            continue
        # nearest code, the lower one on a tie (codes ascending)
        gap = np.abs(grid[:, k, :, None] - codes)
        grid[:, k] = codes[gap.argmin(axis=-1)]
        usable[:, k, 0] = True
        usable[:, k, 1:] = grid[:, k, 1:] != grid[:, k, :-1]
        usable[:, k] &= grid[:, k] != x[:, k, None]
    return grid, usable


def within_limits(grid: np.ndarray, x: np.ndarray, profiles: ActionabilityProfiles,
                  scale: np.ndarray) -> np.ndarray:
    """``(n, K, n_values)`` bool: the grid value is a change the person allows (their
    direction and bound, :class:`~simstudy.people.change_limits.ChangeLimits`; all true without)."""
    if profiles.limits is None:
        return np.ones(grid.shape, dtype=bool)
    lo, hi = profiles.limits.interval(scale)
    change = grid - x[..., None]
    return (change >= lo[..., None]) & (change <= hi[..., None])


class CausalOracle(RecoursePolicy):
    """Exact individualized causal recourse by grid search with the true SCM.

    Args:
        n_values: grid values per feature (25 as published).
        grid: grid placement, ``around_x_clipped`` (default), ``span`` or ``around_x``
            (CARMA's unclipped grid), see :func:`oracle_grid`.
        plausibility: require ``log p(x_cf) >= log p(x)`` (the published hard constraint).
        chunk_size: people evaluated together (bounds memory: about
            ``chunk_size * (distinct values + 1) ** K`` candidate costs at once).
        progress: show a progress bar over people.

    Takes :class:`~simstudy.policies.params.OracleParams` (or its fields as keywords).

    References:
        Individual-actionability study (2026), App. C.2.3; Karimi et al. (NeurIPS 2020,
        https://arxiv.org/abs/2006.06831); CARMA (Majumdar & Valera, FAccT 2024).

    Example:
        >>> from simstudy.primitives.profiles import ActionabilityProfiles as Profiles
        >>> from simstudy.world import DecisionConfig, LoanWorldSpec, decision
        >>> world, data, _ = LoanWorldSpec(n_samples=400).build(seed=0)
        >>> model = decision.train_decision_model(data, DecisionConfig(epochs=5))
        >>> ids = np.flatnonzero(~model.approves(data.x_test).numpy())[:3]
        >>> profiles = Profiles(world.roles.actionable, np.ones((3, 4), int), 1, np.ones((3, 4)))
        >>> oracle = CausalOracle(n_values=10).fit(RecourseContext(world, model, data))
        >>> oracle.recommend(data.x_test.numpy()[ids], profiles, ids).found.tolist()
        [False, True, True]
    """

    kind = "oracle"
    Params = OracleParams

    def __init__(self, params: OracleParams | None = None, /, *, progress: bool = False,
                 **values: Any) -> None:
        super().__init__(params, **values)
        self.progress = progress

    def fit(self, context: RecourseContext) -> CausalOracle:
        self.context_ = context
        return self

    # -- feasibility of a batch of candidate actions --------------------------------------
    def _feasible(self, u: torch.Tensor, logp: np.ndarray, intervened: torch.Tensor,
                  values: torch.Tensor, person: torch.Tensor | None = None) -> np.ndarray:
        """Approved (and plausible) for each candidate; ``u`` is the factual's noise (one row
        per candidate, or per person with ``person`` the row of each candidate) and ``logp``
        the factual's log-density of each candidate."""
        world, model = self.context_.world, self.context_.model
        with torch.no_grad():
            ok = np.ones(len(intervened), dtype=bool)
            if hasattr(world, "intervene_with_log_prob"):
                # the world computes what depends on the person alone once per person
                x_cf, lp_cf = world.intervene_with_log_prob(u, intervened, values,
                                                            log_prob=self.params.plausibility,
                                                            person=person)
            else:
                if person is not None:
                    u = u.index_select(0, person)
                x_cf = world.counterfactual(world.predict(u), intervened, values)
                lp_cf = world.log_prob(x_cf) if self.params.plausibility else None
            if self.params.plausibility:
                # The density is cheaper than the classifier and rules out most candidates.
                ok = lp_cf.numpy() >= logp
            rows = np.flatnonzero(ok)
            if len(rows):
                ok[rows] = (model(x_cf[torch.from_numpy(rows)]) >= 0).numpy()
        return ok

    def recommend(self, x: np.ndarray, profiles: ActionabilityProfiles, ids: np.ndarray,
                  seed: int = 0, feedback=None) -> Recourse:
        x = np.asarray(x, dtype=np.float64)
        n, d = x.shape
        names = self.context_.feature_names
        feat_idx = np.array([names.index(f) for f in profiles.features])
        lower = self.context_.lower[feat_idx]
        upper = self.context_.upper[feat_idx]
        scale = self.context_.feature_range[feat_idx]
        categorical = self.context_.world.roles.categorical_mask(profiles.features)
        grid, usable = oracle_grid(x[:, feat_idx], lower, upper, self.params.n_values,
                                   self.params.grid)
        grid, usable = on_levels(grid, usable, x[:, feat_idx], profiles.features,
                                 self.context_.world.roles.levels)
        usable &= within_limits(grid, x[:, feat_idx], profiles, scale)

        intervened = np.zeros((n, d), dtype=bool)
        values = np.full((n, d), np.nan)
        found = np.zeros(n, dtype=bool)
        evaluated = np.zeros(n, dtype=np.int64)

        actionable = profiles.actionable
        signatures = actionable @ (1 << np.arange(actionable.shape[1]))
        groups = [(sig, np.flatnonzero(signatures == sig)) for sig in np.unique(signatures)]
        bar = show_progress(n, desc="oracle", unit="person", leave=False, enabled=self.progress)
        for sig, members in groups:
            cols = [k for k in range(actionable.shape[1]) if sig >> k & 1]
            if not cols:
                bar.update(len(members))
                continue
            for start in range(0, len(members), self.params.chunk_size):
                rows = members[start:start + self.params.chunk_size]
                res = self._solve_chunk(x[rows], cols, feat_idx, grid[rows], usable[rows],
                                        profiles.weights[rows], scale,
                                        profiles.cost_placement, categorical)
                intervened[rows], values[rows], found[rows], evaluated[rows] = res
                bar.update(len(rows))
        bar.close()
        return Recourse(intervened, values, found, extras={"candidates_evaluated": evaluated})

    def _solve_chunk(self, x, cols, feat_idx, grid, usable, weights, scale, placement,
                     categorical=None):
        """The cheapest feasible action of each person of a chunk (who share the actionable
        features ``cols``): candidates in increasing cost tiers, each tier found from pruned
        partial sums, until every person has one or none is left."""
        p = len(x)
        opt_values, terms = _option_terms(x, cols, feat_idx, grid, usable, weights, scale,
                                          placement, categorical)
        n_cand = opt_values.shape[2] ** len(cols)

        def finish(total):
            return finish_cost(total, len(feat_idx), placement)

        with torch.no_grad():
            # column-major copies: candidates are gathered and evaluated feature by feature
            u_cols = self.context_.world.abduct(torch.from_numpy(x)).T.contiguous()
            logp_all = self.context_.world.log_prob(torch.from_numpy(x)).numpy()
        d = x.shape[1]
        best = np.full(p, -1, dtype=np.int64)
        evaluated = np.zeros(p, dtype=np.int64)
        lower_bound = np.full(p, -np.inf)
        for size in [t for t in _TIERS if t < n_cand] + [n_cand]:
            open_rows = np.flatnonzero(best < 0)
            if not len(open_rows):
                break
            sub = [t[open_rows] for t in terms]
            upper_bound = (_kth_smallest_cost(sub, size, finish) if size < n_cand
                           else np.full(len(open_rows), np.inf))
            r_loc, cand, cost = _candidates_between(sub, lower_bound[open_rows], upper_bound,
                                                    size, finish)
            evaluated[open_rows] += np.bincount(r_loc, minlength=len(open_rows))
            person = open_rows[r_loc]
            feasible = np.zeros(len(person), dtype=bool)
            for b in range(0, len(person), _EVAL_BATCH):
                sl = slice(b, b + _EVAL_BATCH)
                inter, vals = _decode(person[sl], cand[sl], cols, feat_idx, opt_values, d)
                # transposed views of column-major arrays: the world reads whole columns
                feasible[sl] = self._feasible(u_cols.T, logp_all[person[sl]],
                                              torch.from_numpy(inter).T,
                                              torch.from_numpy(vals).T,
                                              torch.from_numpy(person[sl]))
            _keep_cheapest(best, person[feasible], cand[feasible], cost[feasible])
            lower_bound[open_rows] = upper_bound

        rows = np.flatnonzero(best >= 0)
        inter, vals = _decode(rows, best[rows], cols, feat_idx, opt_values, d)
        intervened = np.zeros(x.shape, dtype=bool)
        values = np.full(x.shape, np.nan)
        intervened[rows] = inter.T
        values[rows] = np.where(inter, vals, np.nan).T
        return intervened, values, best >= 0, evaluated


#: Candidates sent to the world and the classifier at once.
_EVAL_BATCH = 262144
#: Numbers held at once per block of people while forming partial sums (bounds memory).
_BLOCK_NUMBERS = 1 << 22


def _option_terms(x, cols, feat_idx, grid, usable, weights, scale, placement,
                  categorical=None):
    """Each person's options per actionable feature and their cost terms.

    Option 0 is "no action" (term 0); then the person's distinct grid values in ascending
    order, padded to the chunk's largest count with unusable options (term ``inf``) at the
    end, so real candidates keep their enumeration order. Returns ``opt_values``
    ``(p, m, n_opt)`` and one ``(p, n_opt)`` array of terms per feature (see
    :func:`~simstudy.metrics.cost_terms`; a change counts in the units of
    :func:`~simstudy.metrics.normalized_change`, one unit for a categorical feature).
    """
    p, m = len(x), len(cols)
    sub_usable = usable[:, cols]
    n_opt = int(sub_usable.sum(axis=2).max()) + 1
    order = np.argsort(~sub_usable, axis=2, kind="stable")[..., : n_opt - 1]
    packed = np.take_along_axis(grid[:, cols], order, axis=2)
    packed_ok = np.take_along_axis(sub_usable, order, axis=2)
    opt_values = np.concatenate([np.full((p, m, 1), np.nan), packed], axis=2)
    opt_ok = np.concatenate([np.ones((p, m, 1), bool), packed_ok], axis=2)
    terms = []
    for j, k in enumerate(cols):
        delta = normalized_change(opt_values[:, j] - x[:, feat_idx[k], None], scale[k],
                                  None if categorical is None else categorical[k])
        term = cost_terms(delta, weights[:, k, None], placement)
        term[:, 0] = 0.0
        terms.append(np.where(opt_ok[:, j], term, np.inf))
    return opt_values, terms


def _per_row(n_opt: int, m: int, k: int) -> int:
    """Numbers held per person while keeping the ``k + 1`` smallest of ``m`` features' sums."""
    return min(k + 1, n_opt ** (m - 1)) * n_opt


def _blocks(n_rows: int, per_row: int):
    """Slices of at most ``_BLOCK_NUMBERS // per_row`` people (at least one)."""
    step = max(1, _BLOCK_NUMBERS // max(per_row, 1))
    return [slice(b, b + step) for b in range(0, n_rows, step)]


def _kth_smallest_cost(terms: list[np.ndarray], k: int, finish) -> np.ndarray:
    """Per person, the ``k``-th smallest cost of an action ("no action" excluded).

    A combination's cost is ``finish`` of the sum of its terms, summed in feature order (as
    the full enumeration sums them, so the numbers are bit-identical). Terms are
    non-negative, so a sum never falls as features are added, and the ``k + 1`` smallest full
    sums extend the ``k + 1`` smallest partial sums: keeping only those after each feature
    finds the threshold without forming every combination. "No action" sums to 0, the
    smallest value, and is dropped by taking the ``k + 1``-th smallest; ``finish`` is
    monotone, so it can be applied to the selected sum.
    """
    n_opt = terms[0].shape[1]
    out = np.empty(len(terms[0]))
    for rows in _blocks(len(out), _per_row(n_opt, len(terms), k)):
        sums = terms[0][rows]
        for term in terms[1:]:
            sums = (sums[:, :, None] + term[rows, None, :]).reshape(len(sums), -1)
            if sums.shape[1] > k + 1:
                sums = np.partition(sums, k, axis=1)[:, : k + 1]
        out[rows] = np.partition(sums, k, axis=1)[:, k] if sums.shape[1] > k else np.inf
    return finish(out)


def _candidates_between(terms: list[np.ndarray], lower: np.ndarray, upper: np.ndarray,
                        size: int, finish) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every action with a finite cost in ``(lower, upper]`` (per person), "no action" aside;
    ``upper`` is the ``size``-th smallest cost (it sets the blocks' size).

    Returns ``(person, index, cost)`` ordered by person, then enumeration index (the flat
    index over every feature's options, the first feature most significant). A partial sum
    whose cost already exceeds ``upper`` is pruned as features are added (exact: sums never
    fall); every surviving partial sum is itself a cheap action (the remaining features
    taking "no action"), so the work stays proportional to the tier.
    """
    n_opt = terms[0].shape[1]
    found = []
    for rows in _blocks(len(lower), _per_row(n_opt, len(terms), size)):
        person, index = np.nonzero(finish(terms[0][rows]) <= upper[rows, None])
        person += rows.start
        partial = terms[0][person, index]
        for term in terms[1:]:
            sums = partial[:, None] + term[person]
            r, o = np.nonzero(finish(sums) <= upper[person][:, None])
            person, index, partial = person[r], index[r] * n_opt + o, sums[r, o]
        cost = finish(partial)
        keep = (index != 0) & np.isfinite(cost) & (cost > lower[person])
        found.append((person[keep], index[keep], cost[keep]))
    return tuple(np.concatenate(parts) for parts in zip(*found, strict=True))


def _decode(person, cand, cols, feat_idx, opt_values, d):
    """The actions with flat indexes ``cand`` of people ``person``, column-major: which
    features are intervened on and their values, both ``(d, len(person))`` (a value where
    nothing is intervened on is 0: a world ignores it)."""
    n_opt = opt_values.shape[2]
    inter = np.zeros((d, len(person)), dtype=bool)
    vals = np.zeros((d, len(person)))
    # int32 division is markedly faster, and every flat index fits (at most 26 ** 4 here)
    rest = cand.astype(np.int32) if n_opt ** len(cols) < 2**31 else cand
    for j in reversed(range(len(cols))):
        rest, slot = np.divmod(rest, n_opt)
        k = feat_idx[cols[j]]
        act = slot > 0
        inter[k] = act
        # option 0 ("no action") is not an intervention
        chosen = opt_values[:, j].ravel()[person * n_opt + slot]
        vals[k] = np.where(act, chosen, 0.0)
    return inter, vals


def _keep_cheapest(best, person, cand, cost) -> None:
    """Records each person's cheapest feasible action (ties: the first in enumeration order)."""
    if len(person):
        order = np.lexsort((cand, cost, person))
        person, cand, cost = person[order], cand[order], cost[order]
        first = np.ones(len(person), dtype=bool)
        first[1:] = person[1:] != person[:-1]
        best[person[first]] = cand[first]


def enumerate_one_by_one(
    oracle: CausalOracle, x: np.ndarray, profiles: ActionabilityProfiles
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Reference solver: evaluates every action of every person one at a time.

    Slow by design; used to check that :class:`CausalOracle` is exact and to measure its
    speed-up. Returns ``(intervened, values, found, cost)`` like the oracle.
    """
    ctx = oracle.context_
    names = ctx.feature_names
    n, d = x.shape
    feat_idx = np.array([names.index(f) for f in profiles.features])
    grid, usable = oracle_grid(x[:, feat_idx], ctx.lower[feat_idx], ctx.upper[feat_idx],
                               oracle.params.n_values, oracle.params.grid)
    scale = ctx.feature_range[feat_idx]
    categorical = ctx.world.roles.categorical_mask(profiles.features)
    grid, usable = on_levels(grid, usable, x[:, feat_idx], profiles.features,
                             ctx.world.roles.levels)
    usable &= within_limits(grid, x[:, feat_idx], profiles, scale)
    intervened = np.zeros((n, d), bool)
    values = np.full((n, d), np.nan)
    found = np.zeros(n, bool)
    best_costs = np.full(n, np.nan)
    for i in range(n):
        cols = np.flatnonzero(profiles.actionable[i])
        options = [[None] + [v for v, ok in zip(grid[i, k], usable[i, k], strict=True) if ok]
                   for k in cols]
        best_cost, best_action = np.inf, None
        with torch.no_grad():
            ui = ctx.world.abduct(torch.from_numpy(x[i:i + 1]))
            lpi = ctx.world.log_prob(torch.from_numpy(x[i:i + 1])).numpy()
        for combo in itertools.product(*options):
            if all(v is None for v in combo):
                continue
            inter = np.zeros((1, d), bool)
            vals = x[i:i + 1].copy()
            delta = np.zeros((1, len(profiles.features)))
            for k, v in zip(cols, combo, strict=True):
                if v is not None:
                    inter[0, feat_idx[k]] = True
                    vals[0, feat_idx[k]] = v
                    delta[0, k] = normalized_change(v - x[i, feat_idx[k]], scale[k],
                                                    categorical[k])
            w = np.where(profiles.actionable[i:i + 1], profiles.weights[i:i + 1], 1.0)
            c = float(weighted_cost(delta, w, profiles.cost_placement)[0])
            feasible = oracle._feasible(ui, lpi, torch.from_numpy(inter),
                                        torch.from_numpy(vals))[0]
            if feasible and c < best_cost:
                best_cost, best_action = c, (inter[0], vals[0])
        if best_action is not None:
            found[i] = True
            best_costs[i] = best_cost
            intervened[i] = best_action[0]
            values[i] = np.where(best_action[0], best_action[1], np.nan)
    return intervened, values, found, best_costs

