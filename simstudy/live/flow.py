"""The participant's path through a live study, page by page, with no state outside the store.

Path: consent (no consent: the ``no_consent`` code) -> balanced assignment to a condition ->
profile (every world feature within its training range; coded features by their labels; a
profile the decision model approves is refused, as the study is about rejections) ->
actionability (binary, ranking or Likert) -> the condition's recourse from the stated profile
(a questioning policy's pairwise and accept questions one page each) -> one rating page per
recourse in a seeded order -> completion code. Attention checks stand where the document puts
them.

The current page is always derived from the recorded answers (:meth:`StudyFlow.current`), so a
refresh, the back button, a restart or re-entry through the recruitment URL shows the page the
participant is on; a form carries the key of its page and a submission for any other page is a
no-op (a double submit changes nothing).

Slots and outcomes: an assigned participant holds their condition's slot for at most
``timeout_minutes``; past it they are marked ``timed_out`` and see a page saying so, never a
completion code (:meth:`~simstudy.live.database.Store.finish` sets an outcome only while the
slot is held). A participant may leave (a form with ``page=return``: status ``returned``,
the slot freed). While the researcher has paused recruitment, consents are refused with a page
saying so (nothing is recorded; the same link works once recruitment resumes). A participant
whose condition finds no plan for their stated profile is recorded (``no_plan``) and, under
``no_plan.rule: exclude``, no longer counts towards the condition's target.

Consistency check: a rating page asks, for each item the plan changes, whether it is in fact
changeable; an answer contradicting the stated actionability (stated changeable but "no", or
stated not changeable but "yes") is recorded with the answer (``inconsistent``) and exported,
never dropped. Failed attention checks likewise.

Example:
    >>> Page("rating:0", "rating").key
    'rating:0'
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.store import file_sha256
from ..world.presentation import parse_number
from .database import Store
from .engine import LiveEngine
from .pages import Pages

__all__ = ["Page", "StepNeeded", "StudyFlow", "ENDED"]

#: Statuses whose participant sees the end page (their outcome) whatever they submit.
ENDED = ("completed", "failed_attention", "no_consent", "timed_out", "returned", "full")

_CODE = re.compile(r"^-?[0-9]+$")


@dataclass
class Page:
    """What to show: ``key`` (the form's page token), ``kind`` and its data."""

    key: str
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


class StepNeeded(Exception):  # noqa: N818 - a signal, not an error
    """The participant's page waits for a recourse step; ``step_args``: the arguments of
    :meth:`~simstudy.live.engine.LiveEngine.recourse_step`, for the caller to compute the
    step and store it with :meth:`StudyFlow.save_step`."""

    def __init__(self, args: tuple) -> None:
        super().__init__("a recourse step is needed")
        self.step_args = args


class StudyFlow:
    """The path of a live study over an engine (prepared) and a store.

    Args:
        engine: the prepared :class:`~simstudy.live.engine.LiveEngine`.
        store: the study's :class:`~simstudy.live.database.Store`.
        key: the key of the participants' pseudonyms.
        compute: what computes a recourse step (default: ``engine.recourse_step`` in this
            process; :class:`~simstudy.live.engine.ComputePool` in others).
    """

    def __init__(self, engine: LiveEngine, store: Store, key: bytes,
                 compute: Callable[..., dict[str, Any]] | None = None) -> None:
        self.engine, self.store, self.key = engine, store, key
        self.compute = engine.recourse_step if compute is None else compute
        self.live = engine.live
        #: the pages' renderer (templates, texts, number format)
        self.pages = Pages(self.live, engine.path.parent)
        # a participant's lock lives while a request holds it: ids leave nothing behind
        self._locks: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._locks_lock = threading.Lock()
        #: the study file's sha256 (the database's version of it: ``store.version``)
        self.study_sha256 = file_sha256(engine.path)
        if store.version is None:
            store.study_version(self.study_sha256, self.live.consent)
        roles = engine.context_.world.roles
        store.set_meta("study", json.dumps({
            "name": engine.scenario.name, "features": list(roles.names),
            "sensitive": list(roles.sensitive), "policies": engine.policies,
            "conditions": engine.conditions}, sort_keys=True))

    def _lock(self, uid: str) -> Any:
        with self._locks_lock:
            lock = self._locks.get(uid)
            if lock is None:
                lock = self._locks[uid] = threading.Lock()
            return lock

    def checks(self, place: str) -> list[str]:
        return [f"check:{i}" for i, c in enumerate(self.live.attention_checks)
                if c.after == place]

    # -- entry ------------------------------------------------------------------------------
    def enter(self, platform_pid: str, study_id: str | None, session_id: str | None) -> str:
        """The uid of the participant of a platform ID, created on their first entry."""
        return self.store.enter(platform_pid, study_id, session_id, self.key)["uid"]

    def entered(self, platform_pid: str) -> str | None:
        """The uid of the participant of a platform ID if they entered before (creates
        nothing)."""
        p = self.store.find(platform_pid, self.key)
        return None if p is None else p["uid"]

    @property
    def timeout(self) -> float:
        """Seconds a slot is held at most."""
        return 60.0 * self.live.timeout_minutes

    # -- where the participant is -----------------------------------------------------------
    def current(self, uid: str, compute: bool = True) -> Page:
        """The page participant ``uid`` is on; with ``compute`` false, a page that waits for
        a recourse step raises :class:`StepNeeded` instead of computing it here (so that a
        server computes it without holding a page thread)."""
        with self._lock(uid):
            return self._current(uid, compute)

    def _current(self, uid: str, compute: bool = True) -> Page:
        p = self.store.participant(uid)
        if p is None:
            return Page("unknown", "unknown")
        if p["status"] == "in_progress" and p["assigned_at"] is not None \
                and time.time() - p["assigned_at"] > self.timeout:
            self.store.expire(self.timeout, uid)  # their slot is free, they cannot complete
            p = self.store.participant(uid)
        answers = self.store.answers(uid)
        if p["status"] in ENDED:
            return self._end(p, answers)
        if "consent" not in answers:
            return Page("consent", "consent", {"text": self.live.consent})
        for key in ["profile", *self.checks("profile"), "actionability",
                    *self.checks("actionability")]:
            if key not in answers:
                return self._page(key, p, answers)
        for _ in range(3):  # the assigned condition, then perhaps the one replacing it
            if "recourse" in answers:
                break
            asked = self._recourse(p, answers, compute)
            if asked is not None:
                return asked
            answers = self.store.answers(uid)
            p = self.store.participant(uid)
        items = self.store.items(uid)
        after = []
        for pos in range(len(items)):
            after.append(f"rating:{pos}")
            if pos == 0:
                after += self.checks("first_rating")
        if not items:
            after += self.checks("first_rating")
        after += self.checks("ratings")
        for key in after:
            if key not in answers:
                return self._page(key, p, answers, items)
        return self._finish(p, answers)

    def _page(self, key: str, p: dict, answers: dict, items: list | None = None) -> Page:
        if key == "profile":
            return Page(key, "profile", {"features": self.engine.features_,
                                         "framing": self.live.framing,
                                         "vignette": self.live.vignette})
        if key == "actionability":
            return Page(key, "actionability", {"features": self.engine.actionable,
                                               "views": self.engine.features_,
                                               "scheme": self.live.elicitation,
                                               "levels": self.engine.levels})
        if key.startswith("check:"):
            return Page(key, "check", {"check": self.live.attention_checks[int(key[6:])]})
        pos = int(key.split(":")[1])
        item = (items or [])[pos]
        return Page(key, "rating", {"item": item, "position": pos, "of": len(items or []),
                                    "x": answers["profile"]["x"],
                                    "features": self.engine.features_,
                                    "questionnaire": self.live.questionnaire})

    def _hare_answers(self, answers: dict) -> list[tuple[str, bool]]:
        out = []
        q = 0
        while f"hare:{q}" in answers:
            a = answers[f"hare:{q}"]
            out.append((a["kind"], bool(a["answer"])))
            q += 1
        return out

    def _recourse(self, p: dict, answers: dict, compute: bool = True) -> Page | None:
        """The next question of the condition's policy, or ``None`` once the recourses are
        stored."""
        replay = self._hare_answers(answers)
        stored = self.store.question(p["uid"], len(replay))
        if stored is not None:
            return Page(f"hare:{len(replay)}", "question",
                        {**stored, "features": self.engine.features_})
        args = (p["idx"], p["condition"], answers["profile"]["x"],
                answers["actionability"]["scores"], replay)
        if not compute:
            raise StepNeeded(args)
        return self._save_step(p["uid"], self.compute(*args))

    def _save_step(self, uid: str, step: dict[str, Any]) -> Page | None:
        if "question" in step:
            payload = step["question"]
            self.store.save_question(uid, payload["q"], payload)
            return Page(f"hare:{payload['q']}", "question",
                        {**payload, "features": self.engine.features_})
        p = self.store.participant(uid)
        if step.get("condition", p["condition"]) != p["condition"]:
            return None  # computed for the condition a no-plan rule has since replaced
        items = step["items"]
        assigned = p["assigned_condition"] or p["condition"]
        if not any(it["policy"] == p["condition"] for it in items):
            if not p["no_plan"] and self._no_plan(uid, assigned):
                return None  # the replacement's recourse comes next
            if p["no_plan"]:
                # the replacement found no plan either: counted nowhere, as under `exclude`
                self.store.mark_no_plan(uid)
        x = self.store.answers(uid).get("profile", {}).get("x")
        features = self.engine.features_
        # each plan in words, as its page states it (the export's readable column)
        items = [{**it, "plan": self.pages.plan_text(features, x, it["x_cf"], it["intervened"])}
                 if x is not None and len(it["x_cf"]) == len(x) == len(features) else it
                 for it in items]
        self.store.save_items(uid, items)
        return None

    def _no_plan(self, uid: str, assigned: str) -> bool:
        """Routes a participant whose assigned condition found no plan by the study's rule
        (``study.live.no_plan``: ``replace`` gives them the replacement condition, which they
        count towards; ``exclude`` leaves them with the random plans, counted nowhere, as is
        one whose replacement finds no plan either); true when another condition serves them
        now."""
        rule = self.live.no_plan
        replacement = rule.replacement if rule.rule == "replace" and \
            rule.replacement != assigned else None
        self.store.mark_no_plan(uid, replacement)
        return replacement is not None

    def save_step(self, uid: str, step: dict[str, Any]) -> None:
        """Stores a recourse step computed for participant ``uid`` (see :class:`StepNeeded`);
        storing is idempotent, so a step computed twice changes nothing."""
        with self._lock(uid):
            self._save_step(uid, step)

    def failures(self, answers: dict) -> int:
        return sum(1 for k, v in answers.items() if k.startswith("check:") and not v["correct"])

    def _finish(self, p: dict, answers: dict) -> Page:
        if p["status"] == "in_progress":
            failed = self.failures(answers) >= self.live.reject_after_failures
            # only while the slot is held: a participant timed out meanwhile stays so
            self.store.finish(p["uid"], "failed_attention" if failed else "completed")
            p = self.store.participant(p["uid"])
        return self._end(p, answers)

    def _end(self, p: dict, answers: dict) -> Page:
        c = self.live.completion
        status = p["status"]
        code = {"completed": c.completed, "failed_attention": c.failed_attention,
                "no_consent": c.no_consent}.get(status)
        return Page("end", "end", {"status": status, "code": code,
                                   "redirect": None if code is None
                                   else c.redirect.format(code=code),
                                   "debriefing": self.live.debriefing})

    # -- answers ----------------------------------------------------------------------------
    def submit(self, uid: str, form: dict[str, str], compute: bool = True) -> Page | None:
        """Records the answer to the page the form names; the page again with ``errors`` when
        the answer is refused, else ``None`` (a form for another page is ignored;
        ``compute``: as in :meth:`current`)."""
        with self._lock(uid):
            page = self._current(uid, compute)
            if form.get("page") == "return" and page.kind != "end":
                self.store.finish(uid, "returned", ("entered", "in_progress"))
                return None
            if form.get("page") != page.key:
                return None
            errors, value = self._parse(page, form, uid)
            if errors:
                page.data = {**page.data, "errors": errors, "form": form}
                return page
            if page.key == "consent":
                if value["consent"] and self.store.switch("paused"):
                    page.data = {**page.data, "form": form,
                                 "errors": {"consent": ("paused", {})}}
                    return page
                self.store.answer(uid, "consent", value)
                if value["consent"]:
                    p = self.store.participant(uid)
                    # a full study records the status ``full``; the end page then says so
                    self.store.assign(uid, self.engine.conditions,
                                      self.engine.assignment_draw(p["idx"]),
                                      self.live.target_per_condition, self.timeout)
                else:
                    self.store.set_status(uid, "no_consent", finished=True)
                return None
            self.store.answer(uid, page.key, value)
            return None

    def _parse(self, page: Page, form: dict[str, str], uid: str) -> tuple[dict, Any]:
        kind = page.kind
        if kind == "consent":
            v = form.get("consent")
            if v not in ("yes", "no"):
                return {"consent": ("consent", {})}, None
            return {}, {"consent": v == "yes"}
        if kind == "profile":
            return self._parse_profile(form)
        if kind == "check":
            check = page.data["check"]
            v = form.get("choice")
            if v not in check.options:
                return {"choice": ("option", {})}, None
            return {}, {"choice": v, "correct": v == check.correct}
        if kind == "actionability":
            return self._parse_actionability(form)
        if kind == "question":
            return self._parse_question(page, form)
        if kind == "rating":
            return self._parse_rating(page, form, uid)
        return {"page": ("page", {})}, None

    def _parse_profile(self, form: dict[str, str]) -> tuple[dict, Any]:
        """The stated profile in model units: a coded feature by one of its codes (an integer
        among them, nothing between), a number as shown (display units, the locale's digit
        groups) within the entry's range, mapped back by the feature's view."""
        errors: dict[str, tuple[str, dict]] = {}
        x: list[float] = []
        pages = self.pages
        for f in self.engine.features_:
            raw = (form.get(f"x_{f.name}") or "").strip()
            if f.view.coded:
                if not _CODE.match(raw) or int(raw) not in f.labels:
                    errors[f.name] = ("option", {})
                    continue
                x.append(float(int(raw)))
                continue
            try:
                v = parse_number(raw, pages.thousands, pages.point)
            except ValueError:
                errors[f.name] = ("number", {})
                continue
            if not math.isfinite(v):
                errors[f.name] = ("number", {})
            elif not f.low <= v <= f.high:
                errors[f.name] = ("range", {"low": pages.number(f, f.low),
                                            "high": pages.number(f, f.high)})
            else:
                x.append(f.view.model(v))
        if not errors and self.engine.approves(np.array(x)):
            # an honest page: the system approves, so there is no plan to rate
            errors["profile"] = ("approved", {})
        return errors, {"x": x}

    def _parse_actionability(self, form: dict[str, str]) -> tuple[dict, Any]:
        scheme, feats, levels = self.live.elicitation, self.engine.actionable, self.engine.levels
        errors, scores = {}, []
        for f in feats:
            raw = form.get(f"a_{f}", "")
            try:
                s = int(raw)
            except ValueError:
                errors[f] = ("answer", {})
                scores.append(0)
                continue
            top = 1 if scheme == "binary" else levels
            if not 0 <= s <= top:
                errors[f] = ("answer", {})
            scores.append(s)
        if errors:
            return errors, None
        if not any(scores):
            return {"actionability": ("at_least_one", {})}, None
        if scheme == "ranking":
            ranked = sorted(s for s in scores if s > 0)
            if ranked != list(range(1, len(ranked) + 1)):
                return {"actionability": ("ranks", {})}, None
        return {}, {"scores": scores}

    def _parse_question(self, page: Page, form: dict[str, str]) -> tuple[dict, Any]:
        q = page.data
        v = form.get("choice")
        if q["kind"] == "prefer":
            if v not in ("left", "right"):
                return {"choice": ("plans", {})}, None
            left_is_a = not q["swapped"]
            return {}, {"kind": "prefer", "answer": (v == "left") == left_is_a, "choice": v}
        if v not in ("yes", "no"):
            return {"choice": ("yes_no", {})}, None
        return {}, {"kind": "accept", "answer": v == "yes", "choice": v}

    def _parse_rating(self, page: Page, form: dict[str, str], uid: str) -> tuple[dict, Any]:
        errors: dict[str, str] = {}
        value: dict[str, Any] = {}
        points = self.live.questionnaire.scale_points
        for q in ("accept", "act"):
            try:
                v = int(form.get(q, ""))
            except ValueError:
                v = 0
            if not 1 <= v <= points:
                errors[q] = ("scale", {})
            value[q] = v
        value["why"] = (form.get("why") or "").strip()[:4000]
        item = page.data["item"]
        names = self.engine.context_.feature_names
        stated = self.store.answers(uid)["actionability"]["scores"]
        act = list(self.engine.actionable)
        changeable, inconsistent = {}, []
        for j, moved in enumerate(item["intervened"]):
            if not moved:
                continue
            f = names[j]
            v = form.get(f"c_{f}")
            if v not in ("yes", "no"):
                errors[f"c_{f}"] = ("answer", {})
                continue
            changeable[f] = v == "yes"
            said = f in act and stated[act.index(f)] > 0
            if said != changeable[f]:
                inconsistent.append(f)
        value["changeable"] = changeable
        value["inconsistent"] = inconsistent
        value["item"] = item["item"]
        return errors, value
