"""Effects in plain sight: every parameter of a study's response model, its value and source.

A simulated study's power is only as good as the effect it assumes. The rating model has no
policy term: a policy contrast comes from the recourses themselves (their distance, and the
``blocked_penalty`` a rating bears where the recourse needs a feature the person truly cannot
change), so the parameters that drive each hypothesis are listed with where they came from:

* ``scenario``: stated in the scenario (or study) document;
* ``default (assumed)``: the model's default, which nobody checked against this study;
* ``calibrated from FILE sha256:...``: estimated by ``simstudy calibrate`` from pilot data.

The *main effect* of a hypothesis is the parameter that sets its size: the distance effect's
``slope`` for a distance hypothesis, ``blocked_penalty`` for a contrast or a gap (the route by
which the rating model separates policies and groups). :func:`scaled` multiplies it, for the
sensitivity curve of ``simstudy power`` and its minimum detectable effect.

Example:
    >>> from simstudy.people.response_params import RatingResponseParams
    >>> spec = RatingResponseParams.model_validate({"kind": "rating",
    ...                                          "act": {"blocked_penalty": 1.0}})
    >>> rows = {r["parameter"]: r for r in parameter_table(spec, ["act"])}
    >>> rows["act.blocked_penalty"]["source"], rows["act.sd_noise"]["source"]
    ('scenario', 'default (assumed)')
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from .hypotheses import HypothesisSpec

__all__ = ["parameter_table", "main_effect", "scaled", "value_at", "minimum_detectable"]


def _leaves(model: BaseModel, prefix: str, stated: bool) -> list[tuple[str, Any, bool]]:
    out = []
    for name in type(model).model_fields:
        if name == "kind" and not prefix:
            continue
        value = getattr(model, name)
        here = stated and name in model.model_fields_set
        path = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            out += _leaves(value, f"{path}.", here)
        else:
            out.append((path, value, here))
    return out


def parameter_table(spec: BaseModel, responses: list[str] | None = None,
                    calibration: dict | None = None, calibration_file: str | None = None
                    ) -> list[dict]:
    """Every parameter of a response spec: ``parameter, value, source`` (see the module
    docstring).

    Args:
        spec: the study's response spec.
        responses: the ratings tested (``act``, ``accept``): only their sub-models and the
            model-wide fields are listed (default: every field).
        calibration: the ``calibration:`` entry of a ``simstudy calibrate`` output whose
            response this is (its ``parameters`` are marked calibrated).
        calibration_file: that file's path.
    """
    calibrated = set()
    if calibration is not None:
        for name in calibration.get("parameters", []):
            calibrated.add(name.split(" ", 1)[-1])  # "log act.sd_noise" -> "act.sd_noise"
    rows = []
    for path, value, stated in _leaves(spec, "", True):
        head = path.split(".", 1)[0]
        if responses is not None and head in ("accept", "act") and head not in responses:
            continue
        if path in calibrated:
            source = f"calibrated from {calibration_file} sha256:{calibration['sha256'][:12]}"
        elif stated and calibration is not None:
            source = f"fixed in {calibration_file}'s calibration (not estimated)"
        elif stated:
            source = "scenario"
        else:
            source = "default (assumed)"
        rows.append({"parameter": path, "value": value, "source": source})
    return rows


def main_effect(h: HypothesisSpec) -> str:
    """The parameter that sets a hypothesis's effect size (see the module docstring)."""
    if h.kind == "distance":
        return f"{h.response}.effect.slope"
    return f"{h.response}.blocked_penalty"


def value_at(spec: BaseModel, path: str) -> Any:
    """The value at a dotted path of a spec (``act.effect.slope``)."""
    value: Any = spec
    for part in path.split("."):
        if not hasattr(value, part):
            raise KeyError(path)
        value = getattr(value, part)
    return value


def scaled(spec: BaseModel, path: str, factor: float) -> BaseModel:
    """A copy of the spec with the parameter at ``path`` multiplied by ``factor``.

    Example:
        >>> from simstudy.people.response_params import RatingResponseParams
        >>> spec = RatingResponseParams(kind="rating")
        >>> value_at(scaled(spec, "act.blocked_penalty", 0.5), "act.blocked_penalty")
        1.0
    """
    data = spec.model_dump()
    node = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = float(node[parts[-1]]) * factor
    return type(spec).model_validate(data)


def minimum_detectable(sizes: list[float], power: list[float], target: float) -> float | None:
    """The smallest effect size whose power reaches ``target``, by linear interpolation
    between the simulated sizes (``None`` if none reaches it).

    Example:
        >>> minimum_detectable([0.5, 1.0, 2.0], [0.2, 0.6, 1.0], 0.8)
        1.5
    """
    pairs = sorted(zip(sizes, power, strict=True))
    for i, (size, p) in enumerate(pairs):
        if p >= target:
            if i == 0:
                return float(size)
            s0, p0 = pairs[i - 1]
            return float(s0 + (target - p0) * (size - s0) / (p - p0))
    return None
