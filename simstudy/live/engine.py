"""Policies, profiles and recourses for one live participant, as the simulated study has them.

:class:`LiveEngine` prepares the study's replication exactly as a run does (world sample,
decision model and trained policies from the content-hash cache), then serves one participant
at a time: their reported profile ``x`` and their stated actionability become a one-person
:class:`~simstudy.primitives.profiles.ActionabilityProfiles` (weights from the condition's cost
profile),
the condition's policy recommends from them with the participant's index as person id, and the
recourse is measured by the simulator's code (:func:`~simstudy.metrics.measure_recourse`,
:func:`~simstudy.metrics.published_proximity`). Each participant also rates the study's
``random_others`` random recourses (:func:`~simstudy.study.from_scenario.random_recourse`).

A policy that asks questions (HARE) answers through the participant's recorded answers and
stops at the first question not answered yet (:mod:`~simstudy.live.questions`: a replay,
or a search kept running between pages when it stands at that question). Every draw is
keyed by (seed, purpose, participant index), so replaying the answers retraces the same search
to the next question: a running search is only a cache, and a restart loses nothing.

Item identity follows the simulated study: item ``i`` is the ``i``-th study policy and
``len(policies) + j`` the ``j``-th random recourse.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..core.documents import DocumentError, DocumentProblem
from ..core.rng import derive_seed, entity_uniforms
from ..metrics import Recourse, measure_recourse, published_proximity
from ..people import People
from ..policies.hare import HARE
from ..primitives.profiles import ActionabilityProfiles
from ..primitives.space import ScaledSpace
from ..run.scenario import load_scenario, people_specs, policy_name
from ..run.units import prepare_replication
from ..study.from_scenario import RANDOM_POLICY, random_recourse
from ..world.decision import ModelCache
from ..world.presentation import FeatureView, default_view
from .questions import NeedAnswer, QuestionSessions, ReplayFeedback
from .slots import SLOTS, SlottedBase, SlottedHARE

__all__ = ["FeatureField", "world_views", "NeedAnswer", "ReplayFeedback", "ShownRecourse",
           "ComputePool", "LiveEngine", "load_study"]


def load_study(path: str | Path) -> tuple[Any, dict]:
    """The scenario and populations of a study document; refuses one without ``study.live``."""
    scenario, populations = load_scenario(path)
    if scenario.study is None or scenario.study.live is None:
        raise DocumentError([DocumentProblem(str(path), "study.live",
                                             "a live study needs a `study.live:` section")])
    return scenario, populations


@dataclass(frozen=True)
class FeatureField:
    """One profile item of the entry page: the range it accepts in model units (``lower``,
    ``upper``) and as shown (``low``, ``high``), its labels, and how people read it (``view``;
    default: :func:`~simstudy.world.presentation.default_view`).

    Example:
        >>> field = FeatureField("checking", 0.0, 3.0, {0: "none", 3: "over 200"}, True)
        >>> field.upper - field.lower, field.labels[3], field.view.text(3.0)
        (3.0, 'over 200', 'over 200')
    """
    name: str
    lower: float
    upper: float
    labels: dict[int, str]
    actionable: bool
    view: FeatureView | None = None
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.view is None:
            object.__setattr__(self, "view", default_view(self.name, self.lower, self.upper,
                                                          self.labels))
        if self.low is None:
            low, high = self.view.bounds(self.lower, self.upper)
            object.__setattr__(self, "low", low)
            object.__setattr__(self, "high", high)

    @classmethod
    def of(cls, name: str, lower: float, upper: float, labels: dict[int, str],
           actionable: bool, view: FeatureView | None) -> FeatureField:
        """The field of a feature whose training data span ``[lower, upper]``: it accepts the
        part of that range inside the view's declared display range."""
        if view is None:
            view = default_view(name, lower, upper, labels)
        elif labels and not view.levels:
            view = dataclasses.replace(view, levels=dict(labels))
        low, high = view.bounds(lower, upper)
        if view.coded:
            return cls(name, low, high, dict(view.levels), actionable, view, low, high)
        return cls(name, max(lower, view.model(low)), min(upper, view.model(high)),
                   {}, actionable, view, low, high)

    def stated(self, value: float) -> float:
        """The display value a person whose model value is ``value`` enters (at the step)."""
        return self.view.rounded(value)


