"""Fairness audit reports: a self-contained HTML page and a Markdown summary.

The HTML report embeds its plots as base64 PNGs and uses no script, font or style sheet from
the network, so it opens offline and can be handed on as one file. It holds:

* each audited metric per group and intersection cell under each condition (profile
  assignment), with bootstrap intervals, in the order and with the labels of
  :data:`simstudy.metrics.METRICS`;
* the gaps between groups per condition, as a forest plot and as tables with intervals and
  adjusted permutation p-values; contrasts of gaps between conditions;
* one plain-language paragraph per finding: hidden disparities and, when the run has the
  conditions of the case study (Section 5.5 of the individual-actionability study, 2026), a
  check of its four findings;
* the run's provenance from ``manifest.json``: scenario, seeds, package versions, model hashes.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..metrics import METRICS
from ..plotting import plt, png_base64
from ..store import atomic_write_text, write_csv
from .audit import AuditResult

__all__ = ["Finding", "load_run", "case_study_findings", "hidden_findings", "render_html",
           "render_markdown", "write_report", "CASE_STUDY_CONDITIONS"]

#: Condition names of the case-study scenario (``scenarios/fairness_case_study.yaml``).
CASE_STUDY_CONDITIONS = {"baseline": "baseline", "random": "random", "income": "income",
                         "race": "race"}

#: The case study compares groups on unweighted cost, so that conditions compare.
_COST = "cost_unweighted"


def _label(metric: str) -> str:
    return METRICS[metric].label if metric in METRICS else metric


def metric_order(result: AuditResult, source: str = "recourse") -> list[str]:
    """The metrics an audit holds for one source, in the order of the metric table."""
    g = result.groups
    present = set(g.loc[g["source"] == source, "metric"]) if len(g) else set()
    return [m for m in dict.fromkeys([*METRICS, *sorted(present)]) if m in present]


@dataclass
class Finding:
    """One finding: a title, whether it holds in this run, and a plain-language paragraph."""

    title: str
    reproduced: bool | None
    text: str


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


def _ci(est: float, lo: float, hi: float, digits: int = 3) -> str:
    if not np.isfinite(est):
        return "n/a"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{est:+.{digits}f}"
    return f"{est:+.{digits}f} [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def _gap(result: AuditResult, policy: str, condition: str, metric: str,
         comparison: str) -> pd.Series | None:
    g = result.gaps
    if not len(g):
        return None
    sel = g[(g["source"] == "recourse") & (g["policy"] == policy) & (g["condition"] == condition)
            & (g["metric"] == metric) & (g["comparison"] == comparison)]
    return sel.iloc[0] if len(sel) else None


def _contrast(result: AuditResult, policy: str, metric: str, comparison: str, condition: str,
              versus: str) -> pd.Series | None:
    c = result.contrasts
    if not len(c):
        return None
    sel = c[(c["source"] == "recourse") & (c["policy"] == policy) & (c["metric"] == metric)
            & (c["comparison"] == comparison) & (c["condition"] == condition)
            & (c["versus"] == versus)]
    return sel.iloc[0] if len(sel) else None


def _fmt_gap(row: pd.Series | None) -> str:
    if row is None:
        return "n/a"
    return f"{_ci(row['estimate'], row['ci_low'], row['ci_high'])}, adjusted p = " \
           f"{row['p_adjusted']:.3g}"


def _excludes_zero(row: pd.Series | None, sign: int) -> bool:
    if row is None:
        return False
    return bool(row["ci_low"] > 0) if sign > 0 else bool(row["ci_high"] < 0)


def case_study_findings(result: AuditResult, policy: str,
                        conditions: Mapping[str, str] = CASE_STUDY_CONDITIONS) -> list[Finding]:
    """Checks the four findings of the fairness case study for one policy.

    1. Baseline: female cost higher and log-density lower than male.
    2. Income-dependent profiles widen the gender cost gap more than random ones
       (``gap(income) - gap(random) > 0``, paired bootstrap interval).
    3. Race-correlated profiles create a race gap the baseline does not have (a hidden
       disparity in cost or log-density).
    4. Non-white females have the highest mean cost of the four gender x race cells under
       race-correlated profiles (margin over the runner-up, bootstrap interval).

    A finding counts as reproduced when its interval(s) exclude zero in the stated direction; a
    gap present with the opposite sign is "not reproduced".
    """
    b, rnd, inc, race = (conditions[k] for k in ("baseline", "random", "income", "race"))
    sex, eth = "gender: female - male", "race: non-white - white"
    out = []
    cost, logp = _gap(result, policy, b, _COST, sex), _gap(result, policy, b, "logp_cf", sex)
    ok = _excludes_zero(cost, +1) and _excludes_zero(logp, -1)
    out.append(Finding(
        "1. Without personalization, females already fare worse", ok,
        f"Under the baseline ({b}: every applicant may act on every feature), the female - male "
        f"gap in unweighted cost is {_fmt_gap(cost)} and in counterfactual log-density "
        f"{_fmt_gap(logp)}. " + ("Females get costlier and less plausible recourse, as in the "
                                 "paper." if ok else "Not reproduced: the paper finds "
                                 "costlier and less plausible recourse for females.")))
    c_cost = _contrast(result, policy, _COST, sex, inc, rnd)
    c_logp = _contrast(result, policy, "logp_cf", sex, inc, rnd)
    g = {k: _gap(result, policy, c, _COST, sex) for k, c in (("b", b), ("r", rnd), ("i", inc))}
    ok = _excludes_zero(c_cost, +1)
    text = (f"The female - male cost gap is {_fmt_gap(g['b'])} under the baseline, "
            f"{_fmt_gap(g['r'])} under random profiles and {_fmt_gap(g['i'])} under "
            f"income-dependent profiles. Income-dependent minus random: cost gap "
            f"{_ci(*_triple(c_cost))}, log-density gap {_ci(*_triple(c_logp))} "
            f"(paired bootstrap). ")
    text += ("Income-dependent profiles widen the gender gap more than random ones, as in the "
             "paper." if ok else
             "Income-dependent profiles do not widen the gender cost gap more than random ones "
             "here: not reproduced.")
    out.append(Finding("2. Income-dependent profiles widen the gender gap", ok, text))
    rows = [_gap(result, policy, c, m, eth) for c in (b, race) for m in (_COST, "logp_cf")]
    hidden = result.hidden
    hid = hidden[(hidden["policy"] == policy) & (hidden["condition"] == race)
                 & (hidden["comparison"] == eth) & hidden["metric"].isin([_COST, "logp_cf"])
                 & (hidden["source"] == "recourse")] if len(hidden) else hidden
    # the paper's direction: non-white applicants get costlier, less plausible recourse
    stated = [(r["metric"] == _COST) == (r["estimate"] > 0) for _, r in hid.iterrows()]
    ok = any(stated) and all(stated)
    text = (f"The non-white - white gap in cost is {_fmt_gap(rows[0])} under the baseline and "
            f"{_fmt_gap(rows[2])} under race-correlated profiles; in log-density "
            f"{_fmt_gap(rows[1])} and {_fmt_gap(rows[3])}. ")
    if len(hid):
        signs = [("non-white costlier" if r["estimate"] > 0 else "non-white cheaper")
                 if r["metric"] == _COST else
                 ("non-white less plausible" if r["estimate"] < 0 else "non-white more plausible")
                 for _, r in hid.iterrows()]
        text += ("Race changes nothing in the world, yet the race-correlated profiles create a "
                 f"race gap in {' and '.join(_label(m) for m in hid['metric'])} that the "
                 f"baseline does not have (direction here: {', '.join(signs)}). ")
        text += ("Non-white applicants fare worse, as in the paper." if ok else
                 "Not reproduced: the paper finds costlier and less plausible recourse for "
                 "non-white applicants, and here the gap runs the other way.")
    else:
        text += "No race gap appears that the baseline lacks: not reproduced."
    out.append(Finding("3. Race-correlated profiles create a race gap from nothing", ok, text))
    ex = result.extremes
    sel = ex[(ex["source"] == "recourse") & (ex["policy"] == policy)
             & (ex["condition"] == race) & (ex["metric"] == _COST)] if len(ex) else ex
    if len(sel):
        e = sel.iloc[0]
        ok = e["highest"] == "female non-white" and e["ci_low"] > 0
        cells = result.groups
        cells = cells[(cells["source"] == "recourse") & (cells["policy"] == policy)
                      & (cells["condition"] == race) & (cells["metric"] == _COST)
                      & (cells["grouping"].str.contains(" x "))]
        listing = "; ".join(f"{r['group']} {r['estimate']:.3f} [{r['ci_low']:.3f}, "
                            f"{r['ci_high']:.3f}]" for _, r in
                            cells.sort_values("estimate", ascending=False).iterrows())
        text = (f"Mean unweighted cost per cell under race-correlated profiles: {listing}. "
                f"Highest: {e['highest']}, ahead of {e['runner_up']} by "
                f"{_ci(e['margin'], e['ci_low'], e['ci_high'])} (highest in "
                f"{100 * e['share_highest']:.0f}% of bootstrap resamples). ")
        text += ("Non-white females fare worst, as in the paper." if ok else
                 "Non-white females do not have the highest cost here: not reproduced.")
        valid = result.groups
        valid = valid[(valid["source"] == "recourse") & (valid["policy"] == policy)
                      & (valid["condition"] == race) & (valid["metric"] == "validity")
                      & (valid["grouping"].str.contains(" x "))]
        if len(valid):
            low = valid.sort_values("estimate").iloc[0]
            text += (f" Lowest validity (share given a recourse that works): {low['group']} "
                     f"{low['estimate']:.3f} [{low['ci_low']:.3f}, {low['ci_high']:.3f}]; "
                     "costs are means among those whose recourse is valid.")
    else:
        ok, text = False, "The run has no gender x race cells under race-correlated profiles."
    out.append(Finding("4. Non-white females fare worst", ok, text))
    return out


def _triple(row: pd.Series | None) -> tuple[float, float, float]:
    if row is None:
        return np.nan, np.nan, np.nan
    return row["estimate"], row["ci_low"], row["ci_high"]


def hidden_findings(result: AuditResult) -> list[Finding]:
    """One "hidden disparity" paragraph per gap absent under the baseline, present elsewhere."""
    out = []
    for _, h in result.hidden.iterrows():
        out.append(Finding(
            f"Hidden disparity: {h['comparison']} in {_label(h['metric'])} "
            f"under {h['condition']} ({h['policy']}, {h['source']})", True,
            f"The gap is {_ci(h['estimate'], h['ci_low'], h['ci_high'])} (adjusted p = "
            f"{h['p_adjusted']:.3g}) under {h['condition']}, but "
            f"{_ci(h['baseline_estimate'], h['baseline_ci_low'], h['baseline_ci_high'])} "
            f"(adjusted p = {h['baseline_p_adjusted']:.3g}) under the baseline condition "
            f"'{result.settings.get('baseline')}': an audit ignoring individual actionability "
            f"would not see it."))
    return out


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
        ax.set_title(_label(m), fontsize=10)
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
        ax.set_title(f"gap in {_label(m)}", fontsize=10)
    fig.suptitle(f"{policy}: gaps (red: significant after correction)", fontsize=10)
    fig.tight_layout()
    return png_base64(fig)


# -- tables -----------------------------------------------------------------------------------
def _with_ci(df: pd.DataFrame, col: str = "estimate") -> pd.Series:
    return pd.Series([_ci(e, lo, hi) for e, lo, hi in
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


def _has_case_study(result: AuditResult, conditions: Mapping[str, str]) -> bool:
    conds = set(result.groups["condition"]) if len(result.groups) else set()
    by = result.settings.get("by", [])
    return set(conditions.values()) <= conds and "gender" in by and "race" in by


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
    if _has_case_study(result, conditions):
        for policy in _policies(result):
            out[f"Case-study findings: {policy}"] = case_study_findings(result, policy,
                                                                        conditions)
    out["Hidden disparities"] = hidden_findings(result)
    return out


def render_html(result: AuditResult, manifest: dict, run_dir: str | Path | None = None,
                conditions: Mapping[str, str] = CASE_STUDY_CONDITIONS,
                notes: str = "") -> str:
    """The self-contained HTML report."""
    e = html.escape
    s = result.settings
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>Fairness audit: {e(str(manifest.get('scenario_name', '')))}</title>",
             f"<style>{_CSS}</style></head><body>",
             f"<h1>Fairness audit: {e(str(manifest.get('scenario_name', '')))}</h1>",
             "<p>Recourse metrics per group and intersection of groups, for every policy and "
             "condition. Estimates are means over replications of the within-replication group "
             f"means; intervals are {100 * (1 - s['alpha']):.0f}% percentile bootstrap "
             f"intervals ({s['n_bootstrap']} resamples of people within replication and cell); "
             f"p-values come from {s['n_permutations']} permutations of group labels within "
             f"replication and are adjusted ({e(s['correction'])}, family: "
             f"{e(s['family'])}). Cost is unweighted so that conditions compare. Codes: gender "
             "0 = female, 1 = male (Loan SCM: male adds to income); race 1 = non-white, "
             "0 = white (a stylized attribute that affects nothing in the world).</p>"]
    if notes:
        parts.append(f"<p><b>Note.</b> {e(notes)}</p>")
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
    recourse_metrics = metric_order(result, "recourse")
    parts.append("<h2>Figures</h2>")
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
    for source in dict.fromkeys(result.groups["source"]) if len(result.groups) else ():
        parts.append(f"<h2>Groups ({e(source)})</h2>")
        parts.append(group_table(result, source).to_html(index=False, border=0))
        parts.append(f"<h2>Gaps ({e(source)})</h2>")
        parts.append(gap_table(result, source).to_html(index=False, border=0))
        ct = contrast_table(result, source)
        if len(ct):
            parts.append(f"<h2>Gaps compared between conditions ({e(source)})</h2>"
                         "<p>Difference of a gap between two conditions, with a paired bootstrap "
                         "interval (the conditions face the same people).</p>")
            parts.append(ct.to_html(index=False, border=0))
    parts.append("<h2>Provenance</h2><table>")
    for k, v in provenance(manifest, run_dir).items():
        parts.append(f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>")
    parts.append("</table><details><summary>Resolved scenario</summary><pre>"
                 f"{e(json.dumps(manifest.get('resolved', {}), indent=1))}</pre></details>")
    parts.append(f"<p>Audit settings: {e(json.dumps(s))}</p></body></html>")
    return "\n".join(parts)


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
    """A Markdown summary: findings, the single-attribute gaps, and provenance."""
    s = result.settings
    out = [f"# Fairness audit: {manifest.get('scenario_name', '')}\n",
           f"{100 * (1 - s['alpha']):.0f}% bootstrap intervals ({s['n_bootstrap']} resamples), "
           f"permutation p-values ({s['n_permutations']} permutations, {s['correction']} "
           f"adjusted per {s['family']}). Gender 0 = female, 1 = male; race 1 = non-white.\n"]
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
