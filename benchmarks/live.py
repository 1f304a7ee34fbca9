"""Live-study load: page latency with many concurrent bot participants, answers lost, balance.

Starts ``simstudy serve`` on the study file (a copy with ``target_per_condition`` raised so that
every bot is admitted) on a free port with a fresh database, runs ``--participants`` bots with
``--concurrency`` at once (every bot walks the real pages without pauses, a far heavier load
than people answering every 20-60 s; ``--think LOW HIGH`` adds pauses), and prints JSON:

- ``latency_ms``: median and p95 per page class, with ``rating`` (a rating answer and the next
  page), ``recourse`` (the stated actionability and the page that computes the recourse or the
  first HARE question) and ``hare`` (a HARE answer and the next question or the final recourse);
- ``answers_lost``: answers the server confirmed (redirect to the next page) that are not in the
  database;
- ``assignment_imbalance``: largest minus smallest number of participants per condition.

    python benchmarks/live.py --participants 100 --concurrency 100
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(ROOT / "studies" / "personalization.yaml"))
    ap.add_argument("--participants", type=int, default=100)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ordered", action="store_true",
                    help="bots enter one after another (as `simstudy bots` does for a "
                         "reproducible export); default: all at once, the heavier load")
    ap.add_argument("--think", type=float, nargs=2, default=None, metavar=("LOW", "HIGH"),
                    help="seconds each bot pauses before an answer (default: none, the "
                         "heaviest load)")
    args = ap.parse_args()

    import torch

    from simstudy.study.live.bots import run_bots
    from simstudy.study.live.commands import pseudonym_key
    from simstudy.study.live.engine import LiveEngine
    from simstudy.study.live.store import pseudonym

    torch.set_num_threads(1)
    work = Path(tempfile.mkdtemp(prefix="simstudy-live-bench-"))
    doc = yaml.safe_load(Path(args.study).read_text())
    n_cond = len(doc["study"]["live"].get("conditions") or doc["study"].get("policies")
                 or doc["policies"])
    doc["study"]["live"]["target_per_condition"] = -(-args.participants // n_cond)
    study = work / "study.yaml"
    study.write_text(yaml.safe_dump(doc, sort_keys=False))
    port = _free_port()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen([sys.executable, "-m", "simstudy.cli", "serve", str(study), "--db",
                               str(work / "s.sqlite"), "--port", str(port)], env=env,
                              stderr=subprocess.DEVNULL)
    try:
        engine = LiveEngine(study).prepare()
        from simstudy.study.live.commands import _wait_ready

        _wait_ready(f"http://127.0.0.1:{port}", 600)
        t0 = time.time()
        report = run_bots(engine, f"http://127.0.0.1:{port}", args.participants,
                          args.concurrency, args.seed, ordered=args.ordered,
                          think=tuple(args.think) if args.think else None)
        seconds = time.time() - t0
    finally:
        server.terminate()
        server.wait(timeout=30)
    key, _ = pseudonym_key(engine.scenario.seed)
    db = sqlite3.connect(work / "s.sqlite")
    stored = set(db.execute("SELECT uid, page FROM answers").fetchall())
    lost = sum((pseudonym(f"BOT-PID-{n}", key), page) not in stored
               for n, page in report.submitted)
    counts = dict(db.execute("SELECT condition, COUNT(*) FROM participants WHERE condition IS "
                             "NOT NULL GROUP BY condition").fetchall())
    summary = report.summary()
    out = {
        "participants": args.participants, "concurrency": args.concurrency,
        "ordered_entry": args.ordered, "think_seconds": args.think,
        "cores": os.cpu_count(), "completed": summary.get("completed", 0),
        "errors": summary["errors"], "seconds": round(seconds, 1),
        "answers_submitted": len(report.submitted), "answers_lost": lost,
        "assignment": counts,
        "assignment_imbalance": max(counts.values()) - min(counts.values()) if counts else None,
        "latency_ms": summary["latency_ms"],
        "goal_ms": {"rating_p95": 300, "recourse_and_hare_p95": 1000},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
