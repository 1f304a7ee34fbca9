"""A decision model of one's own, read from a file instead of trained by simstudy.

A scenario names it with ``decision_model: {kind: sklearn | torchscript | onnx, path: ...}``.
The three formats are read without unpickling arbitrary objects:

* ``sklearn``: a fitted classifier saved with :mod:`skops` (``skops.io.dump``). Only types
  skops trusts are loaded; others must be listed by the user in ``trusted``. The approval
  probability is ``predict_proba(x)[:, 1]``.
* ``torchscript``: a module saved with ``torch.jit.save``; its output is the approval logit
  (``output: logit``, the default) or probability. It is differentiable.
* ``onnx``: a model run by :mod:`onnxruntime`; one float input with one row per applicant, the
  output named by ``onnx_output`` (default: the last) being the probability (a second column
  is taken as the positive class's) or the logit.

The model receives the world's features in the world's order. ``features`` states the order
the model was fitted with; it must equal the world's (a scikit-learn model fitted on a
DataFrame carries its column names and they are checked too). Only ``torchscript`` models give
gradients: policies that need them (Wachter, iCARMA, HARE) refuse the others at validation.

Example:
    >>> from simstudy.world.specs import ExternalModelSpec
    >>> spec = ExternalModelSpec(kind="onnx", path="model.onnx")
    >>> spec.differentiable
    False
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..core.documents import FieldProblem
from ..core.store import file_sha256
from .decision import state_dict_hash
from .specs import EXTERNAL_KINDS, ExternalModelSpec

__all__ = ["ExternalModelSpec", "ExternalDecisionModel", "EXTERNAL_KINDS", "load_external_model",
           "external_model_record"]
_CLIP = 1e-12  # probabilities of exactly 0 or 1 become finite logits


class ExternalDecisionModel(nn.Module):
    """A decision model read from a file, behind the interface of the trained one.

    ``forward`` gives the approval logit of each row; ``approves`` the decision (logit >= 0).
    The file's sha256 is kept as a buffer, so the state-dict hash that keys caches and
    manifests names the file.
    """

    def __init__(self, kind: str, predict: Any, feature_names: tuple[str, ...], sha256: str,
                 output: str = "logit", module: nn.Module | None = None):
        super().__init__()
        self.kind, self.feature_names, self.output = kind, tuple(feature_names), output
        self._predict = predict
        self.scripted = module
        self.register_buffer("file_sha256", torch.tensor(list(bytes.fromhex(sha256)),
                                                         dtype=torch.uint8))

    @property
    def differentiable(self) -> bool:
        return self.scripted is not None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.scripted is not None:
            out = self.scripted(x.to(torch.float32)).reshape(len(x))
        else:
            with torch.no_grad():
                out = torch.as_tensor(self._predict(x.detach().cpu().numpy()),
                                      dtype=torch.float32).reshape(len(x))
        if self.output == "probability":
            p = out.clamp(_CLIP, 1 - _CLIP)
            return torch.log(p) - torch.log1p(-p)
        return out

    @torch.no_grad()
    def approves(self, x: torch.Tensor) -> torch.Tensor:
        return self(x) >= 0

    def record(self, spec: ExternalModelSpec, data: Any, base_dir: str | Path) -> dict:
        """The model's record in the manifest (:func:`external_model_record`)."""
        return external_model_record(spec, self, data, base_dir)

