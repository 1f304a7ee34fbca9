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
- ``assignment_imbalance``: largest minus smallest number of participants per condition;
- ``cpu_ms_per_step``: CPU time (``time.process_time``, one thread, in this process) of one
  recourse step per condition, HARE's first step and its later ones, over 20 simulated people:
  the work a page costs, apart from the machine's load; ``<condition>_first_batched``: the
  same people's first steps of a refining condition as a burst has them, their bases and
  first candidates computed in one batch (``batch_ms``), then each step (``median``), and
  their total per person;
- ``throughput``: answers per second ``X`` over the run; the mean latency of an answer (its
  POST and the next page, every class); the CPU milliseconds per answer of the server (its
  process and compute processes, from ``/proc``; ``server_pages``: the server's own process,
  which answers the pages; ``server_compute``: its compute processes, the recourse steps) and
  of the bots (this process);
  ``X_max = cores / (server + bots CPU per answer)``, the most the machine could serve; and,
  by Little's law for a closed loop of ``N`` bots with mean think time ``Z``,
  ``N = X (R + Z)``: the throughput a mean latency of 300 ms needs while all ``N`` walk,
  ``N / (0.3 + Z)``, the least mean latency the machine allows then, ``N / X_max - Z``, and
  the number of bots walking on average over the run, ``X (R + Z)`` (fewer than ``N``: they
  enter together and finish apart).

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
# one thread for the BLAS and OpenMP pools of this process too (the bots, ``cpu_ms_per_step``),
# read when numpy and torch load: as the server is given (LIVE_SERVER_RESULTS.md, "Threads of
# the benchmark's own process")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree_cpu(pid: int, descendants: bool = True) -> float | None:
    """CPU seconds (user + system) of process ``pid`` and its living descendants (or of the
    process alone), from ``/proc`` (``None`` where there is none)."""
    proc = Path("/proc")
    if not (proc / str(pid)).exists():
        return None
    if not descendants:
        fields = (proc / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for d in proc.iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # after the name: state, ppid, ..., utime (14th field of the line), stime (15th)
            stats[int(d.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    tree, total = {pid}, 0.0
    for _ in range(8):  # descendants, generation by generation
        tree |= {p for p, (parent, _) in stats.items() if parent in tree}
    for p in tree:
        total += stats.get(p, (0, 0.0))[1]
    return total


def cpu_per_step(engine, people: int = 20) -> dict:
    """Median and p95 CPU milliseconds of the recourse steps (see the module docstring)."""
    import numpy as np

    crowd = engine.people()
    feedback = crowd.feedback()
    times: dict[str, list[float]] = {}
    for row in range(people):
        x, scores = crowd.x[row].tolist(), crowd.reported.scores[row].tolist()
        index = 10_000 + row
        for condition in engine.conditions:
            answers: list = []
            for k in range(64):
                t = time.process_time()
                step = engine.recourse_step(index, condition, x, scores, answers)
                name = condition if not engine.fitted_[condition].asks_questions else (
                    f"{condition}_first" if k == 0 else f"{condition}_next")
                times.setdefault(name, []).append(time.process_time() - t)
                if "items" in step:
                    break
                q = step["question"]
                ids = crowd.ids[row:row + 1]
                a = np.array([q["a"]])
                yes = (feedback.prefer(ids, a, np.array([q["b"]])) if q["kind"] == "prefer"
                       else feedback.accept(ids, a))
                answers.append((q["kind"], bool(yes[0])))
    out = {k: {"n": len(v), "median": round(1000 * float(np.median(v)), 1),
               "p95": round(1000 * float(np.percentile(v, 95)), 1)} for k, v in times.items()}
    # the same people's first steps of every refining condition as a burst has them: their
    # bases and first candidates in one batch (engine.prefill), then each step
    for condition in [c for c in engine.conditions if engine.refines(c)]:
        steps = [(20_000 + row, condition, crowd.x[row].tolist(),
                  crowd.reported.scores[row].tolist(), []) for row in range(people)]
        t = time.process_time()
        engine.prefill(steps)
        batch = time.process_time() - t
        after = []
        for step in steps:
            t = time.process_time()
            engine.recourse_step(*step)
            after.append(time.process_time() - t)
        out[f"{condition}_first_batched"] = {
            "n": people, "batch_ms": round(1000 * batch, 1),
            "median": round(1000 * float(np.median(after)), 1),
            "per_person_ms": round(1000 * (batch + sum(after)) / people, 1)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(ROOT / "simstudy" / "resources" / "studies"
                                           / "personalization.yaml"))
    ap.add_argument("--participants", type=int, default=100)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ordered", action="store_true",
                    help="bots enter one after another (as `simstudy bots` does for a "
                         "reproducible export); default: all at once, the heavier load")
    ap.add_argument("--think", type=float, nargs=2, default=None, metavar=("LOW", "HIGH"),
                    help="seconds each bot pauses before an answer (default: none, the "
                         "heaviest load)")
    ap.add_argument("--compute-workers", type=int, default=1, metavar="N",
                    help="the server's compute processes (as `serve --compute-workers`, "
                         "default 1)")
    args = ap.parse_args()

    import torch

    from simstudy.cli.live_commands import pseudonym_key
    from simstudy.live.bots import run_bots
    from simstudy.live.database import pseudonym
    from simstudy.live.engine import LiveEngine

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
                               str(work / "s.sqlite"), "--port", str(port),
                               "--entry-limit", "none",
                               "--compute-workers", str(args.compute_workers)], env=env,
                              stderr=subprocess.DEVNULL)
    try:
        engine = LiveEngine(study).prepare()
        cpu = cpu_per_step(engine)
        from simstudy.cli.arguments import check_same_study

        check_same_study(study, f"http://127.0.0.1:{port}", 600)  # ready, serving this file
        own0 = process_tree_cpu(server.pid, descendants=False)
        server0, bots0, t0 = process_tree_cpu(server.pid), time.process_time(), time.time()
        report = run_bots(engine, f"http://127.0.0.1:{port}", args.participants,
                          args.concurrency, args.seed, ordered=args.ordered,
                          think=tuple(args.think) if args.think else None)
        seconds = time.time() - t0
        server1, bots_cpu = process_tree_cpu(server.pid), time.process_time() - bots0
        own1 = process_tree_cpu(server.pid, descendants=False)
    finally:
        server.terminate()
        server.wait(timeout=30)
    key, _ = pseudonym_key(engine.scenario.seed)
    db = sqlite3.connect(work / "s.sqlite")
    stored = set(db.execute("SELECT uid, page FROM answers").fetchall())
    # the start page's answer is the participant itself
    stored |= {(uid, "start") for (uid,) in db.execute("SELECT uid FROM participants")}
    lost = sum((pseudonym(f"BOT-PID-{n}", key), page) not in stored
               for n, page in report.submitted)
    counts = dict(db.execute("SELECT condition, COUNT(*) FROM participants WHERE condition IS "
                             "NOT NULL GROUP BY condition").fetchall())
    import numpy as np

    summary = report.summary()
    answers = len(report.submitted)
    x = answers / seconds
    think = sum(args.think) / 2 if args.think else 0.0
    per_answer = {"server": None if server0 is None or server1 is None
                  else round(1000 * (server1 - server0) / answers, 2),
                  "server_pages": None if own0 is None or own1 is None
                  else round(1000 * (own1 - own0) / answers, 2),
                  "bots": round(1000 * bots_cpu / answers, 2)}
    if per_answer["server"] is not None and per_answer["server_pages"] is not None:
        per_answer["server_compute"] = round(per_answer["server"] - per_answer["server_pages"], 2)
    n = min(args.participants, args.concurrency)
    x_max = None if per_answer["server"] is None else \
        1000 * (os.cpu_count() or 1) / (per_answer["server"] + per_answer["bots"])
    mean_r = float(np.mean([sec for kind, sec in report.latencies if kind != "entry"]))
    throughput = {
        "answers_per_s": round(x, 1),
        "mean_answer_latency_ms": round(1000 * mean_r, 1),
        "bots_walking_mean": round(x * (mean_r + think), 1),
        "cpu_ms_per_answer": per_answer,
        "answers_per_s_max": None if x_max is None else round(x_max, 1),
        "answers_per_s_for_mean_300ms": round(n / (0.3 + think), 1),
        "least_mean_latency_ms": None if x_max is None else round(
            1000 * max(n / x_max - think, 0.0), 1),
    }
    out = {
        "participants": args.participants, "concurrency": args.concurrency,
        "ordered_entry": args.ordered, "think_seconds": args.think,
        "compute_workers": args.compute_workers,
        "cores": os.cpu_count(), "completed": summary.get("completed", 0),
        "errors": summary["errors"], "first_error": summary.get("first_error"),
        "seconds": round(seconds, 1),
        "answers_submitted": answers, "answers_lost": lost,
        "assignment": counts,
        "assignment_imbalance": max(counts.values()) - min(counts.values()) if counts else None,
        "latency_ms": summary["latency_ms"],
        "throughput": throughput,
        "cpu_ms_per_step": cpu,
        "load_average": [round(v, 1) for v in os.getloadavg()],
        "goal_ms": {"rating_p95": 300, "recourse_and_hare_p95": 1000},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
