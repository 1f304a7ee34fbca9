"""Simulated participants walking a live study's real HTTP pages (a dry run before launch).

Bot ``n`` is a person of the study's simulated people (:class:`~simstudy.people.People` of the
study condition, drawn with a keyed order among the people whose profile, entered as the page
shows it (display units, at each feature's step), lies in the entry page's ranges and is
rejected by the decision model). It enters through the recruitment URL
(``?PROLIFIC_PID=BOT-PID-<n>&STUDY_ID=...&SESSION_ID=...``, its start page's form) and answers
every page as the simulator's person would: their profile (as shown), their *reported*
actionability, the policy's questions through the same :class:`~simstudy.primitives.Feedback`
the simulated people answer (:meth:`People.feedback`, the luck of question ``q`` keyed by
``q``), the attention checks as instructed, whether each changed item is changeable from their
*true* actionability, and the two ratings from the study's response model on the recourse read
off the page, measured by the simulator's code, with uniforms keyed by ``(seed,
"bot-rating:<item>", person id)``.

Bots enter one after another (bot ``n`` consents after bot ``n - 1``), then walk concurrently,
so arrival indices, assignments and therefore the export do not depend on timing: the same
seeds give the same export, also when the server or the bots are stopped and started again
(a bot resumes wherever the server says it is).

Example:
    >>> report = BotReport(statuses={0: "completed"}, latencies=[("rating", 0.02)])
    >>> report.summary()["latency_ms"]["rating"]["median"]
    20.0
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.registry import build
from ..core.rng import derive_seed, entity_uniforms
from ..study.section import study_response
from ..world.presentation import format_number
from .engine import LiveEngine
from .pages import Pages

__all__ = ["BotCrowd", "BotReport", "run_bots"]

# quotes either way: the server writes ', a browser's serialization "
_PAGE = re.compile(r"""name=['"]page['"] value=['"]([^'"]*)['"]""")
_ROW = re.compile(r"""<tr[^>]*data-feature=['"]([^'"]*)['"] data-current=['"]([^'"]*)['"]"""
                  r"""(?: data-suggested=['"]([^'"]*)['"] data-acted=['"]([01])['"])?""")
_CODE = re.compile(r"""id=['"]code['"]>([^<]*)<""")
_ITEM = re.compile(r"""data-item=['"](\d+)['"]""")
_KIND = re.compile(r"""data-kind=['"](\w+)['"]""")


@dataclass
class BotReport:
    """What a bot run did: outcomes per bot and page latencies ``(page kind, seconds)``."""

    statuses: dict[int, str] = field(default_factory=dict)
    codes: dict[int, str] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    latencies: list[tuple[str, float]] = field(default_factory=list)
    submitted: list[tuple[int, str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"bots": len(self.statuses) + len(self.errors),
                               "finished": len(self.statuses), "errors": len(self.errors)}
        for s in sorted(set(self.statuses.values())):
            out[s] = sum(v == s for v in self.statuses.values())
        kinds: dict[str, list[float]] = {}
        for kind, sec in self.latencies:
            kinds.setdefault(kind, []).append(sec)
        out["latency_ms"] = {k: {"n": len(v), "median": round(1000 * float(np.median(v)), 1),
                                 "p95": round(1000 * float(np.percentile(v, 95)), 1)}
                             for k, v in sorted(kinds.items())}
        if self.errors:
            out["first_error"] = next(iter(self.errors.values()))
        return out


class BotCrowd:
    """The study's simulated people as bots (see the module docstring).

    Args:
        engine: the prepared engine of the study file.
        seed: the bots' seed (their order and rating luck).
        think: seconds a bot pauses before each answer, uniform in ``(low, high)`` (keyed by
            bot and page; default: no pause). Timing only: the answers do not depend on it.
    """

    def __init__(self, engine: LiveEngine, seed: int = 0,
                 think: tuple[float, float] | None = None) -> None:
        self.engine = engine
        self.think = think
        self.people = engine.people()
        # the response model by the study's one scope rule, as `run` and `power` read it
        self.response = build("response", study_response(engine.scenario)[0])
        self.seed = derive_seed(engine.rep_.seed, "bots", seed)
        self.pages = Pages(engine.live, engine.path.parent)
        # a bot enters its profile as shown (display units at the feature's step), so it
        # must lie in the entry's range and the model must reject the profile so stated
        feats = engine.features_
        shown = np.array([[f.stated(v) for f, v in zip(feats, row, strict=True)]
                          for row in self.people.x.tolist()]).reshape(len(self.people.x),
                                                                       len(feats))
        lo = np.array([f.low for f in feats])
        hi = np.array([f.high for f in feats])
        ok = ((shown >= lo) & (shown <= hi)).all(axis=1)
        ok &= self.people.reported.actionable.any(axis=1)
        self.shown = shown
        if ok.any():
            stated = np.array([[f.view.model(v) for f, v in zip(feats, row, strict=True)]
                               for row in shown[ok].tolist()])
            ok[np.flatnonzero(ok)] = ~engine.approves(stated)
        candidates = np.flatnonzero(ok)
        u = entity_uniforms(self.seed, "bot-person", self.people.ids[candidates])[:, 0]
        self.order = candidates[np.argsort(u, kind="stable")]
        self.feedback = self.people.feedback()

    def row(self, n: int) -> int:
        """The people row of bot ``n``."""
        return int(self.order[n % len(self.order)])

    # -- answers ----------------------------------------------------------------------------
    def answer(self, n: int, key: str, text: str) -> dict[str, str]:
        """The form bot ``n`` submits on the page ``key`` whose HTML is ``text``."""
        row = self.row(n)
        live = self.engine.live
        if key == "start":  # the entry link's start page: its form creates the participant
            return {}
        if key == "consent":
            return {"consent": "yes"}
        if key == "profile":
            # coded features by their option (the code), numbers as shown, at their step
            return {f"x_{f.name}": str(int(self.shown[row, j])) if f.view.coded
                    else format_number(self.shown[row, j], f.view.decimals, "",
                                       self.pages.point)
                    for j, f in enumerate(self.engine.features_)}
        if key.startswith("check:"):
            return {"choice": live.attention_checks[int(key[6:])].correct}
        if key == "actionability":
            return {f"a_{f}": str(s) for f, s in zip(self.engine.actionable,
                                                     self._stated(row), strict=True)}
        if key.startswith("hare:"):
            return self._question(row, int(key[5:]), text)
        if key.startswith("rating:"):
            return self._rating(row, text)
        raise ValueError(f"bot {n}: no answer for page {key!r}")

    def _stated(self, row: int) -> list[int]:
        s = self.people.reported.scores[row]
        scheme = self.engine.live.elicitation
        if scheme == "binary":
            return [int(v > 0) for v in s]
        if scheme == "likert":
            return [int(min(v, self.engine.levels)) for v in s]
        return [int(v) for v in s]

    def _plans(self, text: str) -> list[np.ndarray]:
        plans = []
        for part in text.split("data-side=")[1:]:
            rows = _ROW.findall(part)
            plans.append(np.array([float(r[2]) for r in rows]))
        if not plans:  # an accept question shows one plan
            plans.append(np.array([float(r[2]) for r in _ROW.findall(text)]))
        return plans

    def _question(self, row: int, q: int, text: str) -> dict[str, str]:
        pid = self.people.ids[row:row + 1]
        self.feedback.queries[row] = q  # the luck of the q-th answer, wherever the walk resumed
        plans = self._plans(text)
        if _KIND.search(text).group(1) == "prefer":
            left = bool(self.feedback.prefer(pid, plans[0][None, :], plans[1][None, :])[0])
            return {"choice": "left" if left else "right"}
        yes = bool(self.feedback.accept(pid, plans[0][None, :])[0])
        return {"choice": "yes" if yes else "no"}

    def _rating(self, row: int, text: str) -> dict[str, str]:
        item = int(_ITEM.search(text).group(1))
        rows = _ROW.findall(text)
        names = [r[0] for r in rows]
        x = np.array([float(r[1]) for r in rows])
        suggested = np.array([float(r[2]) for r in rows])
        acted = np.array([r[3] == "1" for r in rows])
        scores = np.asarray(self.people.reported.scores[row])
        m = self.engine.measure(x, acted, np.where(acted, suggested, np.nan), True, scores)
        blocked = self.people.blocked(acted[None, :], np.array([row]))
        inputs = self.people.response_inputs(
            np.array([row]), np.array([m["cost"]]), np.array([m["cost_unweighted"]]),
            np.array([m["sparsity"]], dtype=float), np.array([m["proximity"]]), blocked)
        u = entity_uniforms(self.seed, f"bot-rating:{item}", self.people.ids[row:row + 1], 2)
        accept, act = self.response.ratings(inputs, u)
        form = {"accept": str(int(accept[0])), "act": str(int(act[0])),
                "why": f"simulated participant: plan {item} rated {int(accept[0])} and "
                       f"{int(act[0])}"}
        can = self.people.true_mask[row]
        for j, f in enumerate(names):
            if acted[j]:
                form[f"c_{f}"] = "yes" if can[j] else "no"
        return form

    # -- walking the pages ------------------------------------------------------------------
    async def walk(self, client: Any, n: int, report: BotReport, entered: asyncio.Event,
                   before: asyncio.Event | None) -> None:
        """Bot ``n`` from entry to completion (entry and consent after bot ``n - 1``'s)."""
        try:
            if before is not None:
                await before.wait()
            t = time.perf_counter()
            r = await client.get("/", params={"PROLIFIC_PID": f"BOT-PID-{n}",
                                              "STUDY_ID": "BOT-STUDY",
                                              "SESSION_ID": f"BOT-SESSION-{n}"},
                                 follow_redirects=True)
            report.latencies.append(("entry", time.perf_counter() - t))
            first = _PAGE.search(r.text)
            if first is None or first.group(1) not in ("start", "consent"):
                entered.set()  # resumed past consent: its arrival index is already fixed
            for _ in range(200):
                r.raise_for_status()
                text = r.text
                m = _PAGE.search(text)
                if m is None:
                    code = _CODE.search(text)
                    report.codes[n] = html.unescape(code.group(1)) if code else ""
                    report.statuses[n] = "ended" if code else "no_code"
                    self._code_status(n, report)
                    return
                key = html.unescape(m.group(1))
                form = {"page": key, **self.answer(n, key, text)}
                if self.think is not None:
                    lo, hi = self.think
                    u = entity_uniforms(self.seed, f"bot-think:{key}", np.array([n]))[0, 0]
                    await asyncio.sleep(lo + u * (hi - lo))
                t = time.perf_counter()
                r = await client.post(str(r.url), data=form, follow_redirects=True)
                report.latencies.append((_kind(key), time.perf_counter() - t))
                if r.status_code == 422:
                    raise RuntimeError(f"page {key} refused the bot's answer")
                r.raise_for_status()
                report.submitted.append((n, key))
                if key == "consent" and not entered.is_set():
                    entered.set()
            raise RuntimeError("more than 200 pages")
        except Exception as exc:  # one bot's failure is reported, the others go on
            report.errors[n] = f"bot {n}: {type(exc).__name__}: {exc}"
        finally:
            entered.set()

    def _code_status(self, n: int, report: BotReport) -> None:
        c = self.engine.live.completion
        names = {c.completed: "completed", c.failed_attention: "failed_attention",
                 c.no_consent: "no_consent"}
        report.statuses[n] = names.get(report.codes[n], "full")


def _kind(key: str) -> str:
    """The latency class of an answer (its POST and the next page): the answer to
    ``actionability`` computes the recourse (or a questioning policy's first question), a
    ``hare:`` answer the next question or the final recourse."""
    if key == "actionability":
        return "recourse"
    return key.split(":")[0]


async def _run(crowd: BotCrowd, url: str, participants: int, concurrency: int,
               start: int, transport: Any = None, ordered: bool = True) -> BotReport:
    import httpx

    report = BotReport()
    sem = asyncio.Semaphore(concurrency)
    events = [asyncio.Event() for _ in range(participants)]
    # one TLS context for all clients: building one loads the CA bundle (tens of ms of CPU
    # that would stall every other bot's page)
    tls = httpx.create_ssl_context()

    async def one(i: int) -> None:
        # a client per bot, as every participant has their own browser: one shared pool of
        # C connections costs the bots O(C) per request in its bookkeeping (httpcore's
        # connection assignment) and, past its keep-alive limit, a new connection per request
        async with sem, httpx.AsyncClient(base_url=url, timeout=120.0, transport=transport,
                                          verify=tls, limits=httpx.Limits(max_connections=1)
                                          ) as client:
            await crowd.walk(client, start + i, report, events[i],
                             events[i - 1] if i and ordered else None)

    await asyncio.gather(*(one(i) for i in range(participants)))
    return report


def run_bots(engine: LiveEngine, url: str, participants: int, concurrency: int = 10,
             seed: int = 0, start: int = 0, transport: Any = None,
             ordered: bool = True, think: tuple[float, float] | None = None) -> BotReport:
    """Runs bots ``start .. start + participants - 1`` against the server at ``url``
    (``transport``: an httpx transport, e.g. ``httpx.ASGITransport(app)`` in tests;
    ``ordered: false`` lets bots enter at once, for load tests: arrival order, hence the
    assignment and the export, then depend on timing; ``think``: see :class:`BotCrowd`)."""
    crowd = BotCrowd(engine, seed, think)
    return asyncio.run(_run(crowd, url.rstrip("/"), participants, concurrency, start,
                            transport, ordered))