def load_external_model(spec: ExternalModelSpec, base_dir: str | Path,
                        feature_names: tuple[str, ...]) -> ExternalDecisionModel:
    """Reads and checks the model a :class:`~simstudy.world.specs.ExternalModelSpec` names;
    raises :class:`FieldProblem` naming the field."""
    path = spec.resolve(base_dir)
    if not path.is_file():
        raise FieldProblem("decision_model.path", f"file not found: {path}")
    names = tuple(feature_names)
    if spec.features is not None and tuple(spec.features) != names:
        raise FieldProblem("decision_model.features", (
            f"the model's feature order {spec.features} differs from the world's "
            f"{list(names)}"))
    loader = {"sklearn": _sklearn, "torchscript": _torchscript, "onnx": _onnx}[spec.kind]
    model = loader(spec, path, names, file_sha256(path))
    probe = torch.zeros(2, len(names), dtype=torch.float64)
    try:
        out = model(probe)
    except Exception as exc:  # noqa: BLE001 - any failure of a user's model: one line
        raise FieldProblem("decision_model.path", (
            f"the model cannot score {len(names)} features {list(names)}: "
            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")) from None
    if out.shape != (2,) or not torch.isfinite(out).all():
        raise FieldProblem("decision_model.path", (
            f"the model must give one finite score per row; got shape {tuple(out.shape)}"))
    return model


def external_model_record(spec: ExternalModelSpec, model: ExternalDecisionModel, data: Any,
                          base_dir: str | Path) -> dict:
    """The model's record in the manifest (as a trained model's)."""
    with torch.no_grad():
        decided = model.approves(data.x_test)
    sha = bytes(model.file_sha256.tolist()).hex()
    return {
        "kind": spec.kind, "path": str(spec.resolve(base_dir)), "file_sha256": sha,
        "state_dict_sha256": state_dict_hash(model), "cache_key": None, "seed": None,
        "test_accuracy": float((decided.long() == data.y_test).float().mean()),
        "test_approval_rate": float(decided.float().mean())}


# -- formats ----------------------------------------------------------------------------
def _sklearn(spec: ExternalModelSpec, path: Path, names: tuple[str, ...], sha: str
             ) -> ExternalDecisionModel:
    # an optional reader (``simstudy[models]``): imported only where a file of its format is
    # read, so that simstudy installs and runs without it
    try:
        import skops.io as sio
    except ImportError:
        raise FieldProblem("decision_model.kind", "reading scikit-learn models needs skops: "
                           "pip install 'simstudy[models]'") from None
    try:
        untrusted = [t for t in sio.get_untrusted_types(file=path) if t not in spec.trusted]
        if untrusted:
            raise FieldProblem("decision_model.trusted", (
                f"the file holds types skops does not trust: {untrusted}; list them under "
                "`trusted` only if you trust the file"))
        estimator = sio.load(path, trusted=list(spec.trusted) or None)
    except FieldProblem:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file: one line
        raise FieldProblem("decision_model.path", f"not a skops file: {exc}") from None
    if not hasattr(estimator, "predict_proba"):
        raise FieldProblem("decision_model.path", (
            f"{type(estimator).__name__} has no predict_proba; give a classifier"))
    fitted = getattr(estimator, "feature_names_in_", None)
    if fitted is not None and tuple(map(str, fitted)) != names:
        raise FieldProblem("decision_model.features", (
            f"the model was fitted on columns {list(map(str, fitted))}; the world's "
            f"features are {list(names)}"))
    if getattr(estimator, "n_features_in_", len(names)) != len(names):
        raise FieldProblem("decision_model.path", (
            f"the model takes {estimator.n_features_in_} features; the world has "
            f"{len(names)}: {list(names)}"))
    classes = list(getattr(estimator, "classes_", [0, 1]))
    if len(classes) != 2:
        raise FieldProblem("decision_model.path", f"the model has classes {classes}; "
                                                  "give a binary classifier")

    def predict(x: np.ndarray) -> np.ndarray:
        if fitted is not None:
                    x = pd.DataFrame(x, columns=list(fitted))
        return estimator.predict_proba(x)[:, 1]

    return ExternalDecisionModel("sklearn", predict, names, sha, "probability")

def _torchscript(spec: ExternalModelSpec, path: Path, names: tuple[str, ...], sha: str
                 ) -> ExternalDecisionModel:
    try:
        module = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file: one line
        raise FieldProblem("decision_model.path", (
            f"not a TorchScript file: {str(exc).splitlines()[0]}")) from None
    module.eval()
    for p in module.parameters():
        p.requires_grad_(False)  # gradients flow to the inputs only
    return ExternalDecisionModel("torchscript", None, names, sha, spec.output or "logit",
                                 module=module)


def _onnx(spec: ExternalModelSpec, path: Path, names: tuple[str, ...], sha: str
          ) -> ExternalDecisionModel:
    # an optional reader (``simstudy[models]``), imported where it is needed, as skops above
    try:
        import onnxruntime as ort
    except ImportError:
        raise FieldProblem("decision_model.kind", "running ONNX models needs onnxruntime: "
                           "pip install 'simstudy[models]'") from None
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file: one line
        raise FieldProblem("decision_model.path", f"not an ONNX model: {exc}") from None
    inputs = session.get_inputs()
    if len(inputs) != 1:
        raise FieldProblem("decision_model.path", (
            f"the model has {len(inputs)} inputs; give one taking the feature matrix"))
    width = inputs[0].shape[-1] if inputs[0].shape else None
    if isinstance(width, int) and width != len(names):
        raise FieldProblem("decision_model.path", (
            f"the model takes {width} features; the world has {len(names)}: {list(names)}"))
    outputs = [o.name for o in session.get_outputs()]
    chosen = spec.onnx_output or outputs[-1]
    if chosen not in outputs:
        raise FieldProblem("decision_model.onnx_output", (
            f"no output {chosen!r}; the model's outputs are {outputs}"))
    dtype = np.float64 if "double" in inputs[0].type else np.float32

    def predict(x: np.ndarray) -> np.ndarray:
        (out,) = session.run([chosen], {inputs[0].name: x.astype(dtype)})
        out = np.asarray(out, dtype=np.float64)
        return out[:, 1] if out.ndim == 2 and out.shape[1] == 2 else out.reshape(len(x))

    return ExternalDecisionModel("onnx", predict, names, sha, spec.output or "probability")

