"""``simstudy preregister STUDY [--power DIR]``: the preregistration page of a study file.

The page follows the questions of the OSF preregistration template and of AsPredicted (van 't
Veer & Giner-Sorolla 2016; https://aspredicted.org): data collection so far, hypotheses
(confirmatory and exploratory), dependent variables, conditions and assignment, the analyses
(model, test, direction, alpha, multiplicity, what happens to a failed fit), exclusions and the
no-plan rule, sample size with its rationale (read from ``simstudy power``'s table, never
claiming a power the table does not show), the stopping rule, and the study file's and the
pilot's full sha256 and the study version. Every statement is read from the study file and the
power analysis; ``simstudy serve --prereg`` refuses a study file whose sha256 is not the one
recorded here (:func:`simstudy.live.prereg.check_prereg`).

References:
    van 't Veer, A. E. and Giner-Sorolla, R. (2016). Pre-registration in social psychology: a
    discussion and suggested template. Journal of Experimental Social Psychology 67, 2-12.
    Bowman, S. D. et al. (2020). OSF Prereg Template. https://doi.org/10.31222/osf.io/epgjd

Example:
    >>> text = preregistration("example:personalization", None)  # doctest: +SKIP
    >>> "## Sample size" in text                                       # doctest: +SKIP
    True
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.documents import UsageError
from ..core.store import file_sha256
from ..live.prereg import live_lines
from ..run.scenario import policy_name
from ..study.effects import parameter_table
from ..study.exclusions import exclusion_rule
from ..study.hypotheses import hypothesis_names
from ..study.power import smallest_n
from .study_power import study_setup

__all__ = ["preregistration", "read_power", "planned_n"]

_MULTIPLICITY = {"holm": "Holm's step-down correction (a hypothesis is rejected while its "
                         "p <= alpha / (m - i), i = 0, 1, ... over the sorted p-values)",
                 "bonferroni": "Bonferroni correction (p <= alpha / m)",
                 "none": "no correction (p <= alpha)"}


def read_power(scenario_path: str | Path, power_dir: str | Path | None) -> dict | None:
    """``power.json`` of ``simstudy power`` for this very study file (refused when it was
    computed from another version of it)."""
    if power_dir is None:
        return None
    path = Path(power_dir) / "power.json"
    if not path.exists():
        raise UsageError(f"--power {power_dir}: no power.json (run simstudy power "
                         f"{scenario_path} --out {power_dir} first)")
    power = json.loads(path.read_text())
    sha = file_sha256(scenario_path)
    if power.get("scenario_sha256", sha) != sha:
        raise UsageError(f"--power {power_dir}: its power.json was computed from another "
                         f"version of {scenario_path} (sha256 {power['scenario_sha256'][:12]}, "
                         f"now {sha[:12]}); run simstudy power again")
    return power


def planned_n(power: dict, column: str | None = None) -> dict[str, int | None]:
    """Per row of the power table (each hypothesis, ``all``), the smallest N whose ``column``
    (``lower`` bound or point ``power``; default: the analysis's ``read_from``) reaches the
    target power, ``None`` where no simulated N does.

    Example:
        >>> planned_n({"target_power": 0.8, "read_from": "estimate", "table": [
        ...     {"hypothesis": "H1", "n": 30, "power": 0.5, "lower": 0.3},
        ...     {"hypothesis": "H1", "n": 60, "power": 0.85, "lower": 0.7}]})
        {'H1': 60}
    """
    table = pd.DataFrame(power["table"])
    key = "hypothesis" if "hypothesis" in table else "test"
    column = column or ("lower" if power["read_from"] == "lower" else "power")
    return {str(name): n for name, n in
            smallest_n(table, power["target_power"], column, by=key).items()}


def preregistration(scenario_path: str | Path, power_dir: str | Path | None) -> str:
    """The preregistration page (Markdown) of a study file (see the module docstring)."""
    setup = study_setup(scenario_path)
    scenario, study = setup["scenario"], setup["study"]
    power = read_power(scenario_path, power_dir)
    live = study.live
    names = hypothesis_names(study.hypotheses)
    policies = study.study_policies([policy_name(p) for p in scenario.policies])
    lines = [f"# Preregistration: {scenario.name}", "",
             f"Study file: `{scenario_path}` (sha256 `{file_sha256(scenario_path)}`).",
             f"Study version: {live.version if live is not None else 1}.", ""]
    lines += _pilot(setup, power)
    if scenario.description:
        lines += [scenario.description.strip(), ""]
    lines += ["## 1. Data collection", "",
              ("No data have been collected for this study at the time of registration."
               if live is not None else "The study is simulated from the scenario's people "
               "(`simstudy run`); no participant data are collected."), ""]
    lines += _hypotheses(study, names)
    lines += _variables(study)
    lines += _conditions(scenario_path, scenario, study, policies)
    lines += _analyses(scenario_path, study, names, power)
    lines += _exclusions(study)
    lines += _sample_size(study, power, names, policies)
    lines += _stopping(study)
    lines += _effects(setup, power, study)
    if live is not None:
        lines += live_lines(scenario_path)
    return "\n".join(lines)


def _pilot(setup: dict, power: dict | None) -> list[str]:
    cal = setup["calibration"]
    pilot = (power or {}).get("pilot")
    if cal is not None:
        return [f"Pilot: `{cal.get('data', setup['response_file'])}` (sha256 "
                f"`{cal['sha256']}`).", ""]
    if pilot:
        return [f"Pilot: `{pilot['data']}` (sha256 `{pilot['sha256']}`).", ""]
    return ["Pilot: none; the effects the sample size rests on are assumed (sources in "
            "section 9).", ""]


def _hypotheses(study: Any, names: list[str]) -> list[str]:
    out = ["## 2. Hypotheses", "", "Confirmatory:", ""]
    if not study.hypotheses:
        out += ["None: `study.hypotheses` is empty, so every test of this study is "
                "exploratory.", ""]
    for name, h in zip(names, study.hypotheses, strict=True):
        out.append(f"- **{name}**: {h.label()} ({_sided(h.direction)}).")
    tested = {h.response for h in study.hypotheses}
    rest = sorted({"accept", "act"} - tested)
    out += ["", "Exploratory (reported, not tested for confirmation): "
            + ", ".join(([f"every contrast on {r}" for r in rest]) + [
                "the policy contrast table of every rating against the baseline",
                "the GAMM smooths of the ratings in the distances",
                "the rating of the random plans"]) + ".", ""]
    return out


def _sided(direction: str) -> str:
    return {"greater": "one-sided, greater", "less": "one-sided, less",
            "decreasing": "one-sided, decreasing", "increasing": "one-sided, increasing",
            "two-sided": "two-sided"}[direction]


def _variables(study: Any) -> list[str]:
    out = ["## 3. Dependent variables", ""]
    if study.live is not None:
        q = study.live.questionnaire
        out += [f"- `act`: \"{q.act}\" ({q.scale_points} points, {q.low_label} .. "
                f"{q.high_label}).",
                f"- `accept`: \"{q.accept}\" ({q.scale_points} points).",
                f"- Recorded, not tested: \"{q.why}\" (free text); per changed item, "
                f"\"{q.changeable}\" (`blocked` = 1 when any answer is no)."]
    else:
        out += ["- `act` and `accept`: 7-point ratings of each recourse (the study's "
                "response model)."]
    return [*out, ""]


def _conditions(path: Any, scenario: Any, study: Any, policies: list[str]) -> list[str]:
    out = ["## 4. Conditions and assignment", ""]
    personalized = {policy_name(p): p.personalized for p in scenario.policies}
    if study.live is None:
        return [*out, "Within participants: every participant rates the recourse of each "
                "policy (" + ", ".join(f"`{p}`" for p in policies) + ")"
                + (f" and {study.random_others} random recourse(s)" if study.random_others
                   else "") + ".", ""]
    live = study.live
    conditions = live.live_conditions(policies)
    out += ["Between participants: each participant is served by one condition, whose policy "
            "computes their plan from the profile and actionability they state: "
            + ", ".join(f"`{c}` ({'personalized' if personalized.get(c, True) else 'universal'})"
                        for c in conditions) + ".",
            "- Assignment: by the server, to the least-filled condition (counting the "
            "participants that count towards a condition's target and those in progress "
            f"within {live.timeout_minutes:g} minutes), ties broken by a seeded draw keyed by "
            "the arrival index.",
            f"- Every participant also rates {study.random_others} random plan(s), shown in a "
            "seeded order with their condition's plan; the debriefing discloses them.", ""]
    return out


def _analyses(path: Any, study: Any, names: list[str], power: dict | None) -> list[str]:
    alpha = study.power.alpha if study.power is not None else 0.05
    out = ["## 5. Analyses", ""]
    for name, h in zip(names, study.hypotheses, strict=True):
        out.append(f"- **{name}**: {_test_words(h, study.live is not None)}")
    out += ["", f"Significance level alpha = {alpha}; multiplicity: "
            f"{_MULTIPLICITY[study.multiplicity]}, over the {len(names)} confirmatory "
            "hypotheses. A hypothesis whose model fails to fit or converge is reported as "
            "failed, not as not significant, and enters the correction with p = 1.",
            "", "Model rule: where some participant gives two or more of the ratings a "
            "hypothesis tests, the model has a participant random intercept (linear mixed "
            "model, REML, Wald z); where every participant gives one (a contrast of "
            "between-participant conditions), the random intercept cannot be estimated and "
            "the model is ordinary least squares, t test on its residual degrees of freedom "
            "(`model` column of `hypotheses.csv`).", "",
            "```", f"simstudy analyze DATA.csv {path} --out analysis", "```", ""]
    return out


# the model of a distance or gap test depends on how many of the tested ratings a participant
# gives (one rating of a `policy:` each: ordinary least squares), which the data decide
_BY_RULE = "the model the model rule below gives for the ratings tested"


def _test_words(h: Any, live: bool) -> str:
    adjust = f", adjusted for {', '.join(h.adjust)}" if h.adjust else ""
    if h.kind == "contrast":
        term = (f"1[policy = {h.contrast[0]}] on the ratings of {h.contrast[0]}'s and "
                f"{h.contrast[1]}'s plans")
        model = ("ordinary least squares (one rating per participant: each rates one "
                 "condition's plan)" if live else "linear mixed model with a participant "
                 "random intercept, REML")
    elif h.kind == "distance":
        term = f"the linear slope of {h.distance}" + (f" ({h.policy}'s ratings)" if h.policy
                                                      else "")
        model = _BY_RULE
        if h.smooth:
            adjust += (f"; the smooth s({h.distance})" + (f" + {' + '.join(h.adjust)}"
                                                          if h.adjust else "")
                       + " is reported beside it, not tested")
    else:
        term = f"1[{h.by} = {h.gap[0]}] among {h.gap[0]} and {h.gap[1]}" + (
            f" ({h.policy}'s ratings)" if h.policy else "")
        model = _BY_RULE
    return f"{h.response} ~ {term}; {model}; {_sided(h.direction)}{adjust}."


def _exclusions(study: Any) -> list[str]:
    out = ["## 6. Exclusions", ""]
    live = study.live
    if live is not None:
        out += ["A participant is excluded from the confirmatory analysis for the first of "
                "these that applies (`simstudy analyze` prints and records each one in "
                "`exclusions.csv`):", ""]
        out += [f"- {line}" for line in exclusion_rule(live.exclusions, live.no_plan.rule)]
        rule = live.no_plan
        out += ["", "No-plan rule: a participant whose condition finds no plan for their "
                "stated profile " + (
                    "rates the random plans, is not counted towards the condition's target "
                    "(another participant is recruited) and is excluded"
                    if rule.rule == "exclude" else
                    f"is served by `{rule.replacement}` instead and analysed in it (the export "
                    "keeps both conditions); where that condition finds no plan either, they "
                    "are not counted and are excluded") + ".",
                f"- Attention: status `failed_attention` means failing "
                f"{live.reject_after_failures} or more of the {len(live.attention_checks)} "
                "instructed-response checks.",
                "- Inconsistent answers (stated actionability against the later "
                "'changeable?') are reported, not excluded."]
    out.append("- Ratings of plans needing a feature the participant cannot change: "
               + ("excluded (`exclude_blocked: true`)." if study.exclude_blocked else
                  "kept (`exclude_blocked: false`); `blocked` is recorded per rating."))
    return [*out, ""]


def _sample_size(study: Any, power: dict | None, names: list[str], policies: list[str]
                 ) -> list[str]:
    out = ["## 7. Sample size", ""]
    live = study.live
    if live is not None:
        planned = live.target_per_condition * len(live.live_conditions(policies))
        out.append(f"Planned: {live.target_per_condition} analysed participants per "
                   f"condition, {planned} in all (the server's `target_per_condition`).")
    else:
        planned = study.participants
        out.append(f"Planned: {planned} participants, rejected applicants of the study's "
                   "condition and replication among those every study policy found a recourse "
                   "for.")
        pool = (power or {}).get("pool")
        if pool:
            out.append(f"- Eligible pool: {pool['eligible']} of {pool['rejected']} rejected "
                       f"applicants ({pool['rule']}); composition against the rejected:")
            out += [f"  - {c['column']}={c['value']}: {c['share_eligible']:.1%} eligible, "
                    f"{c['share_rejected']:.1%} rejected" for c in pool["composition"]]
            out.append(f"- Sampling: {power.get('sample', 'without_replacement')}.")
    if power is None:
        return [*out, "", "Rationale: not computed (give `--power DIR`, the output of "
                "`simstudy power`); no power is claimed.", ""]
    table = pd.DataFrame(power["table"])
    key = "hypothesis" if "hypothesis" in table else "test"
    target, level = power["target_power"], power["confidence"]
    smallest = planned_n(power)
    reading = (f"the lower bound of its {level:.0%} interval" if power["read_from"] == "lower"
               else "its point estimate")
    out += ["", f"Rationale: power simulated for the design above ({power.get('design', '')}), "
            f"{power['simulations']} simulated studies per N, each analysed by the code, "
            f"model and exclusions of sections 5 and 6; target power {target}, read from "
            f"{reading}.", ""]
    at = table[table["n"] == planned]
    for name in [*names, "all"] if names else list(dict.fromkeys(table[key])):
        n = smallest.get(name)
        row = at[at[key] == name]
        here = (f"power at the planned N = {planned}: {row['power'].iloc[0]:.3f} "
                f"[{row['lower'].iloc[0]:.3f}, {row['upper'].iloc[0]:.3f}]" if len(row) else
                f"the planned N = {planned} was not simulated")
        reach = (f"smallest N reaching the target: {n}" if n is not None else
                 f"no simulated N (up to {int(table['n'].max())}) reaches the target")
        out.append(f"- {name}: {reach}; {here}.")
    verdict = _verdict(planned, smallest, names)
    out += ["", verdict, ""]
    if power.get("effect_source"):
        out += [f"Effect: {power['effect_source']}", ""]
    rec = [r for r in power.get("recruitment", []) if r["n"] == planned]
    if rec:
        r = rec[0]
        rates = power.get("rates", {})
        out += [f"Recruitment: to analyse {planned}, the simulated studies recruited "
                f"{r['arrivals_mean']:.1f} on average (90% of them between "
                f"{r['arrivals_q05']:.0f} and {r['arrivals_q95']:.0f}), with "
                + ", ".join(f"{k} rate {v['rate']:.3g} ({v['source']})"
                            for k, v in rates.items()) + " and the no-plan rates the engine "
                "gives per condition ("
                + ", ".join(f"{c} {v:.3f}" for c, v in power.get("no_plan_engine", {}).items())
                + f"). The simulated arrivals are the {power['live_pool_persons']} people of the "
                f"study population in a random order, cycled (about "
                f"{r['arrivals_mean'] / power['live_pool_persons']:.1f} arrivals per person at "
                "this N, each with fresh dispositions and rating noise).", ""]
    out += ["| test | N | power | interval | failed fits |", "|---|---|---|---|---|"]
    for _, r in table.iterrows():
        failed = int(r["failed"]) if "failed" in r else "-"
        out.append(f"| {r[key]} | {int(r['n'])} | {r['power']:.3f} | [{r['lower']:.3f}, "
                   f"{r['upper']:.3f}] | {failed} |")
    sens = power.get("sensitivity")
    if sens:
        mde = sens["minimum_detectable"]
        out += ["", f"Minimum detectable {sens['parameter']} at N = {sens['n']} for "
                f"{sens['hypothesis']}: " + (f"{mde:.3g}" if mde is not None else
                                            "not reached") + f" (assumed {sens['assumed']:.3g})."]
    return [*out, ""]


def _verdict(planned: int, smallest: dict[str, int | None], names: list[str]) -> str:
    """Whether the planned N reaches the target, in words that hold against the table."""
    if not names:
        return "No confirmatory hypothesis: the sample size is not justified by power."
    short = [n for n in names if smallest.get(n) is None or smallest[n] > planned]
    if not short:
        return (f"The planned N = {planned} reaches the target for every confirmatory "
                "hypothesis" + (" and for all jointly." if smallest.get("all") is not None
                                and smallest["all"] <= planned else
                                " (not for all jointly in the same study)."))
    return (f"The planned N = {planned} does NOT reach the target for "
            + ", ".join(short) + ": the study is underpowered for "
            + ("it" if len(short) == 1 else "them") + " at the assumed effects.")


def _stopping(study: Any) -> list[str]:
    out = ["## 8. Stopping rule", ""]
    live = study.live
    if live is None:
        return [*out, "Not applicable (a simulated study of fixed size).", ""]
    return [*out, f"Recruitment stops when every condition holds {live.target_per_condition} "
            "participants that count towards its target (completed, not excluded by the "
            "no-plan rule); the server then turns newcomers away. Excluded participants are "
            "replaced by new arrivals. The data are analysed once, after recruitment stops; "
            "no interim analysis.", ""]


def _effects(setup: dict, power: dict | None, study: Any) -> list[str]:
    out = ["## 9. Other: the assumed effects and their sources", ""]
    effects = power["effects"] if power is not None else parameter_table(
        setup["response"], sorted({h.response for h in study.hypotheses}) or None)
    source = power["response_from"] if power is not None else setup["where"]
    out += [f"Response model from {source}. The rating model has no policy term: a "
            "difference between conditions arises from their plans (distance, cost, and "
            "`blocked_penalty` where a plan needs a feature the person truly cannot change).",
            "", "| parameter | value | source |", "|---|---|---|"]
    out += [f"| {e['parameter']} | {e['value']} | {e['source']} |" for e in effects]
    return [*out, ""]
