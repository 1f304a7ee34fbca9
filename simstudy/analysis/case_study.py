"""The fairness case study's four findings, checked on an audit of a run.

The case study (Section 5.5 of the individual-actionability study, 2026;
``scenarios/fairness_case_study.yaml``) audits the oracle on the Loan world under four
assignments of actionability profiles: none (``baseline``: everyone may act on everything),
``random``, ``income``-dependent and ``race``-correlated. It reports four findings, each checked
here from the audit's gaps, contrasts and intersection cells (:func:`case_study_findings`). A
finding counts as reproduced when its interval(s) exclude zero in the stated direction; a gap
present with the opposite sign is "not reproduced".

References:
    "From Universal to Individualized Actionability: Revisiting Personalization in Algorithmic
    Recourse", 2026, Section 5.5 (the fairness case study).

Example:
    >>> sorted(CASE_STUDY_CONDITIONS)
    ['baseline', 'income', 'race', 'random']
"""

from __future__ import annotations

from collections.abc import Mapping

from .audit import AuditResult
from .findings import (
    Finding,
    excludes_zero,
    find_contrast,
    find_gap,
    fmt_ci,
    fmt_gap,
    interval,
    metric_label,
)

__all__ = ["CASE_STUDY_CONDITIONS", "case_study_findings", "has_case_study"]

#: Condition names of the case-study scenario (``scenarios/fairness_case_study.yaml``).
CASE_STUDY_CONDITIONS = {"baseline": "baseline", "random": "random", "income": "income",
                         "race": "race"}

#: The case study compares groups on unweighted cost, so that conditions compare.
_COST = "cost_unweighted"
_SEX, _ETH = "gender: female - male", "race: non-white - white"


def has_case_study(result: AuditResult, conditions: Mapping[str, str]) -> bool:
    """Whether the audit has the case study's conditions and its gender and race groupings."""
    conds = set(result.groups["condition"]) if len(result.groups) else set()
    by = result.settings.get("by", [])
    return set(conditions.values()) <= conds and "gender" in by and "race" in by


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
    return [_baseline_finding(result, policy, b),
            _income_finding(result, policy, b, rnd, inc),
            _race_finding(result, policy, b, race),
            _cell_finding(result, policy, race)]


def _baseline_finding(result: AuditResult, policy: str, b: str) -> Finding:
    cost = find_gap(result, policy, b, _COST, _SEX)
    logp = find_gap(result, policy, b, "logp_cf", _SEX)
    ok = excludes_zero(cost, +1) and excludes_zero(logp, -1)
    return Finding(
        "1. Without personalization, females already fare worse", ok,
        f"Under the baseline ({b}: every applicant may act on every feature), the female - male "
        f"gap in unweighted cost is {fmt_gap(cost)} and in counterfactual log-density "
        f"{fmt_gap(logp)}. " + ("Females get costlier and less plausible recourse, as in the "
                                "paper." if ok else "Not reproduced: the paper finds "
                                "costlier and less plausible recourse for females."))


def _income_finding(result: AuditResult, policy: str, b: str, rnd: str, inc: str) -> Finding:
    c_cost = find_contrast(result, policy, _COST, _SEX, inc, rnd)
    c_logp = find_contrast(result, policy, "logp_cf", _SEX, inc, rnd)
    g = {k: find_gap(result, policy, c, _COST, _SEX)
         for k, c in (("b", b), ("r", rnd), ("i", inc))}
    ok = excludes_zero(c_cost, +1)
    text = (f"The female - male cost gap is {fmt_gap(g['b'])} under the baseline, "
            f"{fmt_gap(g['r'])} under random profiles and {fmt_gap(g['i'])} under "
            f"income-dependent profiles. Income-dependent minus random: cost gap "
            f"{fmt_ci(*interval(c_cost))}, log-density gap {fmt_ci(*interval(c_logp))} "
            f"(paired bootstrap). ")
    text += ("Income-dependent profiles widen the gender gap more than random ones, as in the "
             "paper." if ok else
             "Income-dependent profiles do not widen the gender cost gap more than random ones "
             "here: not reproduced.")
    return Finding("2. Income-dependent profiles widen the gender gap", ok, text)


