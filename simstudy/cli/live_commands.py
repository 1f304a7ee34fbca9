"""Live-study subcommands: ``serve``, ``bots`` and ``export`` (``preregister`` is the
planning commands', :mod:`simstudy.cli.planning_commands`).

Heavy imports (starlette, uvicorn, httpx, torch) happen inside the handlers, so ``simstudy
--help`` stays fast. The pseudonym key comes from the environment (``SIMSTUDY_LIVE_KEY``);
without it the key is derived from the study's seed, which is reproducible (bots, pilots) but
lets anyone with the study file recompute uids from platform IDs: set it for a real study.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["register", "pseudonym_key"]

# the live server's defaults, repeated here so that `--help` imports no server library
# (tests/test_live_app.py checks they equal simstudy.live.edges')
ENTRY_LIMIT = "10/minute;60/hour"
KEEP_ALIVE = 75.0


def pseudonym_key(scenario_seed: int) -> tuple[bytes, bool]:
    """The key of the participants' pseudonyms and whether it came from the environment."""
    env = os.environ.get("SIMSTUDY_LIVE_KEY")
    if env:
        return env.encode(), True
    return f"simstudy-live-{scenario_seed}".encode(), False


def _serve(args: argparse.Namespace) -> int:
    from ..core.documents import UsageError
    from ..core.file_kinds import expect_kind
    from ..live.engine import load_study
    from .arguments import bind_port, check_new_database, check_port

    check_port(args.port)
    expect_kind(args.study, "yaml", "serve", "STUDY")
    scenario, _ = load_study(args.study)  # a bad document stops here: FILE: field: reason
    if args.prereg is not None:
        from ..live.prereg import check_prereg

        reason = check_prereg(args.study, args.prereg)
        if reason is not None:
            raise UsageError(f"--prereg {args.prereg}: {reason}")
    if args.compute_workers < 0:
        raise UsageError(f"--compute-workers {args.compute_workers}: at least 0 (0: compute "
                         "in the server process)")
    if args.keep_alive <= 0:
        raise UsageError(f"--keep-alive {args.keep_alive:g}: seconds, more than 0")
    _entry_limit(args.entry_limit)
    check_new_database(args.db)
    sock = bind_port(args.host, args.port)  # a busy port is said before "serving"
    try:
        return _run_server(args, scenario, sock)
    finally:
        sock.close()


def _entry_limit(spec: str) -> None:
    from ..core.documents import UsageError
    from ..live.edges import EntryLimit

    try:
        EntryLimit(spec)
    except ValueError as exc:
        raise UsageError(f"--entry-limit {spec}: {exc}") from None


def _run_server(args: argparse.Namespace, scenario: Any, sock: Any) -> int:
    key, from_env = pseudonym_key(scenario.seed)
    if not from_env:
        print("note: SIMSTUDY_LIVE_KEY is not set; pseudonyms use a key derived from the "
              "study's seed (fine for pilots and bots, set it for a real study)",
              file=sys.stderr)
    import torch
    import uvicorn

    from ..core.store import file_sha256
    from ..live.app import create_app
    from ..live.database import Store
    from ..live.edges import server_config
    from ..live.engine import ComputePool, LiveEngine
    from ..live.flow import StudyFlow
    from ..live.pages import Pages
    from .exits import exit_code

    torch.set_num_threads(1)
    db = Path(args.db)
    db.parent.mkdir(parents=True, exist_ok=True)
    # a corrupted, truncated, read-only or full database stops here, in one line
    store = Store(db)
    store.check()
    version = store.study_version(file_sha256(args.study), scenario.study.live.consent,
                                  args.new_version)

    def prepare() -> StudyFlow:
        engine = LiveEngine(args.study).prepare()
        compute = ComputePool(args.study, args.compute_workers) if args.compute_workers else None
        return StudyFlow(engine, store, key, compute)

    print(f"serving {args.study} (version {version} on database {db}) on "
          f"http://{args.host}:{args.port}; GET /healthz answers 200 when the policies are "
          "ready", file=sys.stderr)
    pages = Pages(scenario.study.live, Path(args.study).parent)
    config = server_config(create_app(prepare, entry_limit=args.entry_limit, pages=pages),
                           args.host, args.port, keep_alive=args.keep_alive, log_level="warning",
                           timeout_graceful_shutdown=5)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt as exc:
        # uvicorn stops on SIGINT / SIGTERM (the answers in flight are finished and
        # committed), then raises the signal again: here
        code = exit_code(exc)
        print(f"simstudy serve: stopped ({'SIGTERM' if code == 143 else 'SIGINT'}); every "
              f"answer received is in {db}; serve it again with the same --db to continue",
              file=sys.stderr)
        return code
    return 0


