"""The German-credit world: a causal flow fitted to the real applicants over CARMA's graph.

CARMA's public code has no structural equations for German credit (its equations module holds
a placeholder); its world is a causal normalizing flow fitted to the real data over a stated
graph of seven variables. This kind is that world on the project's copy of the data (the
shipped ``data/german_credit.csv``, the UCI Statlog German Credit table), built by the CSV
causal-flow world (:class:`~simstudy.world.specs.CausalFlowWorldSpec`) from a fixed feature
table, with the coded features dequantized to fit and mapped back to codes
(:mod:`simstudy.world.coded`), as CARMA's flow treats them.

Graph (parents), in causal order::

    sex, age                                   (roots)
    credit_amount  <- sex, age
    duration       <- sex, age, credit_amount
    checking       <- sex, age
    savings        <- sex, age, checking
    housing        <- sex, age, checking, savings

Roles. Sex is immutable and the sensitive attribute; age is immutable. CARMA's German-credit
preparator lists sex and age as the variables it intervenes on (``intervention_index_list``),
but that list serves to evaluate the fitted flow's interventional distributions, not recourse:
nobody can be advised to change their sex or age. Actionable are the terms of the credit the
applicant asks for (its amount and its duration in months, which the applicant chooses) and the
three coded features an applicant can change by acting on their finances or their home: the
checking account's status (opening one or moving money into it), the savings bracket (saving,
or moving money into savings) and the housing type (renting, owning or living for free,
changed by moving; a large change, which each person's own profile may rule out).

Codebook. Checking account and savings are ordinal, ordered by the money the applicant holds at
the bank: checking ``0`` overdrawn (``< 0 DM``), ``1`` no checking account (nothing held),
``2`` ``0 to 200 DM``, ``3`` ``>= 200 DM`` or salary paid in for at least a year; savings ``0``
unknown or none, ``1`` ``< 100 DM``, ``2`` ``100 to 500``, ``3`` ``500 to 1000``,
``4`` ``>= 1000 DM``. Housing is categorical (rent, own, for free have no order): any change
counts one unit in cost and distances (:func:`simstudy.metrics.normalized_change`).

Checking's levels. CARMA's German-credit dataset one-hots the checking account into 3 columns
(``datasets/german_credit.py``: ``x[:, 4] = data[:, 4:7].argmax(1)``) of its preprocessed arrays
(``german_data/*.npy``, not in its repository), so how UCI's four statuses were mapped onto three
is not published. This world keeps UCI's 4: each has its own share of good applicants in the
1,000 (overdrawn 0.51, no checking account 0.88, ``0 to 200 DM`` 0.61, ``>= 200 DM`` 0.78), so
merging any two would lose a distinct rate.

Decision model. :data:`DECISION_MODEL` (one hidden layer of 16, Adam weight decay 1e-3, both
classes weighed equally in the loss, 500 epochs; CARMA states no German-credit classifier): on
the 1,000 applicants under 5-fold stratified cross-validation its balanced accuracy is 0.698,
its AUC 0.740 and its accuracy 0.696 (the majority answer, "good" for everyone: 0.5, 0.5 and
0.700); the published architecture (two layers of 32, unweighted) reaches 0.619, 0.720 and
0.709: it answers "good" for nearly everyone (``python -m benchmarks.worlds --worlds
german_credit``, ``docs/results/german_credit.md``).

The split is CARMA's (80 % fitting, 10 % validation, 10 % deployment); the flow's settings are
the CSV world's and may be overridden (``flow:``).

References:
    Majumdar & Valera, "CARMA: A practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024 (code: ayanmaj92/carma-recourse,
    ``causal_flows/causal_nf/sem_equations/german_credit.py``, ``preparators/``,
    ``datasets/german_credit.py``); Hofmann, Statlog (German Credit Data), UCI Machine Learning
    Repository, 1994, https://doi.org/10.24432/C5NC77.

Example:
    >>> from simstudy.core.registry import entry_model
    >>> spec = entry_model("world", "german_credit").model_validate({"kind": "german_credit"})
    >>> spec.roles().actionable
    ('credit_amount', 'duration', 'checking', 'savings', 'housing')
    >>> spec.roles().categorical, spec.roles().parents["housing"]
    (('housing',), ('sex', 'age', 'checking', 'savings'))
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from ..resources import resource_path
from .base import FeatureRoles
from .config import SplitShares
from .csv_source import CsvSource
from .presentation import FeatureView
from .specs import CausalFlowWorldSpec, FlowSettings, WorldParams

__all__ = ["GermanCreditWorldSpec", "GERMAN_CREDIT_CSV", "german_credit_source",
           "GERMAN_CREDIT_PRESENTATION", "DECISION_MODEL"]

#: The project's copy of the UCI German Credit table.
GERMAN_CREDIT_CSV = resource_path("data", "german_credit.csv")

CHECKING = {"... < 0 DM": 0, "no checking account": 1, "0 <= ... < 200 DM": 2,
            "... >= 200 DM / salary assignments for at least 1 year": 3}
SAVINGS = {"unknown/ no savings account": 0, "... < 100 DM": 1, "100 <= ... < 500 DM": 2,
           "500 <= ... < 1000 DM": 3, "... >= 1000 DM": 4}
HOUSING = {"rent": 0, "own": 1, "for free": 2}

#: the German-credit decision model (a scenario's ``decision_model:`` entry; see the module
#: docstring for its cross-validated figures)
DECISION_MODEL = {"hidden": [16], "epochs": 500, "weight_decay": 1e-3,
                  "class_weight": "balanced"}


#: The features as the UCI codebook states them (Hofmann 1994: attribute 1 checking account,
#: 2 duration in months, 5 credit amount in DM, 6 savings account / bonds, 9 sex, 13 age in
#: years, 15 housing), in plain words; the data are in these units, so every mapping is the
#: identity.
GERMAN_CREDIT_PRESENTATION = {
    "sex": FeatureView("Sex", levels={0: "female", 1: "male"}),
    "age": FeatureView("Age", "years", step=1.0, minimum=18.0, maximum=100.0),
    "credit_amount": FeatureView("Credit amount", "DM", step=1.0, minimum=0.0),
    "duration": FeatureView("Duration of the credit", "months", step=1.0, minimum=1.0),
    "checking": FeatureView("Checking account", levels={
        0: "Overdrawn (below 0 DM)", 1: "No checking account", 2: "0 to 200 DM",
        3: "200 DM or more, or salary paid in for at least a year"}),
    "savings": FeatureView("Savings", levels={
        0: "None, or not known", 1: "Below 100 DM", 2: "100 to 500 DM", 3: "500 to 1,000 DM",
        4: "1,000 DM or more"}),
    "housing": FeatureView("Housing", levels={0: "Rent", 1: "Own", 2: "Live for free"}),
}


def _labels(codes: dict[str, int]) -> dict[int, str]:
    return {code: text for text, code in codes.items()}


def german_credit_source(path: str | Path = GERMAN_CREDIT_CSV,
                         split: tuple[float, float, float] = (0.8, 0.1, 0.1)) -> CsvSource:
    """The CSV entry of the German-credit world: features, graph, roles and codebook."""
    return CsvSource.model_validate({
        "path": str(path),
        "features": [
            {"name": "sex", "column": "personal_status_and_sex", "startswith": "male"},
            {"name": "age", "column": "age_in_years"},
            {"name": "credit_amount", "parents": ["sex", "age"]},
            {"name": "duration", "column": "duration_in_month",
             "parents": ["sex", "age", "credit_amount"]},
            {"name": "checking", "column": "status_of_existing_checking_account",
             "codes": CHECKING, "parents": ["sex", "age"]},
            {"name": "savings", "column": "savings_account_and_bonds", "codes": SAVINGS,
             "parents": ["sex", "age", "checking"]},
            {"name": "housing", "column": "housing", "codes": HOUSING,
             "parents": ["sex", "age", "checking", "savings"]},
        ],
        "label": "creditability", "positive": "good",
        "immutable": ["sex", "age"],
        "actionable": ["credit_amount", "duration", "checking", "savings", "housing"],
        "sensitive": ["sex"],
        "codebook": {"sex": {0: "female", 1: "male"}, "checking": _labels(CHECKING),
                     "savings": _labels(SAVINGS), "housing": _labels(HOUSING)},
        "reference_levels": {"sex": 1},
        "scales": {"checking": "ordinal", "savings": "ordinal", "housing": "categorical"},
        "split": split,
    })


class GermanCreditWorldSpec(WorldParams):
    """The German-credit world (see :mod:`simstudy.world.german_credit`): a causal flow fitted
    to the real applicants over CARMA's seven-variable graph, coded features kept on codes.

    Attributes:
        path: another copy of the data (relative to the scenario); default the project's.
        split: fitting / validation / deployment shares (CARMA's 0.8 / 0.1 / 0.1).
        flow: the causal flow's architecture and training.

    Example:
        >>> spec = GermanCreditWorldSpec.model_validate(
        ...     {"kind": "german_credit", "flow": {"epochs": 2, "hidden": [8]}})
        >>> world, data, info = spec.build(seed=0)
        >>> info["world"], data.x_test.shape, sorted(set(data.x_test[:, 6].tolist()))
        ('german_credit', torch.Size([100, 7]), [0.0, 1.0, 2.0])
    """

    kind: Literal["german_credit"]
    #: a learned flow has no label rule, so the event world cannot retrain on it
    labels: ClassVar[bool] = False
    name: str | None = None
    path: str | None = Field(None, description="another copy of the German Credit CSV "
                                               "(default: the project's)")
    split: SplitShares = (0.8, 0.1, 0.1)
    flow: FlowSettings = Field(default_factory=FlowSettings)

    @classmethod
    def check_example(cls) -> dict:
        """A briefly trained flow for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "german_credit",
                "flow": {"hidden": [16], "epochs": 3, "spline_bins": 4}}

    def flow_world(self) -> CausalFlowWorldSpec:
        """The CSV causal-flow world this entry stands for (the German-credit table)."""
        return CausalFlowWorldSpec(
            kind="causal_flow", name=self.name, source="csv", dequantize=True,
            csv=german_credit_source(self.path or GERMAN_CREDIT_CSV, self.split),
            flow=self.flow)

    def roles(self) -> FeatureRoles:
        """The world's feature roles, without torch."""
        return self.flow_world().roles()

    def feature_names(self) -> tuple[str, ...]:
        return self.roles().names

    def presentation(self) -> dict[str, FeatureView]:
        """How people read the features (:data:`GERMAN_CREDIT_PRESENTATION`)."""
        return dict(GERMAN_CREDIT_PRESENTATION)

    def data_files(self, base_dir: str | Path = ".") -> list[Path]:
        """The data file (its hash is part of a run's resume key)."""
        return self.flow_world().data_files(base_dir)

    def check_data(self, base_dir: str | Path = ".") -> list[tuple[str, str]]:
        """``(field, reason)`` for every problem of the data file (read at validation); the
        document's only data field is ``path``, so every problem names it."""
        return [("path", reason) for _, reason in self.flow_world().check_data(base_dir)]
