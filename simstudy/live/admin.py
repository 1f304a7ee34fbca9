"""The researcher's control room of a live study: ``/admin``, behind a token.

The token is ``SIMSTUDY_ADMIN_TOKEN`` from the server's environment (never stored beside the
data). A request carries it as ``Authorization: Bearer TOKEN`` or as the password of HTTP Basic
authentication (a browser asks for it); it is compared in constant time
(:func:`hmac.compare_digest`). Without it, or when the server has no token, every ``/admin``
address answers ``401``. The forms of the page carry a second token derived from it, so that
another site cannot make a logged-in browser press them.

Routes:

- ``GET /admin``: progress per condition and status (slots taken against the target), median
  durations of the completed, attention failures, the times of the last answers, the
  switches; ``GET /admin/progress.json``: the same as JSON;
- ``POST /admin``: ``action`` = ``pause`` / ``resume`` (recruitment: while paused, consents
  are refused with a page saying so), ``pilot_on`` / ``pilot_off`` (participants entering
  while it is on are flagged ``pilot`` in the export and balanced apart);
- ``GET /admin/study.csv``: the export's study table (as ``simstudy export`` writes it);
- ``GET /admin/bonus.csv?amount=1.50``: Prolific's bulk-bonus lines ``PROLIFIC_PID,amount``
  for every completed participant who is not a pilot (from the linkage table).

Example:
    >>> token_matches("Bearer s3cret", "s3cret"), token_matches("Bearer nope", "s3cret")
    (True, False)
"""

from __future__ import annotations

import base64
import hmac
import os
import statistics
import time
from pathlib import Path
from typing import Any

from ..core.store import FORMULA_STARTS, csv_text
from .export import live_tables

__all__ = ["TOKEN_ENV", "AdminRoom", "token_matches", "progress"]

#: The environment variable holding the control room's token.
TOKEN_ENV = "SIMSTUDY_ADMIN_TOKEN"
_ACTIONS = {"pause": ("paused", True), "resume": ("paused", False),
            "pilot_on": ("pilot", True), "pilot_off": ("pilot", False)}


def token_matches(authorization: str | None, token: str | None) -> bool:
    """Whether an ``Authorization`` header carries ``token`` (Bearer, or Basic's password),
    compared in constant time; never when there is no token."""
    if not token or not authorization:
        return False
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
        except (ValueError, UnicodeDecodeError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), token.encode())


def progress(store: Any, conditions: list[str], target: int) -> dict[str, Any]:
    """What the control room shows, read from the store."""
    rows = store.read("SELECT condition, status, pilot, no_plan, entered_at, finished_at "
                      "FROM participants")
    by: dict[str, dict[str, int]] = {}
    durations: dict[str, list[float]] = {}
    for r in rows:
        cond = r["condition"] or "(none)"
        by.setdefault(cond, {})
        by[cond][r["status"]] = by[cond].get(r["status"], 0) + 1
        if r["status"] == "completed" and r["finished_at"] is not None:
            durations.setdefault(cond, []).append(r["finished_at"] - r["entered_at"])
    failed_checks = store.read("SELECT COUNT(*) FROM answers WHERE page LIKE 'check:%' AND "
                               "json_extract(value, '$.correct') = 0")[0][0]
    last = [r[0] for r in store.read("SELECT at FROM answers ORDER BY at DESC LIMIT 10")]
    return {
        "target_per_condition": target,
        "slots_taken": store.counts(conditions),
        "pilot_slots": store.counts(conditions, pilot=True),
        "statuses": by,
        "participants": len(rows),
        "median_minutes": {c: round(statistics.median(v) / 60.0, 2)
                           for c, v in sorted(durations.items())},
        "failed_attention": sum(1 for r in rows if r["status"] == "failed_attention"),
        "failed_checks": int(failed_checks),
        "no_plan": sum(1 for r in rows if r["no_plan"]),
        "last_answers": last,
        "paused": store.switch("paused"),
        "pilot": store.switch("pilot"),
        "versions": [{"version": v["version"], "sha256": v["sha256"],
                      "created_at": v["created_at"]} for v in store.versions()],
    }


