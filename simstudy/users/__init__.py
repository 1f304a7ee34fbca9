"""Simulated rating studies of the published design (:mod:`simstudy.users.study`).

The simulated people themselves (hidden preferences, feedback, response dispositions) live in
:mod:`simstudy.people`.
"""

from .study import STUDY_COLUMNS, ProfilePool, simulate_study

__all__ = ["STUDY_COLUMNS", "ProfilePool", "simulate_study"]