def world_views(world_spec: Any) -> dict[str, FeatureView]:
    """The presentation the world declares (``presentation()`` of its document entry), by
    feature; empty when it declares none."""
    present = getattr(world_spec, "presentation", None)
    return dict(present()) if callable(present) else {}


@dataclass
class ShownRecourse:
    """A recourse shown on a rating page, measured as the simulated study measures it."""
    item: int
    policy: str
    found: bool
    intervened: np.ndarray
    x_cf: np.ndarray
    sparsity: int
    proximity: float
    cost: float
    cost_unweighted: float
    extras: dict[str, Any] = field(default_factory=dict)


class ComputePool:
    """Recourse steps in separate processes (each with its own prepared engine), so that the
    server's threads answer light pages while a policy computes: the numerical work of small
    tensors holds the interpreter lock, a process does not share it.

    A participant's steps always go to the same process (participant index modulo
    ``workers``), where their questioning policy's search keeps running between pages
    (:mod:`~simstudy.live.questions`); a step sent elsewhere would replay the search from
    the first question.

    Args:
        path: the study document.
        workers: compute processes.
    """
    def __init__(self, path: str | Path, workers: int = 1) -> None:
        context = multiprocessing.get_context("spawn")
        self.workers = workers
        self._pools = [ProcessPoolExecutor(max_workers=1, mp_context=context,
                                           initializer=_init_compute, initargs=(str(path),))
                       for _ in range(workers)]
        # Ctrl-C reaches every process of the terminal's group: the workers start with SIGINT
        # blocked (the mask is inherited across exec), so only the server handles it (it
        # stops, then closes the pool) and no worker prints a traceback of its own
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            # every worker prepares its engine now, not on a participant's first recourse
            ready = [pool.submit(_compute_ready) for pool in self._pools]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for f in ready:
            f.result()

    def submit(self, index: int, *args: Any) -> Future:
        """The step of participant ``index`` (the arguments of
        :meth:`LiveEngine.recourse_step`), computing in their process."""
        return self._pools[index % len(self._pools)].submit(_compute_step, index, *args)

    def submit_prefill(self, worker: int, steps: list[tuple]) -> Future:
        """:meth:`LiveEngine.prefill` of first steps, all of participants whose steps
        ``worker`` computes."""
        return self._pools[worker].submit(_compute_prefill, steps)

    def __call__(self, index: int, *args: Any) -> dict[str, Any]:
        return self.submit(index, *args).result()

    def close(self) -> None:
        for pool in self._pools:
            pool.shutdown(cancel_futures=True)


_WORKER_ENGINE: list[Any] = []


def _init_compute(path: str) -> None:
    parent = os.getppid()

    def _orphaned() -> None:
        # a server killed outright (SIGKILL) cannot stop its workers: they stop themselves
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=_orphaned, daemon=True).start()
    torch.set_num_threads(1)
    _WORKER_ENGINE.append(LiveEngine(path).prepare())


def _compute_ready() -> bool:
    return bool(_WORKER_ENGINE)


def _compute_step(*args: Any) -> dict[str, Any]:
    return _WORKER_ENGINE[0].recourse_step(*args)


def _compute_prefill(steps: list[tuple]) -> int:
    return _WORKER_ENGINE[0].prefill(steps)