class AdminRoom:
    """The control room's handlers over a :class:`~simstudy.live.app.LiveServer`.

    Args:
        server: the live server (its flow, once prepared).
        token: the token (default: :data:`TOKEN_ENV` from the environment).
    """

    def __init__(self, server: Any, token: str | None = None) -> None:
        self.server = server
        self.token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self._form_token = None if self.token is None else hmac.new(
            self.token.encode(), b"simstudy-admin-form", "sha256").hexdigest()[:32]

    def _refused(self, request: Any) -> Any:
        """``None`` when the request carries the token, else the ``401`` (or ``503`` while
        the study is prepared)."""
        from starlette.responses import PlainTextResponse

        if not token_matches(request.headers.get("authorization"), self.token):
            text = ("the control room needs the token (SIMSTUDY_ADMIN_TOKEN)" if self.token
                    else "the control room is off: start the server with SIMSTUDY_ADMIN_TOKEN "
                         "set")
            return PlainTextResponse(text, status_code=401, headers={
                "WWW-Authenticate": 'Basic realm="simstudy control room"',
                "Cache-Control": "no-store"})
        if self.server.flow is None:
            return PlainTextResponse("the study is being prepared", status_code=503)
        return None

    def _progress(self) -> dict[str, Any]:
        flow = self.server.flow
        return progress(flow.store, flow.engine.conditions, flow.live.target_per_condition)

    async def page(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse

        refused = self._refused(request)
        if refused is not None:
            return refused
        info = await self.server.steps.in_page_thread(self._progress)
        html = _template().render(info=info, csrf=self._form_token, now=time.time(),
                                  conditions=self.server.flow.engine.conditions)
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    async def progress_json(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        refused = self._refused(request)
        if refused is not None:
            return refused
        return JSONResponse(await self.server.steps.in_page_thread(self._progress),
                            headers={"Cache-Control": "no-store"})

    async def act(self, request: Any) -> Any:
        from starlette.responses import PlainTextResponse, RedirectResponse

        refused = self._refused(request)
        if refused is not None:
            return refused
        form = await request.form()
        if not hmac.compare_digest(str(form.get("csrf", "")).encode(),
                                   self._form_token.encode()):
            return PlainTextResponse("the form's token does not match", status_code=403)
        action = str(form.get("action", ""))
        if action not in _ACTIONS:
            return PlainTextResponse(f"unknown action {action!r}", status_code=400)
        key, on = _ACTIONS[action]
        await self.server.steps.in_page_thread(self.server.flow.store.set_switch, key, on)
        return RedirectResponse("/admin", status_code=303)

    async def study_csv(self, request: Any) -> Any:
        from starlette.responses import Response

        refused = self._refused(request)
        if refused is not None:
            return refused

        def table() -> str:
            return csv_text(live_tables(self.server.flow.store)[0], neutralize=True)

        return Response(await self.server.steps.in_page_thread(table), media_type="text/csv",
                        headers={"Content-Disposition": "attachment; filename=study.csv",
                                 "Cache-Control": "no-store"})

    async def bonus_csv(self, request: Any) -> Any:
        from starlette.responses import PlainTextResponse, Response

        refused = self._refused(request)
        if refused is not None:
            return refused
        try:
            amount = float(request.query_params.get("amount", ""))
        except ValueError:
            amount = float("nan")
        if not 0 < amount < 1e4:
            return PlainTextResponse("amount: the bonus per completed participant, e.g. "
                                     "?amount=1.50", status_code=400)

        def lines() -> str | None:
            store = self.server.flow.store
            if not store.read("SELECT 1 FROM sqlite_master WHERE name = 'linkage'"):
                return None
            rows = store.read("SELECT l.platform_pid FROM participants p JOIN linkage l ON "
                              "l.uid = p.uid WHERE p.status = 'completed' AND p.pilot = 0 "
                              "ORDER BY p.idx")
            # a platform id starting like a formula is written as text (OWASP)
            return "".join(f"{_cell(r[0])},{amount:.2f}\n" for r in rows)

        text = await self.server.steps.in_page_thread(lines)
        if text is None:
            return PlainTextResponse("the linkage table (platform IDs) was deleted",
                                     status_code=409)
        return Response(text, media_type="text/csv", headers={
            "Content-Disposition": "attachment; filename=bonus.csv", "Cache-Control": "no-store"})

    def routes(self) -> list[Any]:
        from starlette.routing import Route

        return [Route("/admin", self.page, methods=["GET"]),
                Route("/admin", self.act, methods=["POST"]),
                Route("/admin/progress.json", self.progress_json, methods=["GET"]),
                Route("/admin/study.csv", self.study_csv, methods=["GET"]),
                Route("/admin/bonus.csv", self.bonus_csv, methods=["GET"])]


def _cell(text: str) -> str:
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _template() -> Any:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(str(Path(__file__).resolve().parent /
                                                  "templates")),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["clock"] = lambda t: time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))
    return env.get_template("admin.html")