def _race_finding(result: AuditResult, policy: str, b: str, race: str) -> Finding:
    rows = [find_gap(result, policy, c, m, _ETH) for c in (b, race) for m in (_COST, "logp_cf")]
    hidden = result.hidden
    hid = hidden[(hidden["policy"] == policy) & (hidden["condition"] == race)
                 & (hidden["comparison"] == _ETH) & hidden["metric"].isin([_COST, "logp_cf"])
                 & (hidden["source"] == "recourse")] if len(hidden) else hidden
    # the paper's direction: non-white applicants get costlier, less plausible recourse
    stated = [(r["metric"] == _COST) == (r["estimate"] > 0) for _, r in hid.iterrows()]
    ok = any(stated) and all(stated)
    text = (f"The non-white - white gap in cost is {fmt_gap(rows[0])} under the baseline and "
            f"{fmt_gap(rows[2])} under race-correlated profiles; in log-density "
            f"{fmt_gap(rows[1])} and {fmt_gap(rows[3])}. ")
    if len(hid):
        signs = [("non-white costlier" if r["estimate"] > 0 else "non-white cheaper")
                 if r["metric"] == _COST else
                 ("non-white less plausible" if r["estimate"] < 0 else "non-white more plausible")
                 for _, r in hid.iterrows()]
        text += ("Race changes nothing in the world, yet the race-correlated profiles create a "
                 f"race gap in {' and '.join(metric_label(m) for m in hid['metric'])} that the "
                 f"baseline does not have (direction here: {', '.join(signs)}). ")
        text += ("Non-white applicants fare worse, as in the paper." if ok else
                 "Not reproduced: the paper finds costlier and less plausible recourse for "
                 "non-white applicants, and here the gap runs the other way.")
    else:
        text += "No race gap appears that the baseline lacks: not reproduced."
    return Finding("3. Race-correlated profiles create a race gap from nothing", ok, text)


def _cells(result: AuditResult, policy: str, race: str, metric: str):
    g = result.groups
    return g[(g["source"] == "recourse") & (g["policy"] == policy) & (g["condition"] == race)
             & (g["metric"] == metric) & (g["grouping"].str.contains(" x "))]


def _cell_finding(result: AuditResult, policy: str, race: str) -> Finding:
    ex = result.extremes
    sel = ex[(ex["source"] == "recourse") & (ex["policy"] == policy)
             & (ex["condition"] == race) & (ex["metric"] == _COST)] if len(ex) else ex
    if not len(sel):
        return Finding("4. Non-white females fare worst", False,
                       "The run has no gender x race cells under race-correlated profiles.")
    e = sel.iloc[0]
    ok = e["highest"] == "female non-white" and e["ci_low"] > 0
    cells = _cells(result, policy, race, _COST)
    listing = "; ".join(f"{r['group']} {r['estimate']:.3f} [{r['ci_low']:.3f}, "
                        f"{r['ci_high']:.3f}]" for _, r in
                        cells.sort_values("estimate", ascending=False).iterrows())
    text = (f"Mean unweighted cost per cell under race-correlated profiles: {listing}. "
            f"Highest: {e['highest']}, ahead of {e['runner_up']} by "
            f"{fmt_ci(e['margin'], e['ci_low'], e['ci_high'])} (highest in "
            f"{100 * e['share_highest']:.0f}% of bootstrap resamples). ")
    text += ("Non-white females fare worst, as in the paper." if ok else
             "Non-white females do not have the highest cost here: not reproduced.")
    valid = _cells(result, policy, race, "validity")
    if len(valid):
        low = valid.sort_values("estimate").iloc[0]
        text += (f" Lowest validity (share given a recourse that works): {low['group']} "
                 f"{low['estimate']:.3f} [{low['ci_low']:.3f}, {low['ci_high']:.3f}]; "
                 "costs are means among those whose recourse is valid.")
    return Finding("4. Non-white females fare worst", ok, text)
