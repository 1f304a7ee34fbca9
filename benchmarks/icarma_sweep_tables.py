"""The iCARMA tables of the individual-actionability study from a finished published-tables sweep.

Reads ``DIR/summary.csv`` of ``simstudy sweep sweeps/icarma_published.yaml --out DIR`` (one row
per preference kind x policy x condition x group) and prints, for every condition, the mean over
the training-seed policies (``icarma-s0``, ``icarma-s1``, ...) with its 95% Student-t interval
over seeds, the best-on-validation policy's figure and the published value, as one JSON object
followed by markdown tables. Every figure comes from the sweep's own study table: the scenarios,
people and metrics a user runs, not a separate evaluation.

    python -m benchmarks.icarma_sweep_tables runs/icarma-published [--json-only]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

from benchmarks.icarma_tables import PUBLISHED
from simstudy.run.summary import mean_ci

METRICS = ("validity", "plausibility", "hap", "cost", "no_recourse", "violation")
SEED_POLICY = re.compile(r"^icarma-s(\d+)$")


def _published_key(condition: str) -> str:
    return condition.replace("-", "_")


def tables(summary: pd.DataFrame) -> dict:
    """``variant -> condition -> metric -> {mean, ci, best, published, seeds}``."""
    rows = summary[summary["group_by"] == "all"]
    out: dict = {}
    for variant, block in rows.groupby("variant", sort=False):
        seeds = block[block["policy"].str.match(SEED_POLICY)]
        best = block[block["policy"] == "icarma-best"].set_index("condition")
        for condition, cells in seeds.groupby("condition", sort=False):
            published = PUBLISHED.get(_published_key(condition))
            entry = {"seeds": sorted(int(SEED_POLICY.match(p).group(1)) for p in cells["policy"])}
            for metric in METRICS:
                mean, low, high = mean_ci(cells[metric].to_numpy(dtype=float))
                pub = None
                if published is not None and metric in ("validity", "plausibility", "hap"):
                    pub = published[("validity", "plausibility", "hap").index(metric)]
                entry[metric] = {
                    "mean": round(mean, 4), "ci": [round(low, 4), round(high, 4)],
                    "per_seed": [round(float(v), 4) for v in cells[metric]],
                    "best": (round(float(best.loc[condition, metric]), 4)
                             if condition in best.index else None),
                    "published": pub}
            out.setdefault(variant, {})[condition] = entry
    return out


def markdown(result: dict) -> str:
    lines = []
    for variant, conditions in result.items():
        lines += [f"### {variant}", "",
                  "| condition | validity | plausibility | hap | cost (valid) | no recourse |"
                  " violations |", "|---|---|---|---|---|---|---|"]
        for condition, entry in conditions.items():
            cells = []
            for metric in ("validity", "plausibility", "hap"):
                m = entry[metric]
                pub = "-" if m["published"] is None else f"{m['published']}"
                cells.append(f"{m['mean']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}] "
                             f"({m['best']:.3f}) {pub}")
            cells += [f"{entry['cost']['mean']:.4f}", f"{entry['no_recourse']['mean']:.3f}",
                      f"{entry['violation']['mean']:.3f}"]
            lines.append(f"| {condition} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_dir", type=Path)
    parser.add_argument("--json-only", action="store_true")
    args = parser.parse_args(argv)
    summary = pd.read_csv(args.sweep_dir / "summary.csv")
    result = tables(summary)
    print(json.dumps(result))
    if not args.json_only:
        print(markdown(result))
    return result


if __name__ == "__main__":
    main()
