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
    """The preregistration's section on how the live study runs (platform, framing,
    elicitation, attention checks, timeout, consent and debriefing); Markdown lines.

    :func:`simstudy.planning.preregistration.preregistration` writes the page (hypotheses,
    variables, conditions and assignment, analyses, exclusions and the no-plan rule, sample
    size, stopping rule) and adds this section when the study has ``live:``.
    """
    scenario, _ = load_study(path)
    study = scenario.study
    live = study.live
    views = world_views(scenario.world)
    framing = ("participants enter their own profile" if live.framing == "own_profile" else
               f"a vignette (\"{' '.join((live.vignette or '').split())}\"); participants "
               "enter the profile they imagine")
    checks = [f"  - after {c.after}: \"{c.prompt}\" ({', '.join(c.options)})"
              for c in live.attention_checks]
    return [
        "## 10. Procedure (live)", "",
        f"- Platform: {live.platform}" + (f" (study id `{live.study_id}`)" if live.study_id
                                           else "") + f"; framing: {framing}.",
        "- Values shown and entered (the world's presentation; model units stay internal): "
        + ("; ".join(v.describe() for v in views.values()) if views else
           "model units, at a thousandth of each feature's range") + ".",
        f"- Actionability elicited by the {live.elicitation} scheme"
        + (f" ({live.likert_levels} levels)" if live.elicitation == "likert" else "") + ".",
        f"- Attention checks ({len(live.attention_checks)} instructed-response items; "
        f"failing {live.reject_after_failures} gives status `failed_attention`):", *checks,
        f"- A slot is held {live.timeout_minutes:g} minutes; an unfinished participant is then "
        "marked `timed_out`.",
        f"- Consent: \"{' '.join(live.consent.split())}\"",
        f"- Debriefing (discloses the random plans): \"{' '.join(live.debriefing.split())}\"",
        "",
    ]
