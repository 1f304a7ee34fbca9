"""Scenario entries of the built-in worlds and of the decision model, without torch.

The entries validate documents (``world:``, ``decision_model:``); each world kind is a row of
the table of kinds (:mod:`simstudy.core.registry`) naming the builder that makes the world and
its data from the entry, ``builder(params, seed, cache, base_dir) -> (world, data, info)``, in
a module that imports torch only when a world is built. The training settings are the one
declaration of each configuration (:mod:`simstudy.world.config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import Discriminator, Field, Tag, model_validator

from ..core import registry
from ..core.documents import FieldProblem, StrictModel
from .base import FeatureRoles
from .config import DecisionConfig, FlowSettings, SplitShares
from .csv_source import CsvFeature, CsvProblem, CsvSource, read_csv_source
from .loan_roles import LOAN_PRESENTATION, LOAN_ROLES

__all__ = ["SplitShares", "CsvFeature", "CsvSource", "WorldParams", "LoanWorldSpec",
           "CausalFlowWorldSpec", "ExternalModelSpec",
           "DecisionModelEntry", "EXTERNAL_KINDS"]


class WorldParams(StrictModel):
    """Base of the world entries: a subclass declares ``kind: Literal[...]`` and its fields,
    and is registered with its builder (``register("world", Params, builder)``).

    Optional members a subclass may add (see :mod:`simstudy.core.registry`): ``roles()``,
    ``feature_names()``, ``check_data(base_dir)``,
    ``data_files(base_dir)``, ``check_example()``; ``labels`` says whether the world has a
    label rule (so the event world may retrain on it). The builder of a world that knows its
    label may end in :func:`simstudy.world.data.sampled_world` (its data drawn and split as
    the built-in worlds' are).

    Example:
        >>> from simstudy.world import WorldParams
        >>> class EmptyWorldParams(WorldParams):
        ...     kind: Literal["empty"] = "empty"
        >>> EmptyWorldParams().labels
        False
    """

    #: the world has a label rule (``label(x, generator)``), so the event world may retrain
    labels: ClassVar[bool] = False

    def build(self, seed: int, cache: Any = None, base_dir: str | Path = ".") -> tuple:
        """``(world, WorldData, info)``: the registered builder of this kind, given the entry."""
        return registry.build("world", self, seed, cache, base_dir)


class LoanWorldSpec(WorldParams):
    """The Loan SCM (:class:`~simstudy.world.loan.LoanSCM`, which takes this entry): the
    world's sample of ``n_samples`` draws, split into train / validation / deployment.

    Attributes:
        stochastic_label: draw ``Y ~ Bernoulli(p(x))`` instead of thresholding ``p`` at 0.5.
        n_samples: draws from the world.
        split: train / validation / deployment shares of the draws.

    References:
        Karimi, von Kügelgen, Schölkopf & Valera, "Algorithmic recourse under imperfect causal
        knowledge: a probabilistic approach", NeurIPS 2020, https://arxiv.org/abs/2006.06831.

    Example:
        >>> from simstudy.world import LoanWorldSpec
        >>> spec = LoanWorldSpec.model_validate({"n_samples": 1000})
        >>> spec.kind, spec.split, spec.stochastic_label
        ('loan', (0.5, 0.25, 0.25), False)
    """

    kind: Literal["loan"] = "loan"
    labels: ClassVar[bool] = True
    stochastic_label: bool = False
    n_samples: int = Field(20000, ge=100, le=10_000_000)
    split: SplitShares = (0.5, 0.25, 0.25)

    def feature_names(self) -> tuple[str, ...]:
        return LOAN_ROLES.names

    def roles(self) -> FeatureRoles:
        """The world's feature roles, without torch."""
        return LOAN_ROLES

    def presentation(self) -> dict:
        """How people read the features (:data:`~simstudy.world.loan_roles.LOAN_PRESENTATION`,
        its mappings argued where it is declared)."""
        return dict(LOAN_PRESENTATION)

    @classmethod
    def check_example(cls) -> dict:
        """A small world for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "loan", "n_samples": 400}




class CausalFlowWorldSpec(WorldParams):
    """A causal flow fitted to data: Loan samples (``source: loan``) or a CSV file.

    The data keep their own labels (the Loan SCM's ground truth or the CSV's label column); the
    flow replaces the known SCM for abduction, counterfactuals and densities.

    References:
        Javaloy, Sánchez-Martín & Valera, "Causal normalizing flows: from theory to practice",
        NeurIPS 2023, https://arxiv.org/abs/2306.05415.

    Example:
        >>> from simstudy.world import CausalFlowWorldSpec
        >>> spec = CausalFlowWorldSpec(kind="causal_flow", n_samples=500)
        >>> spec.source, spec.flow.epochs
        ('loan', 300)
    """

    kind: Literal["causal_flow"]
    #: a learned flow has no label rule, so the event world cannot retrain on it
    labels: ClassVar[bool] = False
    name: str | None = None
    source: Literal["loan", "csv"] = "loan"
    n_samples: int = Field(20000, ge=100)
    csv: CsvSource | None = None
    flow: FlowSettings = Field(default_factory=FlowSettings)
    dequantize: bool = Field(False, description=(
        "fit the flow to the coded features (those with a codebook) dequantized by uniform "
        "noise on (-1/2, 1/2), and map every value the world produces back to a code "
        "(simstudy.world.coded)"))

    @classmethod
    def check_example(cls) -> dict:
        """A small, briefly trained flow for the contract checks (:mod:`simstudy.checks`)."""
        return {"kind": "causal_flow", "n_samples": 400,
                "flow": {"hidden": [16], "epochs": 3, "spline_bins": 4}}

    @model_validator(mode="after")
    def _check_source(self) -> CausalFlowWorldSpec:
        if (self.source == "csv") != (self.csv is not None):
            raise ValueError("give `csv` exactly when source is 'csv'")
        return self

    def feature_names(self) -> tuple[str, ...]:
        if self.csv is None:
            return LOAN_ROLES.names
        return tuple(f.name for f in self.csv.features)


    def roles(self) -> FeatureRoles:
        """The world's feature roles, without torch."""
        return LOAN_ROLES if self.csv is None else self.csv.roles()

    def data_files(self, base_dir: str | Path = ".") -> list[Path]:
        """The files the world reads (their hashes are part of a run's resume key)."""
        if self.csv is None:
            return []
        path = Path(self.csv.path)
        return [path if path.is_absolute() else Path(base_dir) / path]

    def check_data(self, base_dir: str | Path = ".") -> list[tuple[str, str]]:
        """``(field, reason)`` for every problem of the data file (read at validation)."""
        if self.csv is None:
            return []
        try:
            read_csv_source(self.csv, base_dir)
        except CsvProblem as exc:
            return [(exc.field, exc.reason)]
        return []




EXTERNAL_KINDS = ("sklearn", "torchscript", "onnx")


class ExternalModelSpec(StrictModel):
    """Scenario entry of a decision model read from a file (see
    :mod:`simstudy.world.external`)."""

    kind: Literal["sklearn", "torchscript", "onnx"]
    path: str = Field(min_length=1, description="model file, relative to the scenario")
    features: list[str] | None = Field(
        None, description="feature order the model was fitted with (default: the world's)")
    output: Literal["logit", "probability"] | None = Field(
        None, description="what the model returns (torchscript: logit; onnx: probability)")
    onnx_output: str | None = Field(None, description="ONNX output to read (default: last)")
    trusted: list[str] = Field(default_factory=list,
                               description="further types skops may load (sklearn)")

    @property
    def differentiable(self) -> bool:
        return self.kind == "torchscript"

    def resolve(self, base_dir: str | Path) -> Path:
        path = Path(self.path)
        return path if path.is_absolute() else Path(base_dir) / path

    def load(self, base_dir: str | Path, feature_names: tuple[str, ...]) -> Any:
        """Reads and checks the model (an
        :class:`~simstudy.world.external.ExternalDecisionModel`); raises
        :class:`~simstudy.core.documents.FieldProblem` naming the field."""
        return registry.build("model", self, base_dir, feature_names)

    def check(self, base_dir: str | Path, feature_names: tuple[str, ...]
              ) -> list[tuple[str, str]]:
        """``(field, reason)`` for a model file that cannot serve (read at validation)."""
        try:
            self.load(base_dir, feature_names)
        except FieldProblem as exc:
            return [(exc.field, exc.reason)]
        return []

    def obtain(self, data: Any, cache: Any, seed: int, base_dir: str | Path = ".",
               progress: bool = False) -> tuple[Any, dict]:
        """The model and its record in the manifest (as a trained model's)."""
        model = self.load(base_dir, data.roles.names)
        return model, model.record(self, data, base_dir)


def _decision_form(value: Any) -> str:
    # an entry with a ``kind`` names a model file; without one it configures training
    if isinstance(value, ExternalModelSpec) or (isinstance(value, dict) and "kind" in value):
        return "file"
    return "trained"


#: ``decision_model:`` in a scenario: training settings, or a model file with a ``kind``.
DecisionModelEntry = Annotated[
    Union[Annotated[DecisionConfig, Tag("trained")],  # noqa: UP007
          Annotated[ExternalModelSpec, Tag("file")]],
    Discriminator(_decision_form),
]