class LiveEngine:
    """The study's world, decision model and fitted policies, serving one participant at a time.

    Args:
        path: the study document (a scenario with ``study.live``).
        cache: the model cache (default: the run's default cache folder).
        slots: rows of every batch in which a refining policy's base and HARE's first
            candidates are computed (:mod:`~simstudy.live.slots`).

    Example:
        >>> engine = LiveEngine("simstudy/resources/studies/personalization.yaml")  # doctest: +SKIP
        >>> engine.prepare().conditions                            # doctest: +SKIP
        ['universal-oracle', 'oracle', 'hare']
    """
    def __init__(self, path: str | Path, cache: Any = None, slots: int = SLOTS) -> None:
        self.path = Path(path)
        self.slots = slots
        self.scenario, self.populations = load_study(self.path)
        self.study = self.scenario.study
        self.live = self.study.live

        names = [policy_name(p) for p in self.scenario.policies]
        self.policies = self.study.study_policies(names)
        self.conditions = self.live.live_conditions(self.policies)
        self.population_condition = self.study.condition or self.scenario.conditions[0].name
        self._cache = cache

    # -- preparation ------------------------------------------------------------------------
    def prepare(self) -> LiveEngine:
        """Builds the replication and fits every condition's policy (trained models cached)."""
        cache = self._cache if self._cache is not None else ModelCache()
        self.rep_ = prepare_replication(self.scenario, self.study.replication,
                                        self.scenario.seed, cache, base_dir=self.path.parent)
        # the participants' cost profile is the study population's
        ctx = dataclasses.replace(self.rep_.context, cost=self.populations[
            self.population_condition].cost)
        self.context_ = ctx
        specs = {policy_name(p): p for p in self.scenario.policies}
        self.fitted_ = {name: specs[name].policy().fit(ctx) for name in self.conditions}
        self.sessions_ = QuestionSessions()
        for name, policy in self.fitted_.items():
            if isinstance(policy, HARE):
                # its first candidates batched over waiting participants, as its base
                policy = self.fitted_[name] = SlottedHARE.of(policy, self.slots)
            if getattr(policy, "base_", None) is not None:
                # a refining policy's base: batched over waiting participants without
                # changing anyone's answer, and remembered for replayed pages
                policy.base_ = SlottedBase(policy.base_, self.slots)
        self.policy_seed_ = derive_seed(self.rep_.seed, "policies")
        self.study_seed_ = derive_seed(self.rep_.seed, "study")
        self.live_seed_ = derive_seed(self.rep_.seed, "live")
        population = self.populations[self.population_condition]
        self.cost_profile_ = population.cost
        roles = ctx.world.roles
        lower, upper = ctx.lower, ctx.upper
        views = world_views(self.scenario.world)
        self.features_ = [FeatureField.of(n, float(lower[j]), float(upper[j]),
                                          dict(roles.codebook.get(n, {})), n in roles.actionable,
                                          views.get(n))
                          for j, n in enumerate(roles.names)]
        return self

    @property
    def actionable(self) -> tuple[str, ...]:
        return tuple(self.context_.world.roles.actionable)

    @property
    def levels(self) -> int:
        """Score levels of the elicitation scheme."""
        scheme = self.live.elicitation
        return {"binary": 1, "ranking": len(self.actionable),
                "likert": self.live.likert_levels}[scheme]

    def group_values(self, x: np.ndarray) -> dict[str, int]:
        """The world's sensitive features of a reported profile (the export's group columns)."""
        names = self.context_.feature_names
        return {s: int(round(float(x[names.index(s)])))
                for s in self.context_.world.roles.sensitive if s in names}

    # -- one participant --------------------------------------------------------------------
    def profiles(self, scores: np.ndarray) -> Any:
        """A one-person profile from stated scores ``(K,)`` (0: cannot change)."""
        s = np.asarray(scores, dtype=np.int64)[None, :]
        kind = {"binary": "all", "ranking": "ranking", "likert": "likert"}[self.live.elicitation]
        return ActionabilityProfiles(self.actionable, s, self.levels,
                                     self.cost_profile_.weights(s, self.levels), kind,
                                     self.cost_profile_.placement)

    def approves(self, x: np.ndarray) -> bool | np.ndarray:
        """The decision model approves the profile ``x`` ``(d,)`` (or each row of ``(n, d)``)."""
        rows = np.atleast_2d(np.asarray(x, dtype=np.float64))
        with torch.no_grad():
            out = self.context_.model.approves(torch.as_tensor(rows)).numpy().astype(bool)
        return bool(out[0]) if np.ndim(x) == 1 else out

    def measure(self, x: np.ndarray, intervened: np.ndarray, values: np.ndarray,
                found: bool | np.ndarray, scores: np.ndarray) -> dict[str, Any]:
        """Recourses measured by the simulator's code for one participant's stated profile:
        one plan ``(d,)`` gives plain values, plans ``(m, d)`` (of the profile ``x`` ``(d,)``)
        give arrays."""
        one = np.ndim(intervened) == 1
        acted = np.atleast_2d(np.asarray(intervened, dtype=bool))
        m = len(acted)
        found = np.broadcast_to(np.asarray(found, dtype=bool), (m,))
        acted = acted & found[:, None]
        vals = np.atleast_2d(np.asarray(values, dtype=np.float64))
        xm = np.repeat(np.asarray(x, dtype=np.float64)[None, :], m, axis=0)
        rec = Recourse(acted, vals, found)
        fr = np.asarray(self.context_.feature_range, dtype=float)
        profiles = self.profiles(scores)
        ev = measure_recourse(self.context_.world, xm, rec, ActionabilityProfiles.concat(
            [profiles] * m), fr)
        ok = ev["found"]
        proximity = np.where(ok, published_proximity(
            acted, vals, xm, fr, self.context_.world.roles.categorical_mask()), 0.0)
        out = {"found": ok, "intervened": acted, "x_cf": ev["x_cf"],
               "sparsity": ev["sparsity"].astype(np.int64), "proximity": proximity,
               "cost": ev["cost"], "cost_unweighted": ev["cost_unweighted"]}
        if not one:
            return out
        return {"found": bool(ok[0]), "intervened": acted[0], "x_cf": out["x_cf"][0],
                "sparsity": int(out["sparsity"][0]), "proximity": float(proximity[0]),
                "cost": float(out["cost"][0]), "cost_unweighted": float(out["cost_unweighted"][0])}

    def recourses(self, index: int, condition: str, x: np.ndarray, scores: np.ndarray,
                  answers: list[tuple[str, bool]], feedback: Any = None) -> list[ShownRecourse]:
        """The recourses participant ``index`` rates (the condition's, if found, then the random
        others); raises :class:`NeedAnswer` while the condition's policy has questions
        (``feedback``: answers them instead of a replay of ``answers``)."""
        x2 = np.asarray(x, dtype=np.float64)[None, :]
        ids = np.array([index], dtype=np.int64)
        profiles = self.profiles(scores)
        policy = self.fitted_[condition]
        asks = {"feedback": feedback if feedback is not None else ReplayFeedback(answers)
                } if policy.asks_questions else {}
        plans = [(self.policies.index(condition), condition,
                  policy.recommend(x2, profiles, ids, self.policy_seed_, **asks))]
        plans += [(len(self.policies) + j, RANDOM_POLICY,
                   random_recourse(self.context_, x2, profiles, ids, self.study_seed_, j))
                  for j in range(self.study.random_others)]
        # every plan of the participant measured at once (always the same rows for them)
        found = np.array([bool(rec.found[0]) for _, _, rec in plans])
        intervened = np.stack([rec.intervened[0] for _, _, rec in plans]) & found[:, None]
        # a point-proposing policy (HARE): its point is what the person is asked to reach
        values = np.stack([rec.values[0] if rec.counterfactual is None else
                           np.where(acted, rec.counterfactual[0], np.nan)
                           for (_, _, rec), acted in zip(plans, intervened, strict=True)])
        m = self.measure(x2[0], intervened, values, found, scores)
        shown = []
        for i, (item, name, rec) in enumerate(plans):
            if not m["found"][i]:
                continue
            x_cf = m["x_cf"][i] if rec.counterfactual is None else np.where(
                rec.found[0], rec.counterfactual[0], x2[0])
            shown.append(ShownRecourse(item, name, True, m["intervened"][i], x_cf,
                                       int(m["sparsity"][i]), float(m["proximity"][i]),
                                       float(m["cost"][i]), float(m["cost_unweighted"][i])))
        return shown

    def recourse_step(self, index: int, condition: str, x: list[float], scores: list[int],
                      answers: list[tuple[str, bool]]) -> dict[str, Any]:
        """The next step of participant ``index``'s recourse page as plain data:
        ``{"question": payload}`` while the condition's policy asks (the question, its number
        and its seeded left / right sides), else ``{"items": [...]}`` (the rated recourses in
        their seeded display order, with the ``condition`` they were computed for). Plain
        data, so a separate compute process can answer."""
        x_arr = np.asarray(x, dtype=float)
        s_arr = np.asarray(scores, dtype=np.int64)
        replay = [(str(k), bool(a)) for k, a in answers]
        if not self.fitted_[condition].asks_questions:
            return {**self._items(index, self.recourses(index, condition, x_arr, s_arr, replay)),
                    "condition": condition}
        # a questioning policy keeps running between pages (replaying only when it must)
        key = (condition, x_arr.tobytes(), s_arr.tobytes())
        kind, value = self.sessions_.step(index, key, replay, lambda fb: self._items(
            index, self.recourses(index, condition, x_arr, s_arr, replay, feedback=fb)))
        if kind == "done":
            return {**value, "condition": condition}
        return {"question": {"kind": value.kind, "q": value.index,
                             "swapped": self.swap_sides(index, value.index),
                             "x": x_arr.tolist(), "a": value.a.tolist(),
                             "b": None if value.b is None else value.b.tolist()}}

    def refines(self, condition: str) -> bool:
        """Whether the condition's policy refines a base whose first steps :meth:`prefill`
        batches: one whose rows keep their bits in a batch of fixed shape
        (:attr:`~simstudy.policies.base.RecoursePolicy.row_local`; other bases are computed
        for each participant alone, in the same fixed shape)."""
        base = getattr(self.fitted_[condition], "base_", None)
        return isinstance(base, SlottedBase) and bool(getattr(base.policy, "row_local", False))

    def prefill(self, steps: list[tuple]) -> int:
        """Computes at once the bases of the refining policies that the first steps ``steps``
        (arguments of :meth:`recourse_step`) will start from, and HARE's first candidates;
        returns how many steps there were. Each step then finds them remembered, with the bits
        it would have had alone (:mod:`~simstudy.live.slots`)."""
        calls: dict[str, list] = {}
        for index, condition, x, scores, _ in steps:
            if self.refines(condition):
                calls.setdefault(condition, []).append(
                    (np.asarray(x, dtype=np.float64)[None, :],
                     self.profiles(np.asarray(scores, dtype=np.int64)),
                     np.array([index], dtype=np.int64), self.policy_seed_))
        for condition, todo in calls.items():
            policy = self.fitted_[condition]
            policy.base_.prefill(todo)
            if isinstance(policy, SlottedHARE):
                policy.prefill_candidates(todo)
        return sum(len(v) for v in calls.values())

    def _items(self, index: int, shown: list[ShownRecourse]) -> dict[str, Any]:
        items = []
        for i in self.item_order(index, len(shown)):
            s = shown[i]
            items.append({"item": s.item, "policy": s.policy,
                          "intervened": [bool(v) for v in s.intervened],
                          "x_cf": [float(v) for v in s.x_cf], "sparsity": s.sparsity,
                          "proximity": s.proximity, "cost": s.cost,
                          "cost_unweighted": s.cost_unweighted})
        return {"items": items}

    def item_order(self, index: int, n: int) -> list[int]:
        """The seeded order of participant ``index``'s ``n`` rating pages."""
        if n == 0:
            return []
        u = entity_uniforms(self.live_seed_, "item-order", np.array([index]), n)[0]
        return [int(i) for i in np.argsort(u, kind="stable")]

    def swap_sides(self, index: int, question: int) -> bool:
        """Whether pairwise question ``question`` shows option ``b`` on the left (seeded)."""
        u = entity_uniforms(self.live_seed_, f"pair-side:{question}", np.array([index]))
        return bool(u[0, 0] < 0.5)

    def assignment_draw(self, index: int) -> float:
        """The seeded uniform breaking ties of participant ``index``'s assignment."""
        return float(entity_uniforms(self.live_seed_, "assignment", np.array([index]))[0, 0])

    def people(self) -> Any:
        """The study condition's simulated people of the replication (the bots)."""
        rep, ctx = self.rep_, self.context_
        spec = people_specs(self.scenario, self.populations)[self.population_condition]
        return People.from_spec(
            spec, rep.x, rep.ids, rep.seed, ctx.feature_names, ctx.world.roles.actionable,
            ScaledSpace.from_context(ctx), preference_seed=self.policy_seed_,
            immutable=ctx.world.roles.immutable, rankings=ctx.world.roles.rankings,
            income=ctx.world.roles.income, sensitive=ctx.world.roles.sensitive)
