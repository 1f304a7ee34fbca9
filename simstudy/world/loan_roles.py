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
from .presentation import FeatureView

__all__ = ["LOAN_ROLES", "LOAN_PRESENTATION"]

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

# How participants read the Loan world's features. The SCM's features are centred model units
# (loan_scm.md): they have no currency and half the values of amounts are negative. The SCM
# mimics the German Credit data (Karimi et al. 2020), so each mapping anchors a feature on that
# data where it has the feature, and is a stated assumption where it has not:
# - age: A = U_A - 35 with U_A ~ Gamma(10, scale 3.5), mean 35 and sd 11.1, the German Credit
#   applicants' age in years (mean 35.5, sd 11.4): A + 35 is the age in years; the entry page
#   accepts adults only (18 and over).
# - education: E + 0.5 is a logistic output in (0, 1) with no unit in the SCM; it is shown as a
#   score from 0 to 100 (100 (E + 0.5)), which says what it is: a position on a scale.
# - loan amount and duration: the SCM's L and D are symmetric (normal noise) while real amounts
#   and durations are positive and right-skewed, so they are shown as exp-mapped: German
#   Credit's median (2,319.5 DM; 18 months) times exp(scale * model value), the scale matching
#   the spread of the log of the German values to the SCM's (log sd 0.776 / sd of L 2.77 =
#   0.28; 0.582 / sd of D 4.53 = 0.13). Amounts are shown in EUR.
# - income and savings: German Credit has no income and codes savings in brackets; both are
#   shown exp-mapped as well, by assumption: net income per month with a median of 2,000 EUR
#   and a log sd of 0.5 (sd of I 2.5, scale 0.2); savings with 1,000 EUR at the model's zero and
#   a log sd of 0.84 (sd of S 5.6, scale 0.15).
# Costs, distances and the decision model stay in model units: the mapping is how values are
# shown and entered, nothing else.
LOAN_PRESENTATION = {
    "gender": FeatureView("Gender", levels={0: "female", 1: "male"}),
    "age": FeatureView("Age", "years", offset=35.0, step=1.0, minimum=18.0, maximum=100.0,
                       note="A + 35: the Gamma(10, 3.5) noise has German Credit's ages"),
    "education": FeatureView("Education level", "out of 100", scale=100.0, offset=50.0,
                             step=1.0, minimum=0.0, maximum=100.0,
                             note="100 (E + 0.5): the SCM's logistic education as a score"),
    "loan_amount": FeatureView("Loan amount", "EUR", "exp", scale=0.28, offset=2319.5,
                               step=1.0, minimum=0.0,
                               note="German Credit's median amount and log spread"),
    "loan_duration": FeatureView("Loan duration", "months", "exp", scale=0.13, offset=18.0,
                                 step=1.0, minimum=1.0,
                                 note="German Credit's median duration and log spread"),
    "income": FeatureView("Monthly net income", "EUR", "exp", scale=0.2, offset=2000.0,
                          step=1.0, minimum=0.0,
                          note="assumed: median 2,000 EUR a month, log sd 0.5"),
    "savings": FeatureView("Savings", "EUR", "exp", scale=0.15, offset=1000.0, step=1.0,
                           minimum=0.0, note="assumed: 1,000 EUR at zero, log sd 0.84"),
}
