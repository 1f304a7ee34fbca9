"""``simstudy preregister``: a preregistration page written from the study file itself.

The page follows AsPredicted's fields (data collection, hypotheses, dependent variables,
conditions, analyses, exclusions, sample size and its justification, other) and records the
study file's sha256, so ``simstudy serve --prereg`` refuses to run a study file that no longer
matches what was registered (:func:`check_prereg`).

Example:
    >>> file_sha256_line("abc")
    'Study file sha256: `abc`'
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from ...run.scenario import policy_name
from .engine import load_study

__all__ = ["study_sha256", "write_prereg", "check_prereg", "file_sha256_line"]

_SHA = re.compile(r"Study file sha256: `([0-9a-f]{64})`")


def study_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def file_sha256_line(digest: str) -> str:
    return f"Study file sha256: `{digest}`"


def check_prereg(study: str | Path, prereg: str | Path) -> str | None:
    """``None`` when the preregistration records the study file's sha256, else the reason."""
    try:
        text = Path(prereg).read_text()
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    m = _SHA.search(text)
    if m is None:
        return "it records no study file sha256 (write it with simstudy preregister)"
    now = study_sha256(study)
    if m.group(1) != now:
        return (f"it registers sha256 {m.group(1)[:12]}..., the study file now has "
                f"{now[:12]}...: the study changed since it was preregistered")
    return None


def write_prereg(path: str | Path, out: str | Path, power: Any = None) -> Path:
    """Writes the preregistration of the study file ``path`` to ``out``.

    Args:
        power: the result of :func:`simstudy.run.study_power.run_study_power` (optional: its table
            and smallest N are quoted).
    """
    scenario, _ = load_study(path)
    study = scenario.study
    live = study.live
    names = [policy_name(p) for p in scenario.policies]
    policies = study.study_policies(names)
    conditions = live.live_conditions(policies)
    baseline = study.baseline_policy(names)
    personalized = {policy_name(p): p.personalized for p in scenario.policies}
    n = live.target_per_condition
    lines = [
        f"# Preregistration: {scenario.name}", "",
        scenario.description.strip() if scenario.description else "", "",
        "## Data collection",
        "No data have been collected for this study at the time of registration.", "",
        "## Hypotheses",
        f"H1: participants served by a personalized policy rate their plan's acceptance and "
        f"their willingness to act higher than participants served by `{baseline}` "
        "(universal recourse).",
        "H2: acceptance and willingness to act decrease with the plan's distance (sparsity, "
        "proximity) from the participant's profile.", "",
        "## Dependent variables",
        f"- accept: \"{live.questionnaire.accept}\" (7 points)",
        f"- act: \"{live.questionnaire.act}\" (7 points)", "",
        "## Conditions",
        *[f"- `{c}` ({'personalized' if personalized.get(c, True) else 'universal'})"
          for c in conditions],
        f"Assignment: balanced server-side (least-filled condition counting participants in "
        f"progress, seeded ties). Actionability elicited by the {live.elicitation} scheme. "
        f"Each participant also rates {study.random_others} random plan(s).", "",
        "## Analyses",
        f"- Policy contrast: each condition's policy against `{baseline}` on accept and act, "
        "participant random intercepts (`simstudy analyze` with a `contrast:` section).",
        "- GAMMs of accept and act on sparsity and proximity with participant random effects "
        "(Wood's smooth test).", "",
        "## Exclusions",
        f"- Participants failing {live.reject_after_failures} or more of the "
        f"{len(live.attention_checks)} instructed-response attention checks (status "
        "`failed_attention`).",
        "- Ratings of plans changing an item the participant says they cannot change "
        "(`blocked = 1`) in a sensitivity analysis; the main analysis keeps them."
        if not study.exclude_blocked else
        "- Ratings of plans changing an item the participant says they cannot change.",
        "- Inconsistent answers (stated actionability vs. later 'changeable?') are reported, "
        "not excluded.", "",
        "## Sample size",
        f"{n} participants per condition, {n * len(conditions)} in all.",
    ]
    if power is not None:
        lines += ["", "Power analysis (`simstudy power` on the same file):", "", "```",
                  power["table"].to_string(index=False), "```",
                  "", *[f"- {t}: smallest N reaching the target: {v}"
                        for t, v in power["smallest_n"].items()]]
    if power is not None or study.power is not None:
        lines += ["", "Note: `simstudy power` simulates the simulated study's within-participant "
                      "design (every participant rates every policy); the live study serves "
                      "one policy per participant (participant effects no longer cancel "
                      "within a person), so for the policy contrast it is likely optimistic."]
    if power is None and study.power is not None:
        lines += ["", f"Power is simulated with `simstudy power {path}` over N in "
                      f"{study.power.participants} ({study.power.simulations} simulations, "
                      f"alpha {study.power.alpha}, target {study.power.target_power})."]
    lines += ["", "## Other", file_sha256_line(study_sha256(path)), ""]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))
    return out
