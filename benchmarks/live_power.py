"""Power of a live study against bot studies run through the live server and `analyze`.

For the study file (default: the shipped live study) at one N (analysed participants, a
multiple of the conditions), this runs

1. ``simstudy power`` on a copy of the file whose ``power.participants`` is ``[N]`` and
   ``target_per_condition`` is ``N / k``: the simulated power of each hypothesis with its
   Clopper-Pearson interval;
2. ``--studies`` bot studies, each through the live server's application (the Starlette app of
   ``simstudy serve`` with its study flow and a fresh SQLite database, served in this process
   over an in-process ASGI transport instead of a socket) with bots walking every page one
   after another (``simstudy bots``' crowd, seed = the study's index), until the server turns
   newcomers away; each study's database is exported (``simstudy export``) and analysed by
   ``simstudy analyze EXPORT STUDY`` (its exclusions, models and hypotheses);

and prints, per hypothesis, the share of bot studies that rejected it with its interval beside
the simulated power, and whether each lies within the other's 95% interval. Bot studies are
appended to ``OUT/bots.jsonl`` as they finish, so an interrupted run resumes.

    nice -n 10 python benchmarks/live_power.py --n 30 --studies 100 --out runs/live_power \
        [--pool runs/study_power]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _study_copy(source: Path, work: Path, n: int, simulations: int) -> tuple[Path, int]:
    doc = yaml.safe_load(source.read_text())
    study = doc["study"]
    k = len(study["live"].get("conditions") or study.get("policies") or doc["policies"])
    if n % k:
        sys.exit(f"--n {n} is not a multiple of the {k} conditions")
    study["live"]["target_per_condition"] = n // k
    study["power"]["participants"] = [n]
    study["power"]["simulations"] = simulations
    study["power"].pop("sensitivity", None)
    path = work / "study.yaml"
    text = yaml.safe_dump(doc, sort_keys=False)
    if not path.exists() or path.read_text() != text:  # another process may be reading it
        path.write_text(text)
    return path, k


def _bot_study(engine, study: Path, work: Path, index: int, participants: int) -> dict:
    import httpx

    from simstudy.cli import main as cli
    from simstudy.cli.live_commands import pseudonym_key
    from simstudy.live.app import create_app
    from simstudy.live.bots import run_bots
    from simstudy.live.database import Store
    from simstudy.live.export import export_study
    from simstudy.live.flow import StudyFlow

    here = work / f"bots{index}"
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir()
    t = time.time()
    key, _ = pseudonym_key(engine.scenario.seed)
    flow = StudyFlow(engine, Store(here / "s.sqlite"), key)
    report = run_bots(engine, "http://bots", participants, concurrency=1, seed=index,
                      transport=httpx.ASGITransport(create_app(flow, entry_limit="none")))
    walked = time.time() - t
    export_study(here / "s.sqlite", here / "export" / "study.csv", drop_linkage=True)
    code = cli(["--quiet", "analyze", str(here / "export" / "study.csv"), str(study),
                "--out", str(here / "analysis")])
    if code != 0:
        raise RuntimeError(f"bot study {index}: analyze exited {code}")
    tested = pd.read_csv(here / "analysis" / "hypotheses.csv")
    excluded = here / "analysis" / "exclusions.csv"
    summary = report.summary()
    out = {"study": index, "seconds_bots": round(walked, 1),
           "seconds": round(time.time() - t, 1),
           "statuses": {k: v for k, v in summary.items() if isinstance(v, int)},
           "errors": summary.get("first_error"),
           "excluded": (pd.read_csv(excluded)["reason"].value_counts().to_dict()
                        if excluded.exists() else {}),
           "rejected": {r.hypothesis: bool(r.rejected) for r in tested.itertuples()},
           "failed": {r.hypothesis: bool(r.failed) for r in tested.itertuples()},
           "analysed": {r.hypothesis: int(r.n_participants) for r in tested.itertuples()}}
    shutil.rmtree(here, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(ROOT / "simstudy" / "resources" / "studies"
                                           / "personalization.yaml"))
    ap.add_argument("--n", type=int, default=30, help="analysed participants")
    ap.add_argument("--studies", type=int, default=100, help="bot studies")
    ap.add_argument("--simulations", type=int, default=400, help="simulated studies of power")
    ap.add_argument("--out", default="runs/live_power")
    ap.add_argument("--first", type=int, default=0,
                    help="the first bot study's index (a second process may run a later "
                         "range into the same --out once the first has written power.csv)")
    ap.add_argument("--summarize", action="store_true",
                    help="only summarise the bot studies OUT holds (an interrupted run)")
    ap.add_argument("--pool", default=None, metavar="DIR",
                    help="a power output folder of the same study whose live pool to reuse "
                         "(its key is checked: a pool of another world or code is recomputed)")
    args = ap.parse_args()

    import torch

    from simstudy.cli import main as cli
    from simstudy.live.engine import LiveEngine
    from simstudy.study.power import clopper_pearson

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    study, k = _study_copy(Path(args.study), out, args.n, args.simulations)
    if args.summarize:
        args.studies = 0
    if args.pool:
        (out / "power").mkdir(parents=True, exist_ok=True)
        for name in ("live_pool.parquet", "live_pool.parquet.check"):
            shutil.copy(Path(args.pool) / name, out / "power" / name)
    t = time.time()
    fresh = args.first == 0 and not args.summarize
    if fresh and cli(["--quiet", "power", str(study), "--out", str(out / "power"),
                      "--workers", "1"]):
        sys.exit("simstudy power failed")
    power_seconds = time.time() - t
    power = pd.read_csv(out / "power" / "power.csv")
    engine = None if args.summarize else LiveEngine(study).prepare()
    log = out / "bots.jsonl"
    def finished() -> list[dict]:
        return ([json.loads(line) for line in log.read_text().splitlines()]
                if log.exists() else [])

    done = finished()
    have = {d["study"] for d in done}
    for index in range(args.first, args.studies):
        if index in have:
            continue
        row = _bot_study(engine, study, out, index, participants=2 * args.n)
        with log.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"bot study {index}: {row['seconds']} s, rejected {row['rejected']}",
              file=sys.stderr, flush=True)
    done = sorted({d["study"]: d for d in finished()}.values(), key=lambda d: d["study"])
    result = {"study": args.study, "n": args.n, "conditions": k,
              "power_simulations": args.simulations, "power_seconds": round(power_seconds, 1),
              "bot_studies": len(done),
              "seconds_per_bot_study": round(sum(d["seconds"] for d in done)
                                             / max(len(done), 1), 1),
              "hypotheses": []}
    for _, r in power[power["n"] == args.n].iterrows():
        name = r["hypothesis"]
        if name == "all":
            hits = [all(d["rejected"].values()) for d in done]
            fails = [any(d["failed"].values()) for d in done]
        elif name in (done[0]["rejected"] if done else {}):
            hits = [d["rejected"][name] for d in done]
            fails = [d["failed"][name] for d in done]
        else:
            continue
        fitted = [h for h, f in zip(hits, fails, strict=True) if not f]
        x, m = sum(fitted), len(fitted)
        lo, hi = clopper_pearson(x, m) if m else (float("nan"), float("nan"))
        share = x / m if m else float("nan")
        result["hypotheses"].append({
            "hypothesis": name, "power": round(float(r["power"]), 3),
            "power_interval": [round(float(r["lower"]), 3), round(float(r["upper"]), 3)],
            "bots_rejected": x, "bots_fitted": m, "bots_share": round(share, 3),
            "bots_interval": [round(lo, 3), round(hi, 3)],
            "share_in_power_interval": bool(r["lower"] <= share <= r["upper"]),
            "power_in_bots_interval": bool(lo <= r["power"] <= hi)})
    (out / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
