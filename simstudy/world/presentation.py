"""How people read a world's features: labels, units, the model <-> display mapping, steps.

A world declares its presentation once (:class:`FeatureView` per feature, e.g.
:data:`simstudy.world.loan_roles.LOAN_PRESENTATION`); every page of a live study, the plan
text, the export's readable column and the preregistration read it from there. A feature
without a declared view is shown under its name, in model units, at a step of about a
thousandth of its range (:func:`default_view`), which rounds float noise such as ``5.551e-17``
away.

Mappings are increasing, so ranges map to ranges:

- ``affine``: ``display = offset + scale * model``;
- ``exp``: ``display = offset * exp(scale * model)`` (a quantity that is positive and
  right-skewed in life, such as an amount of money, from a model unit that is symmetric).

A value is shown rounded to the feature's ``step`` (also the entry field's step), with the
unit after it; a coded feature is shown by the label of its code (``levels``).

Example:
    >>> view = FeatureView("Age", "years", offset=35.0, step=1.0, minimum=18.0)
    >>> view.display(-1.2), view.model(33.8)
    (33.8, -1.2000000000000028)
    >>> view.text(-1.2), FeatureView("Savings", "EUR", "exp", 0.1, 1000.0).text(7.0)
    ('34 years', '2,014 EUR')
    >>> FeatureView("Sex", levels={0: "female", 1: "male"}).text(1.0)
    'male'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["FeatureView", "default_view", "format_number", "parse_number"]


def format_number(value: float, decimals: int, thousands: str = ",", point: str = ".") -> str:
    """``value`` with ``decimals`` decimals and digit grouping (``-0`` shown as ``0``).

    Example:
        >>> format_number(2500.0, 0), format_number(-0.0001, 2), format_number(1234.5, 1, ".", ",")
        ('2,500', '0.00', '1.234,5')
    """
    text = f"{value:,.{decimals}f}"
    if text.lstrip("-").strip("0.,") == "":
        text = text.lstrip("-")
    return text.replace(",", "\0").replace(".", point).replace("\0", thousands)


def parse_number(raw: str, thousands: str = ",", point: str = ".") -> float:
    """A number as people type it (digit groups, the locale's decimal point, spaces);
    raises ``ValueError`` for anything else.

    Example:
        >>> parse_number("2,500"), parse_number("2.500,5", ".", ","), parse_number(" 35 ")
        (2500.0, 2500.5, 35.0)
    """
    text = raw.strip().replace(" ", "").replace("\u00a0", "")
    if thousands:
        text = text.replace(thousands, "")
    if point != ".":
        text = text.replace(point, ".")
    if not text or any(c not in "0123456789.-+eE" for c in text):
        raise ValueError(raw)
    return float(text)


@dataclass(frozen=True)
class FeatureView:
    """One feature as people read it (see the module docstring).

    Attributes:
        label: the feature's name in words.
        unit: the unit shown after a value (``""``: none).
        mapping: ``affine`` or ``exp``.
        scale, offset: the mapping's parameters (``scale > 0``).
        step: the entry field's step and the precision values are shown at (display units).
        minimum, maximum: the declared display range (``None``: unbounded); an entry page
            accepts the part of the training range inside it.
        levels: for a coded feature, the label of each code (the only values it takes).
        note: why the mapping is what it is (for the preregistration and the reader).
    """

    label: str
    unit: str = ""
    mapping: Literal["affine", "exp"] = "affine"
    scale: float = 1.0
    offset: float = 0.0
    step: float = 1.0
    minimum: float | None = None
    maximum: float | None = None
    levels: dict[int, str] = field(default_factory=dict)
    note: str = ""

    def __post_init__(self) -> None:
        if not self.scale > 0 or not self.step > 0:
            raise ValueError(f"{self.label}: scale and step must be positive")
        if self.mapping == "exp" and not self.offset > 0:
            raise ValueError(f"{self.label}: an exp mapping needs a positive offset")

    @property
    def coded(self) -> bool:
        return bool(self.levels)

    @property
    def decimals(self) -> int:
        """Decimals of a value shown at :attr:`step`."""
        return max(0, -math.floor(math.log10(self.step) + 1e-9))

    def display(self, value: float) -> float:
        """The display value of a model value."""
        if self.coded:
            return float(value)
        if self.mapping == "exp":
            return self.offset * math.exp(self.scale * value)
        return self.offset + self.scale * value

    def model(self, shown: float) -> float:
        """The model value of a display value (the inverse of :meth:`display`)."""
        if self.coded:
            return float(shown)
        if self.mapping == "exp":
            return math.log(shown / self.offset) / self.scale
        return (shown - self.offset) / self.scale

    def rounded(self, value: float) -> float:
        """The display value of model ``value`` at :attr:`step` (what a page shows)."""
        if self.coded:
            return float(round(value))
        return round(round(self.display(value) / self.step) * self.step, self.decimals)

    def number(self, value: float, thousands: str = ",", point: str = ".") -> str:
        """The shown number of model ``value``, without its unit."""
        return format_number(self.rounded(value), self.decimals, thousands, point)

    def text(self, value: float, thousands: str = ",", point: str = ".", unit: str | None = None,
             level: dict[int, str] | None = None) -> str:
        """Model ``value`` as a page shows it: the level's label, or the number and unit
        (``unit``, ``level``: translations of :attr:`unit` and :attr:`levels`)."""
        if self.coded:
            code = int(round(value))
            return (level or {}).get(code) or self.levels.get(code, str(code))
        unit = self.unit if unit is None else unit
        number = self.number(value, thousands, point)
        return f"{number} {unit}" if unit else number

    def bounds(self, lower: float, upper: float) -> tuple[float, float]:
        """The display range an entry accepts: model range ``[lower, upper]`` mapped, inside
        the declared range, rounded inwards to the step."""
        lo, hi = self.display(lower), self.display(upper)
        if self.minimum is not None:
            lo = max(lo, self.minimum)
        if self.maximum is not None:
            hi = min(hi, self.maximum)
        if self.coded:
            return lo, hi
        lo = round(math.ceil(lo / self.step - 1e-9) * self.step, self.decimals)
        hi = round(math.floor(hi / self.step + 1e-9) * self.step, self.decimals)
        return lo, hi

    def describe(self) -> str:
        """The mapping in words (the preregistration's line of the feature)."""
        if self.coded:
            return f"{self.label}: " + ", ".join(f"{c} = {t}" for c, t in
                                                 sorted(self.levels.items()))
        unit = f" ({self.unit})" if self.unit else ""
        if self.mapping == "exp":
            rule = f"{self.offset:g} * exp({self.scale:g} * model value)"
        elif self.scale == 1.0:
            rule = f"model value + {self.offset:g}" if self.offset else "the model value"
        else:
            rule = f"{self.offset:g} + {self.scale:g} * model value"
        return f"{self.label}{unit} = {rule}, shown in steps of {self.step:g}"


def default_view(name: str, lower: float, upper: float,
                 levels: dict[int, str] | None = None) -> FeatureView:
    """The view of a feature its world does not present: its name, model units, a step of
    the power of ten nearest a thousandth of the range ``[lower, upper]``.

    Example:
        >>> v = default_view("loan_amount", -9.77, 8.1)
        >>> v.label, v.step, v.text(5.551e-17)
        ('Loan amount', 0.01, '0.00')
    """
    span = max(upper - lower, 1e-12)
    step = 10.0 ** round(math.log10(span / 1000.0))
    return FeatureView(name.replace("_", " ").capitalize(), step=step,
                       levels=dict(levels or {}))
