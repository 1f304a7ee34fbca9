"""The causal oracle: exact grid search with the true structural causal model.

Following the individual-actionability study (2026, Appendix C.2.3) and CARMA (2024): for each
person, each individually actionable feature ``k`` takes one of the values

    ``clip(linspace(2 min_k - x_k, 2 max_k - x_k, 25), min_k, max_k)`` (duplicates removed)

or "no action"; every combination is an action ``do(X_I := θ_I)``. The oracle returns the
cheapest action (individually weighted cost, see :func:`simstudy.metrics.weighted_cost`; the
weight placement comes with the people's profiles) whose counterfactual
the decision model approves and, unless switched off, is plausible
(``log p(x_cf) >= log p(x)``). Ties go to the first action in enumeration order
(``itertools.product`` over features in the world's order, "no action" first, then the grid in
ascending order), so the result equals a one-by-one enumeration exactly.

Speed comes from visiting candidates in increasing cost and stopping at the first feasible one:
people are grouped by their set of actionable features, every candidate's cost is computed at
once (costs are separable, so this is a broadcast sum), and candidates are then evaluated in
cost tiers (the cheapest 256, then up to 4096, 65536, all) for all unresolved people of a chunk
together. Memory is bounded by the chunk size.
"""

from __future__ import annotations

import itertools
from typing import Literal

import numpy as np
import torch

from ..metrics import Recourse, cost_terms, finish_cost, weighted_cost
from ..population import ActionabilityProfiles
from ..progress import progress as show_progress
from .base import RecourseContext, RecoursePolicy
from .params import OracleParams
from .specs import OracleSpec

__all__ = ["CausalOracle", "OracleSpec", "oracle_grid", "enumerate_one_by_one"]

_TIERS = (256, 4096, 65536)


