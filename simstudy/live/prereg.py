"""The live study's part of a preregistration, and the check that a study file is the one
registered.

``simstudy preregister`` writes the page (its live section from :func:`live_lines`) with the
study file's sha256, so ``simstudy serve --prereg`` refuses to run a study file that no longer
matches what was registered (:func:`check_prereg`).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.store import file_sha256
from ..run.scenario import policy_name
from .engine import load_study, world_views

__all__ = ["live_lines", "check_prereg"]

# the study file's line of a preregistration page ("Study file: `x.yaml` (sha256 `...`)")
_SHA = re.compile(r"Study file[^\n]*?sha256:? `([0-9a-f]{64})`")


def check_prereg(study: str | Path, prereg: str | Path) -> str | None:
    """``None`` when the preregistration records the study file's sha256, else the reason."""
    try:
        text = Path(prereg).read_text()
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    m = _SHA.search(text)
    if m is None:
        return "it records no study file sha256 (write it with simstudy preregister)"
    now = file_sha256(study)
    if m.group(1) != now:
        return (f"it registers sha256 {m.group(1)[:12]}..., the study file now has "
                f"{now[:12]}...: the study changed since it was preregistered")
    return None


def live_lines(path: str | Path) -> list[str]:
    """The preregistration's section on running the study live (conditions, assignment,
    elicitation, attention exclusions, N per condition, the design caveat); Markdown lines.

    :func:`simstudy.cli.planning_commands.preregistration` writes the page (hypotheses, tests,
    N and its power, assumed effects) and adds this section when the study has ``live:``.
    """
    scenario, _ = load_study(path)
    study = scenario.study
    live = study.live
    names = [policy_name(p) for p in scenario.policies]
    conditions = live.live_conditions(study.study_policies(names))
    personalized = {policy_name(p): p.personalized for p in scenario.policies}
    n = live.target_per_condition
    views = world_views(scenario.world)
    framing = ("participants enter their own profile" if live.framing == "own_profile" else
               f"a vignette (\"{' '.join((live.vignette or '').split())}\"); participants "
               "enter the profile they imagine")
    rule = live.no_plan
    no_plan = (f"is served by `{rule.replacement}` instead (rule replace)"
               if rule.rule == "replace" else
               "finishes with the random plans and is not counted towards a target (rule exclude)")
    return [
        "## Live study", "",
        "No data have been collected for this study at the time of registration.", "",
        f"- Dependent variables: accept, \"{live.questionnaire.accept}\"; act, "
        f"\"{live.questionnaire.act}\" (7 points each).",
        "- Conditions (one per participant): " + ", ".join(
            f"`{c}` ({'personalized' if personalized.get(c, True) else 'universal'})"
            for c in conditions) + ".",
        "- Assignment: balanced server-side (the least-assigned condition still open, counting "
        "participants in progress, seeded ties; a condition closes when the participants it "
        f"serves and counts reach the target); actionability elicited by the "
        f"{live.elicitation} scheme; each participant also rates {study.random_others} random "
        "plan(s).",
        f"- Exclusion: failing {live.reject_after_failures} or more of the "
        f"{len(live.attention_checks)} instructed-response attention checks (status "
        "`failed_attention`); inconsistent answers (stated actionability against the later "
        "'changeable?') are reported, not excluded.",
        f"- Framing: {framing}.",
        "- Values shown and entered (the world's presentation; model units stay internal): "
        + ("; ".join(v.describe() for v in views.values()) if views else
           "model units, at a thousandth of each feature's range") + ".",
        f"- No plan: a participant whose condition finds no plan for their stated profile "
        f"{no_plan}; recorded in the export (`no_plan`, `assigned_condition`)"
        + (" and excluded from the confirmatory analysis" if "no_plan" in live.exclusions
           else "") + ".",
        "- Debriefing: the last page discloses the random plans: \""
        + " ".join(live.debriefing.split()) + "\"",
        f"- Sample: {n} participants per condition, {n * len(conditions)} in all.",
        "- Note: `simstudy power` simulates the within-participant design of the simulated "
        "study (every participant rates every policy); the live study serves one policy per "
        "participant, so for the policy contrast that power is likely optimistic.", "",
    ]
