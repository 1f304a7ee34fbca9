"""The recruitment platform's rules for entry links (``study.live.platform``).

Prolific passes ``PROLIFIC_PID``, ``STUDY_ID`` and ``SESSION_ID`` as URL parameters. With
``platform: prolific`` an entry link is refused unless its ``PROLIFIC_PID`` has Prolific's
form (24 hexadecimal digits, the form of every Prolific participant ID) and its ``STUDY_ID``
is the study's (``study.live.study_id``), so links made up or copied from another study do
not create participants. With ``platform: none`` any short participant id of letters, digits
and ``_ . : -`` enters (pilots, bots).

Only a ``POST`` creates a participant (:class:`~simstudy.live.app.LiveServer`): the link's
``GET`` shows a start page, so a link prefetcher, a preview or a ``HEAD`` request creates
nobody.

References:
    Prolific, "Recording Prolific IDs and other URL parameters" (URL parameters
    ``PROLIFIC_PID``, ``STUDY_ID``, ``SESSION_ID``).

Example:
    >>> from simstudy.study.live_section import LiveSpec
    >>> checks = [{"after": "profile", "prompt": "Select 'No'.", "options": ["Yes", "No"],
    ...            "correct": "No"}] * 2
    >>> live = LiveSpec.model_validate({"attention_checks": checks, "platform": "prolific",
    ...                                 "study_id": "S1"})
    >>> entry_problem(live, "5f1e" * 6, "S1") is None, entry_problem(live, "BOT-1", "S1")
    (True, 'pid')
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["PROLIFIC_PID", "ANY_PID", "entry_problem"]

#: A Prolific participant ID: 24 hexadecimal digits.
PROLIFIC_PID = re.compile(r"[0-9a-f]{24}")
#: Any other platform's (or a pilot's) participant id.
ANY_PID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def entry_problem(live: Any, pid: str, study_id: str | None) -> str | None:
    """Why an entry link with participant id ``pid`` and ``study_id`` is refused under the
    study's platform (``live``: its :class:`~simstudy.study.live_section.LiveSpec`): ``pid``
    (not an id the platform issues) or ``study_id`` (not the study's), the key of the page's
    text (``entry.<reason>`` of the locale); ``None`` when it enters."""
    if live.platform == "prolific":
        if not PROLIFIC_PID.fullmatch(pid):
            return "pid"
        if live.study_id is not None and study_id != live.study_id:
            return "study_id"
        return None
    if not ANY_PID.fullmatch(pid):
        return "pid"
    return None
