"""Fairness audit reports: a self-contained HTML page and a Markdown summary.

The HTML report embeds its plots as base64 PNGs and uses no script, font or style sheet from
the network, so it opens offline and can be handed on as one file. It holds:

* each audited metric per group and intersection cell under each condition (profile
  assignment), with bootstrap intervals, in the order and with the labels of
  :data:`simstudy.metrics.METRICS`;
* the gaps between groups per condition, as a forest plot and as tables with intervals and
  adjusted permutation p-values; contrasts of gaps between conditions;
* one plain-language paragraph per finding (:mod:`simstudy.analysis.findings`): hidden
  disparities and, when the run has the conditions of the fairness case study, a check of its
  four findings (:mod:`simstudy.analysis.case_study`);
* the run's provenance from ``manifest.json``: scenario, seeds, package versions, model hashes.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.plotting import plt, png_base64
from ..core.store import atomic_write_text, write_csv
from ..metrics import METRICS
from .audit import AuditResult
from .case_study import CASE_STUDY_CONDITIONS, case_study_findings, has_case_study
from .findings import Finding, fmt_ci, hidden_findings, metric_label

__all__ = ["load_run", "collect_findings", "render_html", "render_markdown", "write_report",
           "metric_order"]

def metric_order(result: AuditResult, source: str = "recourse") -> list[str]:
    """The metrics an audit holds for one source, in the order of the metric table."""
    g = result.groups
    present = set(g.loc[g["source"] == source, "metric"]) if len(g) else set()
    return [m for m in dict.fromkeys([*METRICS, *sorted(present)]) if m in present]


def load_run(run_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame | None, dict]:
    """Reads a run directory: recourse rows, event-world outcomes (if any) and the manifest.

    Event-world outcomes come from ``outcomes.parquet`` (one condition) or
    ``sim/<condition>/outcomes.parquet`` (several); a ``condition`` column is added.
    """
    run = Path(run_dir)
    manifest = json.loads((run / "manifest.json").read_text())
    recourse = pd.read_parquet(run / "recourse.parquet")
    parts = []
    if (run / "outcomes.parquet").exists():
        conds = recourse["condition"].unique()
        parts.append(pd.read_parquet(run / "outcomes.parquet").assign(condition=str(conds[0])))
    for path in sorted((run / "sim").glob("*/outcomes.parquet")) if (run / "sim").exists() else ():
        parts.append(pd.read_parquet(path).assign(condition=path.parent.name))
    outcomes = pd.concat(parts, ignore_index=True) if parts else None
    return recourse, outcomes, manifest


# -- plots ------------------------------------------------------------------------------------
def plot_cells(result: AuditResult, policy: str, metrics: Sequence[str],
               source: str = "recourse") -> str | None:
    """Each metric per intersection cell (or group) under each condition."""
    g = result.groups
    g = g[(g["source"] == source) & (g["policy"] == policy) & g["metric"].isin(metrics)]
    if not len(g):
        return None
    inter = g[g["grouping"].str.contains(" x ")]
    g = inter if len(inter) else g[g["grouping"] != "all"]
    conds = list(dict.fromkeys(g["condition"]))
    groups = list(dict.fromkeys(g["group"]))
    metrics = [m for m in metrics if m in set(g["metric"])]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics), 3.4), squeeze=False)
    width = 0.8 / max(len(groups), 1)
    for ax, m in zip(axes[0], metrics, strict=True):
        for k, grp in enumerate(groups):
            sub = g[(g["metric"] == m) & (g["group"] == grp)].set_index("condition")
            sub = sub.reindex(conds)
            x = np.arange(len(conds)) + (k - (len(groups) - 1) / 2) * width
            err = np.vstack([sub["estimate"] - sub["ci_low"], sub["ci_high"] - sub["estimate"]])
            ax.errorbar(x, sub["estimate"], yerr=np.nan_to_num(err), fmt="o", ms=4, capsize=2,
                        label=grp)
        ax.set_xticks(np.arange(len(conds)), conds)
        ax.set_title(metric_label(m), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="best")
    fig.suptitle(f"{policy}: per group under each condition (95% bootstrap intervals)",
                 fontsize=10)
    fig.tight_layout()
    return png_base64(fig)


def plot_gaps(result: AuditResult, policy: str, metrics: Sequence[str],
              source: str = "recourse") -> str | None:
    """Forest plot of the single-attribute gaps per condition."""
    g = result.gaps
    if not len(g):
        return None
    g = g[(g["source"] == source) & (g["policy"] == policy) & g["metric"].isin(metrics)
          & ~g["grouping"].str.contains(" x ")]
    if not len(g):
        return None
    metrics = [m for m in metrics if m in set(g["metric"])]
    comps = list(dict.fromkeys(g["comparison"]))
    conds = list(dict.fromkeys(g["condition"]))
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.6 * len(metrics), 0.9 + 0.35 *
                                                        len(comps) * len(conds)), squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        labels, y = [], 0
        for comp in comps:
            for cond in conds:
                r = g[(g["metric"] == m) & (g["comparison"] == comp) & (g["condition"] == cond)]
                if len(r):
                    r = r.iloc[0]
                    color = "C3" if r["significant"] else "C0"
                    ax.errorbar(r["estimate"], y, xerr=[[r["estimate"] - r["ci_low"]],
                                                        [r["ci_high"] - r["estimate"]]],
                                fmt="o", ms=4, capsize=2, color=color)
                labels.append(f"{comp.split(': ')[1]} | {cond}")
                y += 1
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_yticks(np.arange(len(labels)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_title(f"gap in {metric_label(m)}", fontsize=10)
    fig.suptitle(f"{policy}: gaps (red: significant after correction)", fontsize=10)
    fig.tight_layout()
    return png_base64(fig)


# -- tables -----------------------------------------------------------------------------------
def _with_ci(df: pd.DataFrame, col: str = "estimate") -> pd.Series:
    return pd.Series([fmt_ci(e, lo, hi) for e, lo, hi in
                      zip(df[col], df["ci_low"], df["ci_high"], strict=True)], index=df.index)


def group_table(result: AuditResult, source: str = "recourse") -> pd.DataFrame:
    """Wide table: one row per policy x condition x group, one column per metric."""
    g = result.groups
    g = g[g["source"] == source].copy()
    if not len(g):
        return pd.DataFrame()
    g["value"] = [f"{e:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(e) else "n/a"
                  for e, lo, hi in zip(g["estimate"], g["ci_low"], g["ci_high"], strict=True)]
    wide = g.pivot_table(index=["policy", "condition", "grouping", "group"], columns="metric",
                         values="value", aggfunc="first", sort=False)
    wide.columns.name = None
    return wide.reset_index()[["policy", "condition", "grouping", "group",
                               *[m for m in dict.fromkeys(g["metric"]) if m in wide.columns]]]


def gap_table(result: AuditResult, source: str = "recourse") -> pd.DataFrame:
    g = result.gaps
    g = g[g["source"] == source]
    if not len(g):
        return pd.DataFrame()
    return pd.DataFrame({
        "policy": g["policy"], "condition": g["condition"], "metric": g["metric"],
        "comparison": g["comparison"], "gap [95% CI]": _with_ci(g),
        "p": g["p_value"].map(lambda v: f"{v:.3g}"),
        "adjusted p": g["p_adjusted"].map(lambda v: f"{v:.3g}"),
        "significant": g["significant"].map({True: "yes", False: "no"})})


def contrast_table(result: AuditResult, source: str = "recourse") -> pd.DataFrame:
    c = result.contrasts
    c = c[c["source"] == source] if len(c) else c
    if not len(c):
        return pd.DataFrame()
    c = c[~c["comparison"].str.contains(" x ")]
    return pd.DataFrame({
        "policy": c["policy"], "metric": c["metric"], "comparison": c["comparison"],
        "condition": c["condition"], "versus": c["versus"],
        "gap": c["gap"].map(lambda v: f"{v:+.3f}"),
        "gap (versus)": c["gap_versus"].map(lambda v: f"{v:+.3f}"),
        "difference [95% CI]": _with_ci(c)})


# -- provenance -------------------------------------------------------------------------------
def provenance(manifest: dict, run_dir: str | Path | None = None) -> dict:
    """The facts about the run that a reader needs to reproduce it."""
    reps = manifest.get("replications", [])
    return {
        "run directory": str(run_dir) if run_dir is not None else "",
        "scenario": manifest.get("scenario_name", ""),
        "scenario file": manifest.get("scenario_file", ""),
        "resolved scenario sha256": manifest.get("resolved_sha256", ""),
        "status": manifest.get("status", ""),
        "base seed": manifest.get("base_seed", ""),
        "replications": len(reps),
        "replication seeds": ", ".join(str(r.get("seed")) for r in reps),
        "decision models (sha256, first 12)": ", ".join(
            str(r.get("decision_model", {}).get("state_dict_sha256", ""))[:12] for r in reps),
        "test accuracy": ", ".join(
            f"{r.get('decision_model', {}).get('test_accuracy', float('nan')):.3f}"
            for r in reps),
        "versions": ", ".join(f"{k} {v}" for k, v in manifest.get("versions", {}).items()),
    }


# -- rendering --------------------------------------------------------------------------------
_CSS = """
body{font-family:sans-serif;max-width:1100px;margin:1.5em auto;color:#222;line-height:1.4}
table{border-collapse:collapse;font-size:12px;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#f0f0f0} .ok{color:#176317} .no{color:#a31515}
img{max-width:100%} details{margin:1em 0} pre{font-size:11px;background:#f7f7f7;padding:6px}
"""


def _policies(result: AuditResult) -> list[str]:
    return list(dict.fromkeys(result.groups["policy"])) if len(result.groups) else []


def _nothing_found(heading: str, result: AuditResult) -> str:
    """What an empty findings section says: nothing found, or not assessed (no baseline)."""
    if heading.startswith("Hidden") and result.settings.get("baseline") is None:
        return ("Not assessed: the run has no baseline condition; name the no-personalization "
                "condition with `baseline:` or --baseline.")
    return "None found."


def collect_findings(result: AuditResult, conditions: Mapping[str, str] = CASE_STUDY_CONDITIONS
                     ) -> dict[str, list[Finding]]:
    """Findings by heading: the case-study check per policy (if applicable) and hidden gaps."""
    out: dict[str, list[Finding]] = {}
    if has_case_study(result, conditions):
        for policy in _policies(result):
            out[f"Case-study findings: {policy}"] = case_study_findings(result, policy,
                                                                        conditions)
    out["Hidden disparities"] = hidden_findings(result)
    return out


def render_html(result: AuditResult, manifest: dict, run_dir: str | Path | None = None,
                conditions: Mapping[str, str] = CASE_STUDY_CONDITIONS,
                notes: str = "") -> str:
    """The self-contained HTML report."""
    parts = [*_html_head(result, manifest, notes), *_html_findings(result, conditions),
             *_html_figures(result)]
    for source in dict.fromkeys(result.groups["source"]) if len(result.groups) else ():
        parts += _html_tables(result, source)
    parts += _html_provenance(result, manifest, run_dir)
    return "\n".join(parts)


def _method(s: dict) -> str:  # how the figures were made, for the HTML and Markdown reports
    return ("Recourse metrics per group and intersection of groups, for every policy and "
            "condition. Estimates are means over replications of the within-replication group "
            f"means; intervals are {100 * (1 - s['alpha']):.0f}% percentile bootstrap intervals "
            f"({s['n_bootstrap']} resamples of people within replication and cell), except a "
            "group's proportion, which gets the Wilson score interval at its effective sample "
            "size (as in summary.csv); p-values "
            f"come from {s['n_permutations']} permutations of group labels within replication "
            f"and are adjusted ({s['correction']}, family: {s['family']}). Cost is unweighted "
            "so that conditions compare." + (f" Codes: {s['codes']}." if s.get("codes") else ""))


def _html_head(result: AuditResult, manifest: dict, notes: str) -> list[str]:
    e = html.escape
    s = result.settings
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Fairness audit: {e(str(manifest.get('scenario_name', '')))}</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<h1>Fairness audit: {e(str(manifest.get('scenario_name', '')))}</h1>",
             f"<p>{e(_method(s))}</p>"]
    if notes:
        parts.append(f"<p><b>Note.</b> {e(notes)}</p>")
    return parts


def _html_findings(result: AuditResult, conditions: Mapping[str, str]) -> list[str]:
    e = html.escape
    parts = []
    for heading, findings in collect_findings(result, conditions).items():
        parts.append(f"<h2>{e(heading)}</h2>")
        if not findings:
            parts.append(f"<p>{e(_nothing_found(heading, result))}</p>")
        for f in findings:
            mark = ("" if f.reproduced is None else
                    " <span class='ok'>(reproduced)</span>" if f.reproduced else
                    " <span class='no'>(not reproduced)</span>")
            if heading.startswith("Hidden"):
                mark = ""
            parts.append(f"<h3>{e(f.title)}{mark}</h3><p>{e(f.text)}</p>")
    return parts


def _html_figures(result: AuditResult) -> list[str]:
    e = html.escape
    recourse_metrics = metric_order(result, "recourse")
    parts = ["<h2>Figures</h2>"]
    for policy in _policies(result):
        for title, png in (
                ("Metrics by group under each condition",
                 plot_cells(result, policy, recourse_metrics)),
                ("Gaps with intervals", plot_gaps(result, policy, recourse_metrics)),
                ("Event world", plot_cells(result, policy, metric_order(result, "event world"),
                                           "event world"))):
            if png:
                parts.append(f"<h3>{e(policy)}: {e(title)}</h3>"
                             f"<img alt='{e(title)}' src='data:image/png;base64,{png}'>")
    return parts


def _html_tables(result: AuditResult, source: str) -> list[str]:
    e = html.escape
    parts = [f"<h2>Groups ({e(source)})</h2>",
             group_table(result, source).to_html(index=False, border=0),
             f"<h2>Gaps ({e(source)})</h2>",
             gap_table(result, source).to_html(index=False, border=0)]
    ct = contrast_table(result, source)
    if len(ct):
        parts.append(f"<h2>Gaps compared between conditions ({e(source)})</h2>"
                     "<p>Difference of a gap between two conditions, with a paired bootstrap "
                     "interval (the conditions face the same people).</p>")
        parts.append(ct.to_html(index=False, border=0))
    return parts


def _html_provenance(result: AuditResult, manifest: dict,
                     run_dir: str | Path | None) -> list[str]:
    e = html.escape
    parts = ["<h2>Provenance</h2><table>"]
    for k, v in provenance(manifest, run_dir).items():
        parts.append(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>")
    parts.append("</table><details><summary>Resolved scenario</summary><pre>"
                 f"{e(json.dumps(manifest.get('resolved', {}), indent=1))}</pre></details>")
    parts.append(f"<p>Audit settings: {e(json.dumps(result.settings))}</p></body></html>")
    return parts


def _md_table(df: pd.DataFrame) -> str:
    if not len(df):
        return "_none_\n"
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def render_markdown(result: AuditResult, manifest: dict, run_dir: str | Path | None = None,
                    conditions: Mapping[str, str] = CASE_STUDY_CONDITIONS,
                    notes: str = "") -> str:
    """A Markdown summary: findings, the single-attribute gaps, and provenance.

    References:
        Those of :func:`~simstudy.analysis.audit.audit` (Efron & Tibshirani 1993; Holm 1979).

    Example:
        >>> import numpy as np, pandas as pd
        >>> from simstudy.analysis.audit import audit
        >>> rows = pd.DataFrame({"replication": 0, "condition": "c", "policy": "p",
        ...     "applicant_id": np.arange(40), "gender": np.arange(40) % 2,
        ...     "found": True, "valid": np.arange(40) % 3 > 0})
        >>> result = audit(rows, by=["gender"], n_bootstrap=20, n_permutations=20)
        >>> text = render_markdown(result, {"scenario_name": "example"})
        >>> text.splitlines()[0], "## Gaps between groups" in text
        ('# Fairness audit: example', True)
    """
    s = result.settings
    out = [f"# Fairness audit: {manifest.get('scenario_name', '')}\n",
           f"{_method(s)}\n"]
    if notes:
        out.append(f"**Note.** {notes}\n")
    for heading, findings in collect_findings(result, conditions).items():
        out.append(f"## {heading}\n")
        if not findings:
            out.append(f"{_nothing_found(heading, result)}\n")
        for f in findings:
            mark = "" if f.reproduced is None or heading.startswith("Hidden") else (
                " (reproduced)" if f.reproduced else " (not reproduced)")
            out.append(f"**{f.title}{mark}.** {f.text}\n")
    gaps = gap_table(result)
    if len(gaps):
        gaps = gaps[~gaps["comparison"].str.contains(" x ")]
    out.append("## Gaps between groups\n")
    out.append(_md_table(gaps))
    out.append("## Provenance\n")
    out.append(_md_table(pd.DataFrame(list(provenance(manifest, run_dir).items()),
                                      columns=["item", "value"])))
    return "\n".join(out)


def write_report(result: AuditResult, manifest: dict, out: str | Path,
                 run_dir: str | Path | None = None,
                 conditions: Mapping[str, str] = CASE_STUDY_CONDITIONS,
                 notes: str = "") -> dict[str, Path]:
    """Writes ``out`` (HTML), the Markdown summary beside it and the audit tables as CSV."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = {"html": out, "markdown": out.with_suffix(".md")}
    atomic_write_text(out, render_html(result, manifest, run_dir, conditions, notes))
    atomic_write_text(paths["markdown"],
                      render_markdown(result, manifest, run_dir, conditions, notes))
    for name in ("groups", "gaps", "contrasts", "extremes", "hidden"):
        path = out.with_name(f"{out.stem}_{name}.csv")
        write_csv(getattr(result, name), path)
        paths[name] = path
    return paths
