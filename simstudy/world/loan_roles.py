"""The Loan world's feature roles, without torch (read when documents are validated).

Example:
    >>> LOAN_ROLES.actionable
    ('loan_amount', 'loan_duration', 'income', 'savings')
    >>> sorted(LOAN_ROLES.rankings)[0]
    'causal_order'
    >>> LOAN_ROLES.codebook["gender"][0]
    'female'
"""

from __future__ import annotations

from .base import FeatureRoles

__all__ = ["LOAN_ROLES"]

LOAN_ROLES = FeatureRoles(
    names=("gender", "age", "education", "loan_amount", "loan_duration", "income", "savings"),
    immutable=("gender", "age"),
    actionable=("loan_amount", "loan_duration", "income", "savings"),
    sensitive=("gender",),
    parents={
        "gender": (),
        "age": (),
        "education": ("gender", "age"),
        "loan_amount": ("gender", "age"),
        "loan_duration": ("gender", "age", "loan_amount"),
        "income": ("gender", "age", "education"),
        "savings": ("income",),
    },
    # The ranking distributions of the individual-actionability study's Table 4.
    rankings={
        "causal_order": ("loan_amount", "income"),
        "reverse_causal_order": ("loan_duration", "savings"),
        "privileged": ("income", "savings"),
        "non_privileged": ("loan_amount", "loan_duration"),
    },
    income="income",
    # In the Loan SCM (Karimi et al. 2020) gender 1 adds to income: 1 = male, 0 = female.
    codebook={"gender": {0: "female", 1: "male"}},
    reference_levels={"gender": 1},
)