def _bots(args: argparse.Namespace) -> int:
    from ..core.documents import UsageError
    from ..core.file_kinds import expect_kind
    from ..live.engine import load_study
    from .arguments import check_same_study, check_url

    url = check_url(args.url)
    for flag in ("participants", "concurrency"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag} {getattr(args, flag)}: at least 1")
    if args.start < 0:
        raise UsageError(f"--start {args.start}: at least 0 (the first bot's number)")
    if args.wait < 0:
        raise UsageError(f"--wait {args.wait:g}: seconds, at least 0")
    think = _think(args.think)
    expect_kind(args.study, "yaml", "bots", "STUDY")
    load_study(args.study)  # a bad document stops here: FILE: field: reason
    check_same_study(args.study, url, args.wait)
    import torch

    from ..live.bots import run_bots
    from ..live.engine import LiveEngine

    torch.set_num_threads(1)
    engine = LiveEngine(args.study).prepare()
    report = run_bots(engine, url, args.participants, args.concurrency, args.seed,
                      args.start, think=think)
    summary = report.summary()
    print(json.dumps(summary, indent=2))
    return 0 if not report.errors else 1


def _think(text: str | None) -> tuple[float, float] | None:
    """``--think LOW,HIGH`` as seconds (``None``: no pauses)."""
    from ..core.documents import UsageError

    if text is None:
        return None
    lo, _, hi = text.partition(",")
    try:
        think = (float(lo), float(hi or lo))
    except ValueError:
        think = (-1.0, -1.0)
    if not 0 <= think[0] <= think[1] < float("inf"):
        raise UsageError(f"--think {text}: expected LOW,HIGH seconds with 0 <= LOW <= HIGH, "
                         "e.g. --think 1,5")
    return think


def _export(args: argparse.Namespace) -> int:
    from ..core.store import check_output_file
    from ..live.export import export_study
    from .arguments import check_study_database

    check_study_database(args.db, "export")
    check_output_file(args.out)
    res = export_study(args.db, args.out, drop_linkage=args.drop_linkage)
    print(f"wrote {', '.join(res['paths'])}: {res['participants']} participants, "
          f"{res['rows']} ratings" + (f"; linkage table deleted ({res['linkage_rows_dropped']} "
                                      "rows)" if args.drop_linkage else ""))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run a study file's live study in the browser")
    p.add_argument("study", metavar="STUDY")
    p.add_argument("--db", required=True, metavar="FILE", help="SQLite database of the answers")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--prereg", default=None, metavar="FILE",
                   help="refuse to start unless this preregistration records the study "
                        "file's sha256")
    p.add_argument("--compute-workers", type=int, default=1, metavar="N",
                   help="processes computing recourses and questions (default 1; 0: in the "
                        "server process)")
    p.add_argument("--new-version", action="store_true",
                   help="serve a changed study file on an existing database as its next "
                        "version (participants and the export carry their version)")
    p.add_argument("--entry-limit", default=ENTRY_LIMIT, metavar="LIMITS",
                   help=f"new participants per client address, e.g. '10/minute;60/hour' "
                        f"(default {ENTRY_LIMIT}; 'none': no limit, e.g. for bots on this "
                        "machine)")
    p.add_argument("--keep-alive", type=float, default=KEEP_ALIVE, metavar="SECONDS",
                   help=f"seconds an idle connection stays open (default {KEEP_ALIVE:g})")
    p.set_defaults(handler=_serve)

    p = subparsers.add_parser("bots", help="simulated participants walking a live study's "
                                           "pages")
    p.add_argument("study", metavar="STUDY")
    p.add_argument("--url", required=True, help="the server (e.g. http://127.0.0.1:8000)")
    p.add_argument("--participants", type=int, default=10, metavar="N")
    p.add_argument("--concurrency", type=int, default=10, metavar="C")
    p.add_argument("--seed", type=int, default=0, help="the bots' seed")
    p.add_argument("--start", type=int, default=0, metavar="K",
                   help="first bot number (BOT-PID-K)")
    p.add_argument("--think", default=None, metavar="LOW,HIGH",
                   help="seconds each bot pauses before an answer, uniform in LOW..HIGH "
                        "(default: none)")
    p.add_argument("--wait", type=float, default=300.0, metavar="SECONDS",
                   help="how long to wait for the server's /healthz")
    p.set_defaults(handler=_bots)

    p = subparsers.add_parser("export", help="a live study's database as the table "
                                             "`simstudy analyze` reads")
    p.add_argument("db", metavar="FILE.sqlite")
    p.add_argument("--out", required=True, metavar="CSV")
    p.add_argument("--drop-linkage", action="store_true",
                   help="delete the table linking uids to platform IDs")
    p.set_defaults(handler=_export)