def oracle_grid(
    x: np.ndarray, lower: np.ndarray, upper: np.ndarray, n_values: int = 25,
    span: Literal["published", "range"] = "published",
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate values for each person and feature.

    Args:
        x: ``(n, K)`` factual values of the features searched.
        lower, upper: ``(K,)`` feasible range (training minimum and maximum).
        n_values: grid size per feature.
        span: ``published`` places ``linspace(2 min - x, 2 max - x)`` around the factual and
            clips it to the range; ``range`` spans ``[min, max]`` evenly for everyone.

    Returns:
        ``values`` ``(n, K, n_values)`` ascending, and ``usable`` of the same shape, false for
        values repeated after clipping.
    """
    steps = np.linspace(0.0, 1.0, n_values)
    if span == "published":
        start, stop = 2 * lower - x, 2 * upper - x
    elif span == "range":
        start, stop = np.broadcast_to(lower, x.shape), np.broadcast_to(upper, x.shape)
    else:
        raise ValueError(f"unknown grid span {span!r}")
    values = start[..., None] + (stop - start)[..., None] * steps
    values = np.clip(values, lower[None, :, None], upper[None, :, None])
    usable = np.ones(values.shape, dtype=bool)
    usable[..., 1:] = values[..., 1:] != values[..., :-1]
    return values, usable


class CausalOracle(OracleParams, RecoursePolicy):
    """Exact individualized causal recourse by grid search with the true SCM.

    Args:
        n_values: grid values per feature (25 as published).
        span: grid placement, see :func:`oracle_grid`.
        plausibility: require ``log p(x_cf) >= log p(x)`` (the published hard constraint).
        chunk_size: people evaluated together (bounds memory: about
            ``chunk_size * (distinct values + 1) ** K`` candidate costs at once).
        progress: show a progress bar over people.

    The constructor is :class:`~simstudy.policies.params.OracleParams`'.
    """

    kind = "oracle"

    def fit(self, context: RecourseContext) -> CausalOracle:
        self.context_ = context
        return self

    # -- feasibility of a batch of candidate actions --------------------------------------
    def _feasible(self, u: torch.Tensor, logp: np.ndarray, intervened: torch.Tensor,
                  values: torch.Tensor) -> np.ndarray:
        """Approved (and plausible) for each candidate; ``u``, ``logp`` are the factual's."""
        world, model = self.context_.world, self.context_.model
        with torch.no_grad():
            ok = np.ones(len(u), dtype=bool)
            if hasattr(world, "intervene_with_log_prob"):
                x_cf, lp_cf = world.intervene_with_log_prob(u, intervened, values,
                                                            log_prob=self.plausibility)
            else:
                x_cf = world.counterfactual(world.predict(u), intervened, values)
                lp_cf = world.log_prob(x_cf) if self.plausibility else None
            if self.plausibility:
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
        grid, usable = oracle_grid(x[:, feat_idx], lower, upper, self.n_values, self.span)

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
            for start in range(0, len(members), self.chunk_size):
                rows = members[start:start + self.chunk_size]
                res = self._solve_chunk(x[rows], cols, feat_idx, grid[rows], usable[rows],
                                        profiles.weights[rows], scale,
                                        profiles.cost_placement)
                intervened[rows], values[rows], found[rows], evaluated[rows] = res
                bar.update(len(rows))
        bar.close()
        return Recourse(intervened, values, found, extras={"candidates_evaluated": evaluated})

    def _solve_chunk(self, x, cols, feat_idx, grid, usable, weights, scale, placement):
        p, d = x.shape
        m = len(cols)
        # Option 0 is "no action"; then each person's distinct grid values in ascending order,
        # padded to the chunk's largest count. Padding sits at the end of each feature's
        # options, so real candidates keep their enumeration order.
        sub_usable = usable[:, cols]
        n_opt = int(sub_usable.sum(axis=2).max()) + 1
        order = np.argsort(~sub_usable, axis=2, kind="stable")[..., : n_opt - 1]
        packed = np.take_along_axis(grid[:, cols], order, axis=2)
        packed_ok = np.take_along_axis(sub_usable, order, axis=2)
        opt_values = np.concatenate([np.full((p, m, 1), np.nan), packed], axis=2)
        opt_ok = np.concatenate([np.ones((p, m, 1), bool), packed_ok], axis=2)
        total = None
        for j, k in enumerate(cols):
            delta = (opt_values[:, j] - x[:, feat_idx[k], None]) / scale[k]
            term = cost_terms(delta, weights[:, k, None], placement)
            term[:, 0] = 0.0
            term = np.where(opt_ok[:, j], term, np.inf)
            shape = (p,) + (1,) * j + (n_opt,) + (1,) * (m - j - 1)
            term = term.reshape(shape)
            total = term if total is None else total + term
        cost = finish_cost(total.reshape(p, -1), len(feat_idx), placement)
        cost[:, 0] = np.inf  # doing nothing is not an action
        n_cand = cost.shape[1]

        best = np.full(p, -1, dtype=np.int64)
        evaluated = np.zeros(p, dtype=np.int64)
        done = np.zeros(p, dtype=bool)
        lower_bound = np.full(p, -np.inf)
        tiers = [t for t in _TIERS if t < n_cand] + [n_cand]
        with torch.no_grad():
            u_all = self.context_.world.abduct(torch.from_numpy(x))
            logp_all = self.context_.world.log_prob(torch.from_numpy(x)).numpy()
        for size in tiers:
            open_rows = np.flatnonzero(~done)
            if not len(open_rows):
                break
            sub = cost[open_rows]
            if size < n_cand:
                upper_bound = np.partition(sub, size - 1, axis=1)[:, size - 1]
            else:
                upper_bound = np.full(len(open_rows), np.inf)
            in_tier = (sub > lower_bound[open_rows, None]) & (sub <= upper_bound[:, None])
            in_tier &= np.isfinite(sub)
            r_loc, cand = np.nonzero(in_tier)
            person = open_rows[r_loc]
            evaluated[open_rows] += in_tier.sum(axis=1)
            if len(person):
                slots = np.unravel_index(cand, (n_opt,) * m)
                inter = np.zeros((len(person), d), dtype=bool)
                vals = x[person].copy()
                for j, k in enumerate(cols):
                    s = slots[j]
                    act = s > 0
                    inter[:, feat_idx[k]] = act
                    vals[act, feat_idx[k]] = opt_values[person[act], j, s[act]]
                feasible = np.zeros(len(person), dtype=bool)
                for b in range(0, len(person), 262144):
                    sl = slice(b, b + 262144)
                    rows_sl = person[sl]
                    feasible[sl] = self._feasible(u_all[torch.from_numpy(rows_sl)],
                                                  logp_all[rows_sl], torch.from_numpy(inter[sl]),
                                                  torch.from_numpy(vals[sl]))
                fp, fc = person[feasible], cand[feasible]
                if len(fp):
                    # lexicographic minimum of (cost, enumeration index) per person
                    order = np.lexsort((fc, cost[fp, fc], fp))
                    fp, fc = fp[order], fc[order]
                    first = np.ones(len(fp), dtype=bool)
                    first[1:] = fp[1:] != fp[:-1]
                    best[fp[first]] = fc[first]
                    done[fp[first]] = True
            lower_bound[open_rows] = upper_bound

        intervened = np.zeros((p, d), dtype=bool)
        values = np.full((p, d), np.nan)
        rows = np.flatnonzero(best >= 0)
        if len(rows):
            slots = np.unravel_index(best[rows], (n_opt,) * m)
            for j, k in enumerate(cols):
                s = slots[j]
                act = s > 0
                intervened[rows[act], feat_idx[k]] = True
                values[rows[act], feat_idx[k]] = opt_values[rows[act], j, s[act]]
        return intervened, values, best >= 0, evaluated


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
                               oracle.n_values, oracle.span)
    scale = ctx.feature_range[feat_idx]
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
                    delta[0, k] = (v - x[i, feat_idx[k]]) / scale[k]
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

