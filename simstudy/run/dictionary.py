"""The data dictionary: what every column of every output table means, its unit and denominator.

Each run writes ``data_dictionary.csv`` beside its results: one row per column of each table it
wrote (``table, column, meaning, unit, denominator``). Entries are declared here once, by table,
with ``*`` standing for a feature name or a policy's extra column (``x_*``, ``*_ci_low``); a
column without an entry is listed with the meaning ``NOT DESCRIBED`` and :func:`undescribed`
names it, so a test catches a new column nobody explained.

Rows that describe a metric are not written here but derived when asked for: the per-applicant
columns of :func:`simstudy.metrics.evaluate_recourse` from
:data:`simstudy.metrics.RECOURSE_COLUMNS`, and every metric column of ``summary.csv`` and
``contrasts.csv`` (its ``*_found`` twin and interval ends included) from the metric's
declaration in :data:`simstudy.metrics.METRICS` (meaning, unit, denominator, direction), so a
metric registered by user code is described too.

Example:
    >>> from simstudy.run.dictionary import describe
    >>> describe("summary.csv", ["policy", "cost", "cost_found"])[2]["denominator"]
    'applicants given a recourse, per replication; then the mean over replications'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from ..core.store import atomic_write
from ..metrics import RECOURSE_COLUMNS, Metric, metrics_of

__all__ = ["ENTRIES", "entries", "metric_entries", "describe", "output_tables",
           "dictionary_table", "undescribed", "write_dictionary"]

#: ``(column pattern, meaning, unit, denominator)``.
Entry = tuple[str, str, str, str]

_APPLICANT = "one applicant"
_ASKING = "applicants asking for recourse"
_INTERVAL = "95% Student-t interval over replications"

# (column pattern, meaning, unit, denominator); first match wins.
_RECOURSE_VALUES: list[Entry] = [
    ("replication", "replication index (0-based)", "", ""),
    ("seed", "seed of the replication (keys every draw in it)", "", ""),
    ("condition", "condition name (scenario `conditions`)", "", ""),
    ("policy", "policy name (scenario `policies`: `name`, else `kind`)", "", ""),
    ("applicant_id", "applicant's row in the replication's applicant split", "", ""),
    ("gender", "gender feature (Loan coding: 0 female, 1 male)", "code", ""),
    ("race", "stylized attribute (1 non-white, 0 white); affects nothing in the world",
     "code", ""),
    ("privileged", "group assignment of the population's `groups` (1 privileged)", "code", ""),
    ("n_actionable", "features the person may act on", "features", _APPLICANT),
    ("score_*", "actionability score of the feature (ranking position or Likert level; "
                "0 cannot act)", "score", _APPLICANT),
    ("weight_*", "the person's cost weight of the feature, w = 1 + alpha ((s - 1) / (S - 1))^p "
                 "from their score s of S levels (population `cost`: alpha, p from the shape; "
                 "constant: 1; inf where they cannot act)", "weight", _APPLICANT),
    ("can_*", "the person can truly change the feature (hidden; the score is what they "
              "report)", "0/1", _APPLICANT),
    ("act_*", "1 when the recourse acts on the feature", "0/1", _APPLICANT),
    ("theta_*", "value the recourse sets the feature to (empty when not acted on)",
     "feature units", _APPLICANT),
    ("x_*", "factual value of the feature", "feature units", _APPLICANT),
    ("xcf_*", "counterfactual value after the recourse (the factual one without recourse)",
     "feature units", _APPLICANT),
    *((name, meaning, unit, _APPLICANT) for name, (meaning, unit) in RECOURSE_COLUMNS.items()),
    ("candidates_evaluated", "candidate actions the oracle scored for the person", "count",
     _APPLICANT),
    ("queries", "HARE: comparison questions asked", "count", _APPLICANT),
    ("accepted", "HARE: the person accepted a recourse before the budget ran out", "0/1",
     _APPLICANT),
    ("iterations_run", "HARE: refinement rounds run", "count", _APPLICANT),
    ("base_found", "HARE: the base generator found a recourse", "0/1", _APPLICANT),
    ("redundancy", "HARE: acted-on features that could be reset without losing approval",
     "features", _APPLICANT),
    ("redundancy_base", "HARE: redundancy of the base generator's recourse", "features",
     _APPLICANT),
    ("violations", "HARE: changed coordinates neither actionable nor moved by the causal base",
     "features", _APPLICANT),
    ("user_loss", "the person's hidden loss of the recourse (distance to their ground truth, "
                  "or their weighted change); empty without recourse", "loss", _APPLICANT),
    ("user_loss_base", "hidden loss of the base generator's recourse (a refining policy)",
     "loss", _APPLICANT),
    ("has_ground_truth", "the person has a ground-truth recourse", "0/1", _APPLICANT),
    ("gtp", "ground-truth proximity of the recourse (empty without recourse)",
     "range-scaled distance", _APPLICANT),
    ("gtd", "ground-truth dissimilarity 1 - cos of the recourse", "0..2", _APPLICANT),
    ("gtp_base", "ground-truth proximity of the base recourse", "range-scaled distance",
     _APPLICANT),
    ("gtd_base", "ground-truth dissimilarity of the base recourse", "0..2", _APPLICANT),
    ("blocked", "the recourse needs a feature the person truly cannot change, or a change "
                "against their true direction or beyond their true bound", "0/1",
     _APPLICANT),
    ("blocked_base", "the base recourse needs a feature the person truly cannot change",
     "0/1", _APPLICANT),
    ("p_accept", "the person's probability of accepting the recourse (scenario `response`)",
     "probability", _APPLICANT),
    ("p_act", "the person's probability of acting on the recourse once accepted", "probability",
     _APPLICANT),
]

def metric_entries(name: str, metric: Metric, paired: bool = False) -> list[Entry]:
    """The dictionary rows of one metric's summary columns (``name``, ``name_ci_low``,
    ``name_ci_high``), from its declaration; ``paired``: as a contrast ``policy - baseline``.

    Example:
        >>> from simstudy.metrics import METRICS
        >>> [row[0] for row in metric_entries("hap", METRICS["hap"])]
        ['hap', 'hap_ci_low', 'hap_ci_high']
    """
    what = "difference policy - baseline of the " if paired else ""
    better = f"; {metric.direction} is better" if metric.direction else ""
    return [
        (name, what + metric.meaning + better, metric.unit,
         metric.denominator + _per_replication(paired)),
        (f"{name}_ci_low", f"lower end of the {_INTERVAL} of `{name}` (empty with one "
                           "replication)", metric.unit, "replications"),
        (f"{name}_ci_high", f"upper end of the {_INTERVAL} of `{name}` (empty with one "
                            "replication)", metric.unit, "replications"),
    ]


def _per_replication(paired: bool) -> str:
    return (", per replication; the paired difference averaged over replications" if paired
            else ", per replication; then the mean over replications")


def _summary_entries(paired: bool) -> list[Entry]:
    what = "difference policy - baseline of the " if paired else ""
    rows = [
        ("policy", "policy name" + (" (minuend)" if paired else ""), "", ""),
        ("baseline", "policy the contrast subtracts", "", ""),
        ("condition", "condition name", "", ""),
        ("group_by", "grouping column (`all`: everyone)", "", ""),
        ("group", "value of the grouping column (`all`: everyone)", "", ""),
        ("replications", "replications averaged", "count", ""),
        ("n", "applicants asking for recourse in one replication", "applicants",
         "mean over replications"),
    ]
    for name, metric in metrics_of("recourse", summarized=True).items():
        rows += metric_entries(name, metric, paired)
    rows += [
        ("*_ci_low", f"lower end of the {_INTERVAL} of the column named before `_ci_low` "
                     "(empty with one replication)", "as that column", "replications"),
        ("*_ci_high", "upper end of that interval", "as that column", "replications"),
        ("*", what + "policy-specific per-applicant column, averaged (see recourse.parquet)",
         "as in recourse.parquet",
         _ASKING + " with a value (empty cells skipped)" + _per_replication(paired)),
    ]
    return rows


#: Tables whose rows are derived from the metric table each time they are asked for.
_DERIVED = {"summary.csv": lambda: _summary_entries(paired=False),
            "contrasts.csv": lambda: _summary_entries(paired=True)}

_EVENT_TAG = [("policy", "policy name", "", ""),
              ("replication", "replication index (0-based)", "", "")]

#: The declared rows of every table but those in ``_DERIVED`` (see :func:`entries`).
ENTRIES: dict[str, list[Entry]] = {
    "recourse.parquet": _RECOURSE_VALUES,
    "events.parquet": [
        ("time", "simulated time of the event", "days", ""),
        ("applicant", "applicant id in the event world", "", ""),
        ("attempt", "the applicant's application number (0-based)", "count", ""),
        ("event", "event type (arrival, decision, recourse, action, dropout, ...)", "", ""),
        ("model_version", "decision model version in force (retraining increments it)", "",
         ""),
        ("value", "event-specific value (for a decision: 1 approved)", "", ""),
        *_EVENT_TAG],
    "outcomes.parquet": [
        ("applicant", "applicant id in the event world", "", ""),
        ("group", "the applicant's group value", "", ""),
        ("arrival_time", "time of first application", "days", _APPLICANT),
        ("state", "final state at the horizon", "", _APPLICANT),
        ("approved", "approved before the horizon", "0/1", _APPLICANT),
        ("approval_time", "time of approval (empty if never)", "days", _APPLICANT),
        ("time_to_approval", "approval time minus arrival time", "days", _APPLICANT),
        ("applications", "applications made", "count", _APPLICANT),
        ("recourses", "recourses received", "count", _APPLICANT),
        ("actions", "actions started", "count", _APPLICANT),
        ("action_failures", "actions that failed", "count", _APPLICANT),
        ("dropped_out", "gave up before approval", "0/1", _APPLICANT),
        ("dropout_time", "time of dropping out (empty if not)", "days", _APPLICANT),
        ("invalidated", "recourses no longer approved after retraining", "count", _APPLICANT),
        ("returns", "re-applications after acting", "count", _APPLICANT),
        ("hidden_mismatch", "a recourse needed a feature the person truly cannot change",
         "count", _APPLICANT),
        ("privileged", "group assignment (1 privileged)", "code", ""),
        ("gender", "gender feature (0 female, 1 male)", "code", ""),
        ("race", "stylized attribute (1 non-white, 0 white)", "code", ""),
        *_EVENT_TAG],
    "actions.parquet": [
        ("applicant", "applicant id in the event world", "", ""),
        ("attempt", "the applicant's application number the action follows", "count", ""),
        ("start", "time the action starts", "days", ""),
        ("end", "time the action ends", "days", ""),
        ("fraction", "share of the recommended change carried out", "share", "one action"),
        ("target_*", "value the action aims the feature at", "feature units", "one action"),
        *_EVENT_TAG],
    "models.csv": [
        ("version", "decision model version", "", ""),
        ("time", "time the version came into force", "days", ""),
        ("n_train", "rows it was trained on", "count", ""),
        ("train_approval_rate", "share of its training rows it approves", "share",
         "training rows"),
        ("state_dict_sha256", "sha256 of the version's weights", "", ""),
        *_EVENT_TAG],
    "timeline.csv": [
        ("group", "group value (`all`: everyone)", "", ""),
        ("day", "day since the start", "days", ""),
        ("arrived", "applicants arrived by that day", "count", "cumulative"),
        ("approved", "applicants approved by that day", "count", "cumulative"),
        ("approved_share", "approved / arrived by that day", "share", "applicants arrived"),
        ("dropped_out", "applicants dropped out by that day", "count", "cumulative"),
        *_EVENT_TAG],
    "sim_summary.csv": [
        ("kind", "`policy` (a policy's level) or `contrast` (paired difference)", "", ""),
        ("policy", "policy name", "", ""),
        ("baseline", "policy subtracted (contrasts only)", "", ""),
        ("group", "group value (`all`: everyone)", "", ""),
        ("metric", "event-world metric (simstudy.sim.outcomes.WORLD_SUMMARY_METRICS)", "",
         ""),
        ("n_replications", "replications averaged", "count", ""),
        ("mean", "mean over replications", "as the metric", "replications"),
        ("sd", "standard deviation over replications", "as the metric", "replications"),
        ("ci_low", "lower end of the 95% interval: Student-t over replications (an "
                   "estimate's cut at zero); for the shares approval_rate, dropout_rate and "
                   "active_rate the Wilson score interval at their effective sample size "
                   "(simstudy.core.intervals)",
         "as the metric", "replications"),
        ("ci_high", "upper end of that interval", "as the metric", "replications")],
    "power.csv": [
        ("n", "participants in each simulated study", "participants", ""),
        ("simulations", "simulated studies at this N", "count", ""),
        ("significant", "studies whose test gave p < alpha (a plan: the smooth test; a "
                        "scenario's hypothesis: rejected after the multiplicity correction)",
         "count", "simulations"),
        ("power", "significant / simulations (a scenario's hypotheses: / fitted)", "share",
         "simulations"),
        ("lower", "lower end of the Clopper-Pearson interval of power", "share",
         "simulations"),
        ("upper", "upper end of the Clopper-Pearson interval of power", "share",
         "simulations"),
        ("median_edf", "median effective degrees of freedom of the fitted smooth", "edf",
         "simulations"),
        ("median_F", "median F statistic of the smooth test", "F", "simulations")],
    "study.csv": [
        ("uid", "participant (pseudonymous: simulated person id, or a live study's arrival "
                "index; never a platform ID)", "", ""),
        ("item", "recourse rated: the i-th study policy, or len(policies) + j for the j-th "
                 "random recourse", "", ""),
        ("sparsity", "features the recourse changes", "features", "one rating"),
        ("proximity", "sum over changed features of |change| / feature range (a categorical "
                      "feature's change counts 1)", "range-scaled distance", "one rating"),
        ("accept", "rating: is the plan a reasonable explanation of the rejection",
         "7-point scale", "one rating"),
        ("act", "rating: would the participant carry out the plan", "7-point scale",
         "one rating"),
        ("policy", "policy that produced the recourse (`random`: a random recourse)", "", ""),
        ("blocked", "the recourse changes a feature the participant cannot change (simulated: "
                    "hidden truth; live: their own answer)", "0/1", "one rating"),
        ("condition", "live study: the policy serving the participant (their condition)", "",
         ""),
        ("cost", "weighted cost of the recourse under the participant's stated profile",
         "range-scaled distance", "one rating"),
        ("cost_unweighted", "unweighted cost of the recourse", "range-scaled distance",
         "one rating"),
        ("applicant_id", "applicant's row in the replication's applicant split", "", ""),
        ("position", "live study: display position of the rating page (seeded order)", "", ""),
        ("status", "live study: the participant's outcome: completed, failed_attention, "
                   "no_consent, timed_out (their slot's time ran out), returned (they left the "
                   "study), in_progress (still taking it when exported)", "", ""),
        ("assigned_condition", "live study: the condition first assigned (equals condition "
                               "unless the no-plan rule replaced it)", "", ""),
        ("no_plan", "live study: 1 when the assigned condition found no plan for the stated "
                    "profile", "0/1", "one participant"),
        ("pilot", "live study: 1 when the participant entered while the pilot flag was on",
         "0/1", "one participant"),
        ("study_version", "live study: version of the study file the participant took (1 for "
                          "the first file served on the database)", "version",
         "one participant"),
        ("plan", "live study: the plan in the words its page showed (labels, units and values "
                 "of the world's presentation)", "", "one rating"),
        ("attention_failures", "live study: attention checks the participant failed", "checks",
         "one participant"),
        ("inconsistent", "live study: 'changeable?' answers contradicting the stated "
                         "actionability", "answers", "one participant"),
        ("gender", "gender feature (Loan coding: 0 female, 1 male)", "code", ""),
        ("privileged", "group assignment of the population's `groups` (1 privileged)", "code",
         ""),
        ("race", "stylized attribute (1 non-white, 0 white)", "code", "")],
    "study_open.csv": [
        ("uid", "participant (as in study.csv)", "", ""),
        ("item", "recourse rated (as in study.csv)", "", ""),
        ("why", "the participant's open answer (free text: review before sharing); a text "
                "starting with = + - @, a tab or a carriage return is written with a leading ' "
                "so that spreadsheets do not run it as a formula (OWASP CSV injection): the "
                "raw text is the cell without that first character", "", ""),
        ("needs_review", "1 when the answer holds text to review", "0/1", "")],
    "gamm.csv": [
        ("model", "`response ~ distance` of the analysis document", "", ""),
        ("n", "ratings fitted", "ratings", ""),
        ("participants", "participants (random-effect groups)", "participants", ""),
        ("edf", "effective degrees of freedom of the distance smooth", "edf", ""),
        ("ref_df", "reference degrees of freedom of the smooth test", "df", ""),
        ("F", "F statistic T / ref_df of the smooth test (Wood 2013); Gaussian family "
              "only, empty for binomial / ocat (see chi_sq), as in mgcv", "F", ""),
        ("chi_sq", "chi-square statistic T of the smooth test (Wood 2013), mgcv's Chi.sq; "
                   "binomial / ocat families only, empty for Gaussian (see F)", "chi-square",
         ""),
        ("p", "p-value of the smooth test", "probability", ""),
        ("intercept", "fixed intercept (log-odds or latent scale for binomial / ocat)",
         "rating points", ""),
        ("sd_intercept", "SD of participant random intercepts", "rating points",
         "participants"),
        ("sd_slope", "SD of participant random slopes in distance", "rating points per "
                                                                     "distance unit",
         "participants"),
        ("sd_resid", "residual SD", "rating points", "ratings"),
        ("family", "response family", "", ""),
        ("reml_converged", "the REML optimisation converged", "0/1", ""),
        ("reml_iterations", "REML iterations", "count", ""),
        ("reml_starts", "REML starting points tried", "count", ""),
        ("k", "basis dimension of the smooth", "basis functions", ""),
        ("ordinal_lr", "likelihood-ratio statistic of the ordinal sensitivity fit", "LR", ""),
        ("ordinal_df", "its degrees of freedom", "df", ""),
        ("ordinal_p", "its p-value", "probability", ""),
        ("ordinal_converged", "the ordinal sensitivity fit converged", "0/1", ""),
        ("pygam_exploratory_p", "pygam's p-value (exploratory: ignores participants)",
         "probability", ""),
        ("warnings", "warnings of the fit (`; `-separated)", "", "")],
    **{name: [
        ("source", "`recourse` (run tables) or `event world`", "", ""),
        ("policy", "policy name", "", ""),
        ("condition", "condition name", "", ""),
        ("versus", "condition the gap is compared with", "", ""),
        ("metric", "audited metric (simstudy.metrics.METRICS)", "", ""),
        ("grouping", "group column(s) compared (`a x b`: their intersection)", "", ""),
        ("group", "group cell", "", ""),
        ("comparison", "gap compared (focal - reference)", "", ""),
        ("focal", "focal group of the gap", "", ""),
        ("reference", "reference group of the gap", "", ""),
        ("n", "people in the cell", "people", "summed over replications"),
        ("gap", "the gap under `condition`", "as the metric", ""),
        ("gap_versus", "the gap under `versus`", "as the metric", ""),
        ("estimate", "the group's metric, the gap, or the difference of gaps", "as the metric",
         "the metric's own denominator (see summary.csv)"),
        ("ci_low", "lower end of the interval: percentile bootstrap, except a group's "
                   "proportion (Wilson score interval at its effective sample size, as in "
                   "summary.csv)", "as the metric", "bootstrap resamples or people"),
        ("ci_high", "upper end of that interval", "as the metric",
         "bootstrap resamples or people"),
        ("p_value", "permutation p-value of the gap", "probability", "permutations"),
        ("p_adjusted", "p-value adjusted (Holm or Benjamini-Hochberg) over the family",
         "probability", ""),
        ("significant", "p_adjusted < alpha", "0/1", ""),
        ("baseline_*", "the same figure under the baseline condition", "as the metric", ""),
        ("highest", "cell with the highest estimate", "", ""),
        ("highest_estimate", "its estimate", "as the metric", ""),
        ("runner_up", "cell with the second highest estimate", "", ""),
        ("runner_up_estimate", "its estimate", "as the metric", ""),
        ("margin", "highest minus runner-up", "as the metric", ""),
        ("share_highest", "share of bootstrap resamples in which the highest stays highest",
         "share", "bootstrap resamples")]
       for name in ("audit_groups.csv", "audit_gaps.csv", "audit_contrasts.csv",
                    "audit_extremes.csv", "audit_hidden.csv")},
}

# ---- study planning tables (simstudy.study: study.csv, study_pool.parquet, contrast.csv,
# hypotheses.csv, and the scenario form of power: power.csv, sensitivity.csv, assurance.csv).
# Kept in one block, appended to ENTRIES, so that it merges apart from the metric rows. ----
_RATER = "one rating"
_GROUPS = [
    ("gender", "gender feature of the participant (Loan coding: 0 female, 1 male)", "code", ""),
    ("race", "stylized attribute of the participant (1 non-white, 0 white)", "code", ""),
    ("privileged", "the participant's group (population `groups`; 1 privileged)", "code", ""),
]
_STUDY_RECOURSE = [
    ("policy", "policy whose recourse is rated (`random`: a random other recourse)", "", ""),
    ("sparsity", "features the recourse changes", "features", _RATER),
    ("proximity", "sum over changed features of |change| / feature range (a categorical "
                  "feature's change counts 1)", "range units", _RATER),
    ("blocked", "the recourse needs a feature the participant truly cannot change", "0/1",
     _RATER),
    ("cost", "weighted recourse cost (the participant's own cost weights)", "cost units",
     _RATER),
]
_POWER_SHARE = [
    ("hypothesis", "hypothesis name (`H:smooth`: the smooth reported beside a distance "
                   "hypothesis; `H[col=value]`: within one group; `all`: every hypothesis "
                   "rejected in the same study)", "", ""),
    ("label", "the claim in words, with the multiplicity rule", "", ""),
    ("test", "exploratory test of a study without hypotheses (`policy`, `smooth`)", "", ""),
    ("n", "participants in each simulated study", "participants", ""),
    ("simulations", "simulated studies at this N", "count", ""),
    ("failed", "studies whose fit failed or did not converge (not counted as not "
               "significant)", "count", "simulations"),
    ("fitted", "studies whose fit succeeded", "count", "simulations"),
    ("significant", "fitted studies rejecting the hypothesis", "count", "fitted"),
    ("power", "significant / fitted", "share", "fitted"),
    ("lower", "lower end of the Clopper-Pearson interval of power", "share", "fitted"),
    ("upper", "upper end of the Clopper-Pearson interval of power", "share", "fitted"),
]
_STUDY_ENTRIES: dict[str, list[tuple[str, str, str, str]]] = {
    "study.csv": [
        ("uid", "participant id (the applicant's id in the run)", "", ""),
        ("item", "position of the rated recourse (policies in study order, then random "
                 "others)", "", ""),
        ("accept", "acceptance rating (1 = not at all .. 7 = fully)", "rating points",
         _RATER),
        ("act", "willingness to act (1 .. 7)", "rating points", _RATER),
        ("applicant_id", "applicant's row in the replication's applicant split", "", ""),
        *_STUDY_RECOURSE, *_GROUPS],
    "study_pool.parquet": [
        ("applicant_id", "applicant's row in the replication's applicant split", "", ""),
        ("cost_unweighted", "recourse cost with unit weights", "cost units", _RATER),
        *_STUDY_RECOURSE, *_GROUPS],
    "contrast.csv": [
        ("response", "the rating compared (`accept`, `act`)", "", ""),
        ("policy", "the policy compared with the baseline", "", ""),
        ("baseline", "the reference policy", "", ""),
        ("estimate", "mean rating difference policy minus baseline (mixed model, REML)",
         "rating points", "ratings"),
        ("se", "standard error of the estimate", "rating points", ""),
        ("lower", "lower end of the Wald interval", "rating points", ""),
        ("upper", "upper end of the Wald interval", "rating points", ""),
        ("z", "Wald statistic estimate / se", "z", ""),
        ("p", "two-sided p-value of the Wald statistic", "probability", ""),
        ("mean_policy", "mean rating of the policy's recourses", "rating points", "ratings"),
        ("mean_baseline", "mean rating of the baseline's recourses", "rating points",
         "ratings"),
        ("n_ratings", "ratings fitted", "ratings", ""),
        ("n_participants", "participants fitted", "participants", ""),
        ("sd_intercept", "SD of participant random intercepts", "rating points", ""),
        ("sd_resid", "residual SD", "rating points", ""),
        ("omnibus_chi2", "Wald chi-square that any policy differs from the baseline", "chi2",
         ""),
        ("omnibus_df", "its degrees of freedom", "df", ""),
        ("omnibus_p", "its p-value", "probability", ""),
        ("converged", "the mixed model converged", "0/1", "")],
    "hypotheses.csv": [
        ("hypothesis", "hypothesis name (`name`, else H1, H2, ...)", "", ""),
        ("label", "the claim in words", "", ""),
        ("kind", "`contrast`, `distance` or `gap`", "", ""),
        ("response", "the rating tested", "", ""),
        ("direction", "the direction stated (one-sided unless `two-sided`)", "", ""),
        ("estimate", "the tested coefficient (policy or group difference; slope per unit "
                     "distance)", "rating points", "ratings"),
        ("se", "its standard error", "rating points", ""),
        ("z", "Wald statistic estimate / se", "z", ""),
        ("p", "p-value in the stated direction, before the multiplicity correction",
         "probability", ""),
        ("p_adjusted", "p-value after the multiplicity correction (failed fits enter as 1)",
         "probability", ""),
        ("rejected", "p_adjusted < alpha and the fit succeeded", "0/1", ""),
        ("failed", "the fit failed or did not converge (not a non-rejection)", "0/1", ""),
        ("multiplicity", "the correction (`holm`, `bonferroni`, `none`)", "", ""),
        ("alpha", "the level of the tests", "probability", ""),
        ("n_ratings", "ratings fitted", "ratings", ""),
        ("n_participants", "participants fitted", "participants", ""),
        ("smooth_edf", "EDF of the distance smooth reported beside a distance hypothesis",
         "edf", ""),
        ("smooth_p", "p-value of that smooth (two-sided, not part of the family)",
         "probability", ""),
        ("note", "covariates left out, why a fit failed", "", "")],
    "power.csv": [e for e in _POWER_SHARE if e[0] in ("hypothesis", "label", "test",
                                                        "failed", "fitted")],
    "sensitivity.csv": [
        ("parameter", "the main effect scaled (a response-model parameter)", "", ""),
        ("factor", "multiplier of the assumed value", "ratio", ""),
        ("value", "the parameter's value simulated", "as the parameter", ""),
        *_POWER_SHARE],
    "assurance.csv": [
        (c, m + (" (parameters drawn from the calibration's sampling distribution)"
                 if c == "power" else ""), u, d) for c, m, u, d in _POWER_SHARE],
}
for _table, _rows in _STUDY_ENTRIES.items():
    ENTRIES[_table] = [*ENTRIES.get(_table, []), *_rows]
# ---- end of the study planning block ----
_UNDESCRIBED = "NOT DESCRIBED"


def entries(table: str) -> list[Entry]:
    """The rows of one table (by file name), metric rows from the metric table as it is now."""
    return _DERIVED[table]() if table in _DERIVED else ENTRIES.get(table, [])


def describe(table: str, columns: Iterable[str]) -> list[dict[str, str]]:
    """One row per column: its meaning, unit and denominator (first matching entry)."""
    known = entries(table)
    rows = []
    for column in columns:
        found = next((e for e in known if fnmatchcase(column, e[0])), None)
        meaning, unit, denominator = found[1:] if found else (_UNDESCRIBED, "", "")
        rows.append({"table": table, "column": column, "meaning": meaning, "unit": unit,
                     "denominator": denominator})
    return rows


def undescribed(folder: str | Path) -> list[str]:
    """``table: column`` for every column of the tables under ``folder`` without an entry."""
    frame = dictionary_table(output_tables(folder))
    bad = frame[frame["meaning"] == _UNDESCRIBED]
    return [f"{t}: {c}" for t, c in zip(bad["table"], bad["column"], strict=True)]


def _columns(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        return list(pq.read_schema(path).names)
    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except pd.errors.EmptyDataError:  # a table with no rows and no header (nothing found)
        return []


def output_tables(folder: str | Path) -> dict[str, list[str]]:
    """Columns of every known table under ``folder`` (``parts/`` and ``set-aside/`` skipped),
    by path relative to it."""
    folder = Path(folder)
    found = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        known = path.name in ENTRIES or path.name in _DERIVED
        if known and not {"parts", "set-aside"} & set(rel.parts):
            found[str(rel)] = _columns(path)
    return found


def dictionary_table(tables: Mapping[str, Iterable[str]]) -> pd.DataFrame:
    """Rows of :func:`describe` for ``{relative path: columns}`` (described by file name)."""
    rows = []
    for rel, cols in tables.items():
        for r in describe(Path(rel).name, cols):
            rows.append({**r, "table": rel})
    return pd.DataFrame(rows, columns=["table", "column", "meaning", "unit", "denominator"])


def write_dictionary(folder: str | Path) -> Path:
    """Writes ``data_dictionary.csv`` describing every output table under ``folder``."""
    path = Path(folder) / "data_dictionary.csv"
    frame = dictionary_table(output_tables(folder))
    atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False))
    return path
