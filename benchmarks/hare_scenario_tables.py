"""Markdown tables of finished HARE scenario runs (``scenarios/hare_*.yaml``).

Reads each run directory's ``summary.csv`` (everyone: ``group_by == all``) and, when present,
``contrasts.csv``, and prints per condition x policy the ground-truth dissimilarity (GTD) and
proximity (GTP) of the policy and of its base generator, their ratio, the success rates (a
recourse found) of both, the questions asked, the violations and the 95% intervals over
replications; then every contrast's paired GTD difference. Prints one JSON object first
(``--json-only`` stops there).

    python -m benchmarks.hare_scenario_tables runs/hare_scales runs/hare_budget ...
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

#: summary columns reported when a run has them (policy extras appear only for HARE policies)
COLUMNS = ("gtd", "gtd_base", "gtp", "gtp_base", "no_recourse", "base_found", "queries",
           "violation")


def _interval(row: pd.Series, col: str) -> list[float] | None:
    lo, hi = row.get(f"{col}_ci_low"), row.get(f"{col}_ci_high")
    if lo is None or pd.isna(lo):
        return None
    return [round(float(lo), 4), round(float(hi), 4)]


def run_table(run: Path) -> dict:
    summary = pd.read_csv(run / "summary.csv")
    summary = summary[summary["group_by"] == "all"]
    rows = []
    for _, row in summary.iterrows():
        entry = {"condition": row["condition"], "policy": row["policy"],
                 "replications": int(row["replications"])}
        for col in COLUMNS:
            if col in row and not pd.isna(row[col]):
                entry[col] = round(float(row[col]), 4)
                entry[f"{col}_ci"] = _interval(row, col)
        if "no_recourse" in entry:
            entry["success"] = round(1.0 - entry["no_recourse"], 4)
        if "gtd" in entry and entry.get("gtd_base"):
            entry["gtd_ratio"] = round(entry["gtd"] / entry["gtd_base"], 4)
        rows.append(entry)
    contrasts = []
    path = run / "contrasts.csv"
    if path.exists():
        table = pd.read_csv(path)
        table = table[table["group_by"] == "all"] if "group_by" in table else table
        for _, row in table.iterrows():
            if "gtd" not in row or pd.isna(row["gtd"]):
                continue
            contrasts.append({"condition": row["condition"], "policy": row["policy"],
                              "baseline": row.get("baseline"),
                              "gtd_difference": round(float(row["gtd"]), 4),
                              "ci": _interval(row, "gtd")})
    return {"run": str(run), "rows": rows, "contrasts": contrasts}


def _cell(entry: dict, col: str) -> str:
    if col not in entry:
        return "-"
    ci = entry.get(f"{col}_ci")
    return f"{entry[col]:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def markdown(table: dict) -> str:
    lines = [f"#### {table['run']}", "",
             "| condition | policy | GTD | GTD base | GTD / base | GTP | GTP base | success |"
             " success base | queries | violations |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in table["rows"]:
        ratio = f"{e['gtd_ratio']:.3f}" if "gtd_ratio" in e else "-"
        lines.append(f"| {e['condition']} | {e['policy']} | {_cell(e, 'gtd')} | "
                     f"{_cell(e, 'gtd_base')} | {ratio} | {_cell(e, 'gtp')} | "
                     f"{_cell(e, 'gtp_base')} | {e.get('success', float('nan')):.3f} | "
                     f"{_cell(e, 'base_found')} | {_cell(e, 'queries')} | "
                     f"{_cell(e, 'violation')} |")
    if table["contrasts"]:
        lines += ["", "| condition | policy − baseline | GTD difference [95% CI] |",
                  "|---|---|---|"]
        for c in table["contrasts"]:
            ci = c["ci"] or [float("nan")] * 2
            lines.append(f"| {c['condition']} | {c['policy']} − {c['baseline']} | "
                         f"{c['gtd_difference']:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}] |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--json-only", action="store_true")
    args = parser.parse_args(argv)
    tables = [run_table(run) for run in args.runs]
    print(json.dumps(tables))
    if not args.json_only:
        for table in tables:
            print(markdown(table))
    return tables


if __name__ == "__main__":
    main()
