"""Checks of a rating table before ``simstudy analyze`` fits it.

A real study's export carries missing-value codes (-99, 999, "."), text in numeric columns,
ratings outside the scale, constant columns and participants who rated once. Each would either
crash a fit or, worse, be analysed as data. :func:`check_rating_table` refuses the first kinds
with one line ``column: reason`` (the caller prefixes the file) and returns warnings for what
can be fitted but needs a caveat. :func:`check_reading` checks what a table read from a file
must hold whatever is fitted: one row per participant and item, whole sparsities of at least
1, and ratings that use the scale the study declares. Each refusal says how to fix it (the
option of the analysis spec to state, or the rows to change). Two of its rules are shared with
the pilot's checks before calibration (:func:`simstudy.study.calibration.pilot_problems`),
which word their own refusals: :func:`repeated_rows` finds rows that repeat an earlier one,
:func:`unused_top` ratings that leave the top of their scale unused.

Example:
    >>> import pandas as pd
    >>> table = pd.DataFrame({"uid": [1, 1, 2, 2], "sparsity": [1, 2, 1, 3],
    ...                       "act": [3, -99, 5, 6]})
    >>> try:
    ...     check_rating_table(table, "uid", [("act", "sparsity", "gaussian")], (1, 7))
    ... except TableError as exc:
    ...     print(str(exc).split(" (")[0])
    act: 1 value outside the rating scale 1..7
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = ["TableError", "check_rating_table", "check_reading", "repeated_rows", "unused_top",
           "UnusedTop", "MISSING_MARKERS", "UNUSED_TOP"]

# Text that studies use for "no answer"; pandas already reads "", "NA", "NaN", "null" as missing.
MISSING_MARKERS = (".", "-", "?", "na", "n/a", "missing", "none", "-99", "-9", "999", "99")


class TableError(ValueError):
    """A rating table that cannot be analysed; the message is ``column: reason``."""


def _numeric(data: pd.DataFrame, column: str) -> pd.Series:
    values = data[column]
    if pd.api.types.is_bool_dtype(values):
        return values.astype(float)
    if pd.api.types.is_numeric_dtype(values):
        out = values.astype(float)
    else:
        out = pd.to_numeric(values, errors="coerce")
        bad = values[out.isna() & values.notna()].astype(str)
        if len(bad):
            first = bad.iloc[0]
            raise TableError(f"{column}: {len(bad)} non-numeric value{'s' * (len(bad) > 1)} "
                             f"(first {first!r} in row {bad.index[0] + 2}){_text_hint(bad)}")
    if np.isinf(out).any():
        raise TableError(f"{column}: {int(np.isinf(out).sum())} infinite values")
    return out


def _text_hint(bad: pd.Series) -> str:
    # why a numeric column holds text, and the fix
    first = bad.iloc[0].strip()
    if first.lower() in MISSING_MARKERS:
        return " (a missing-value marker? leave missing cells empty)"
    if len(bad) == 1 and bad.index[0] == 0:
        return ("; text in the row under the header: a Qualtrics export's question texts? "
                "state qualtrics: true in the analysis spec")
    if any(c.isalpha() for c in first):
        labels = ", ".join(f'"{v}": N' for v in dict.fromkeys(bad.str.strip()))
        return (f"; text ratings? map each label to its number in the analysis spec: "
                f"levels: {{{labels}}}")
    return ""


#: Points at the top of a declared scale that no rating reaches before the table is read as a
#: shorter scale (1..5 read as 1..7; :func:`unused_top`): :func:`check_reading` refuses such
#: a table of 20 (``_FEW``) ratings or more until the document states its scale.
UNUSED_TOP = 2
_FEW = 20


def repeated_rows(data: pd.DataFrame, columns: list[str] | None = None) -> pd.Series:
    """The rows that repeat an earlier row in ``columns`` (every column when ``None``), each
    with the earliest row it repeats.

    A row repeats an earlier one when the two agree in every one of ``columns`` (an empty
    cell agrees with an empty cell, as in :meth:`pandas.DataFrame.duplicated`): ``k`` rows
    alike are ``k - 1`` repeats of the first of them.

    Returns:
        The label of the earliest row alike, indexed by the label of each repeating row, in
        table order; empty when no row repeats.

    Example:
        >>> table = pd.DataFrame({"uid": [1, 1, 2, 1, 1], "item": [0, 1, 0, 0, 0],
        ...                       "act": [3, 5, 4, 6, 3]})
        >>> repeated_rows(table, ["uid", "item"]).to_dict()  # rows 3 and 4 repeat row 0's pair
        {3: 0, 4: 0}
        >>> repeated_rows(table).to_dict()  # row 4 alone repeats row 0 in every column
        {4: 0}
    """
    key = data if columns is None else data[list(columns)]
    later = key.duplicated(keep="first").to_numpy()
    if not later.any():
        return pd.Series([], index=data.index[:0], dtype=data.index.dtype)
    alike = key.groupby([key.iloc[:, j] for j in range(key.shape[1])], sort=False,
                        dropna=False).ngroup().to_numpy()
    earliest = pd.Series(np.arange(len(key))).groupby(alike).transform("min").to_numpy()
    return pd.Series(data.index[earliest[later]], index=data.index[later])


class UnusedTop(NamedTuple):
    """What :func:`unused_top` found: the highest rating and the number of ratings."""

    top: float
    ratings: int


def unused_top(ratings: pd.DataFrame, scale: tuple[float, float]) -> UnusedTop | None:
    """Whether the ratings leave the top of their scale unused, as a shorter survey read on a
    longer scale does (1..5 read as 1..7).

    With ``scale = (lo, hi)``, the top is unused when every rating (over all columns of
    ``ratings``, empty cells left out) lies in ``lo .. hi - UNUSED_TOP``. How many ratings
    make that evidence enough, and what follows from it, is the caller's to decide.

    Returns:
        The highest rating and the number of ratings when the top is unused; ``None`` when a
        rating reaches it, falls below ``lo``, or there is none.

    Example:
        >>> unused_top(pd.DataFrame({"accept": [1, 3, 5], "act": [2, 4, None]}), (1, 7))
        UnusedTop(top=5.0, ratings=5)
        >>> unused_top(pd.DataFrame({"act": [1, 3, 6]}), (1, 7)) is None
        True
    """
    values = ratings.apply(pd.to_numeric).to_numpy(float).ravel()
    values = values[~np.isnan(values)]
    lo, hi = scale
    if not len(values) or values.min() < lo or values.max() > hi - UNUSED_TOP:
        return None
    return UnusedTop(float(values.max()), len(values))


def check_reading(data: pd.DataFrame, group: str, responses: list[str], distances: list[str],
                  scale: tuple[float, float] | None, scale_stated: bool = True,
                  item: str = "item") -> None:
    """Refuses a read table that breaks what every study table holds.

    * one row per ``(group, item)`` (when the table has ``item``; :func:`repeated_rows`): a
      repeated pair is an export appended twice or a participant counted twice;
    * ``sparsity`` (the number of features a recourse changes): whole numbers of at least 1
      (0 is no recourse; a 0-based count is off by one);
    * the declared ``scale``, when the document did not state it (``scale_stated``): ratings
      that never reach its top ``UNUSED_TOP`` points (:func:`unused_top`, over the responses
      that vary) in 20 or more ratings are a shorter scale (1..5 read as 1..7) unless the
      scale is stated.

    Raises:
        TableError: ``column: reason; fix``.

    Example:
        >>> table = pd.DataFrame({"uid": [1, 1, 2], "item": [0, 0, 0], "sparsity": [1, 2, 1],
        ...                       "act": [3, 4, 5]})
        >>> try:
        ...     check_reading(table, "uid", ["act"], ["sparsity"], (1, 7))
        ... except TableError as exc:
        ...     print(str(exc).split(";")[0])
        uid, item: 1 row repeats a (uid, item) pair (first uid 1, item 0, rows 2 and 3)
    """
    if group in data and item in data:
        repeats = repeated_rows(data, [group, item])
        if len(repeats):
            # the pair shown: the earliest row that is repeated, and its first repeat
            k = int(data.index.get_indexer(repeats.to_numpy()).argmin())
            row, twin = repeats.iloc[k], repeats.index[k]
            first = data.loc[row, [group, item]]
            n = len(repeats)
            raise TableError(
                f"{group}, {item}: {n} row{'s' * (n > 1)} repeat{'s' * (n == 1)} a ({group}, "
                f"{item}) pair (first {group} {first[group]}, {item} {first[item]}, rows "
                f"{row + 2} and {twin + 2}); the export appended twice? keep one row per "
                "participant and item")
    if "sparsity" in distances and "sparsity" in data:
        x = _numeric(data, "sparsity")
        low = x[x < 1]
        if len(low):
            raise TableError(
                f"sparsity: {len(low)} value{'s' * (len(low) > 1)} below 1 (first {low.iloc[0]:g} "
                f"in row {low.index[0] + 2}); a recourse changes at least one feature: a "
                "0-based count? add 1; rows that show no change are not recourses: remove them")
        frac = x[x.notna() & (x != x.round())]
        if len(frac):
            raise TableError(f"sparsity: {len(frac)} value{'s' * (len(frac) > 1)} not whole "
                             f"(first {frac.iloc[0]:g} in row {frac.index[0] + 2}); sparsity "
                             "counts the changed features: is it the proximity column?")
    if scale is not None and not scale_stated:
        _check_scale_used(data, [r for r in responses if r in data], scale)


def _check_scale_used(data: pd.DataFrame, responses: list[str],
                      scale: tuple[float, float]) -> None:
    # a constant response has its own refusal (check_rating_table)
    varied = {r: v for r in responses if (v := _numeric(data, r)).nunique() > 1}
    found = unused_top(pd.DataFrame(varied, index=data.index), scale)
    if found is None or found.ratings < _FEW:
        return
    lo, hi = scale
    top = found.top
    raise TableError(
        f"{', '.join(map(str, varied))}: no rating above {top:g} in {found.ratings} ratings of "
        f"the {lo:g}..{hi:g} scale: a {lo:g}-{top:g} survey? state its scale in the analysis "
        f"spec (scale: [{lo:g}, {top:g}]); if {hi - 1:g} and {hi:g} were offered and never "
        f"chosen, state scale: [{lo:g}, {hi:g}]")


def check_rating_table(data: pd.DataFrame, group: str,
                       models: list[tuple[str, str, str]],
                       scale: tuple[float, float] | None) -> list[str]:
    """Refuses a table that cannot be analysed; returns warnings about one that can.

    Args:
        data: the rating table.
        group: participant column.
        models: ``(response, distance, family)`` of each model to fit.
        scale: the declared rating scale (lowest, highest) of Gaussian and ``ocat`` responses;
            ``None`` skips the range check. Binomial responses must be 0/1.

    Raises:
        TableError: ``column: reason`` for the first problem found.
    """
    if data.empty:
        raise TableError("(table): no rows")
    warnings: list[str] = []
    columns = [group] + [c for m in models for c in m[:2]]
    for col in columns:
        if col not in data.columns:
            listed = ", ".join(map(str, data.columns))
            raise TableError(f"{col}: not in the table (columns: {listed}); name the "
                             f"export's column in the analysis spec: columns: {{{col}: "
                             "EXPORT_COLUMN}")
    if data[group].isna().any():
        first = int(data.index[data[group].isna().to_numpy()][0]) + 2
        raise TableError(f"{group}: {int(data[group].isna().sum())} rows without a participant "
                         f"(first in row {first}); fill them, or delete rows nobody answered")
    for response, distance, family in models:
        warnings += _check_model(data, group, response, distance, family, scale)
    return list(dict.fromkeys(warnings))


def _check_model(data: pd.DataFrame, group: str, response: str, distance: str, family: str,
                 scale: tuple[float, float] | None) -> list[str]:
    # One model's response and distance columns: refused, or the warnings about them.
    warnings: list[str] = []
    x = _numeric(data, distance)
    y = _numeric(data, response)
    if (x < 0).any():
        raise TableError(f"{distance}: {int((x < 0).sum())} negative distances (first "
                         f"{x[x < 0].iloc[0]:g}; a missing-value code? leave missing cells "
                         "empty)")
    rows = x.notna() & y.notna()
    if not rows.any():
        raise TableError(f"{response}: no row has both {response} and {distance}")
    y_used = y[rows]
    if family == "binomial":
        bad = y_used[~y_used.isin((0.0, 1.0))]
        if len(bad):
            raise TableError(f"{response}: binomial responses must be 0 or 1; "
                             f"{len(bad)} values are not (first {bad.iloc[0]:g}); code the "
                             "answer as 0/1, or fit it with family: gaussian")
    elif scale is not None:
        lo, hi = scale
        bad = y_used[(y_used < lo) | (y_used > hi)]
        if len(bad):
            codes = ", ".join(f"{v:g}" for v in sorted(set(bad))[:3])
            code = (bad < 0).any() or (bad >= 90).any()
            hint = "; a missing-value code? leave missing ratings empty" if code else ""
            scale_hint = ("" if code else "; a survey on another scale? state it in the "
                          "analysis spec (scale: [LOWEST, HIGHEST])")
            raise TableError(f"{response}: {len(bad)} value{'s' * (len(bad) > 1)} outside "
                             f"the rating scale {lo:g}..{hi:g} ({codes}{hint}){scale_hint}")
        if family == "ocat" and (y_used != np.round(y_used)).any():
            raise TableError(f"{response}: ordered categories must be whole numbers; fit "
                             "averaged ratings with family: gaussian")
    if y_used.nunique() < 2:
        raise TableError(f"{response}: every rating is {y_used.iloc[0]:g}; a constant "
                         "response cannot be modelled")
    if x[rows].nunique() < 3:
        raise TableError(f"{distance}: {x[rows].nunique()} distinct values; a smooth "
                         "needs at least 3")
    per_person = data.loc[rows, group].value_counts()
    if per_person.size < 2:
        raise TableError(f"{group}: one participant; participant effects need at least 2")
    single = int((per_person == 1).sum())
    if single:
        # only the Gaussian family has a residual to confuse the intercept with
        why = ("the random intercept and the residual are not separately identifiable"
               if family == "gaussian" else "the random intercept is barely identifiable: "
               f"one {'yes/no' if family == 'binomial' else 'ordered'} answer says little "
               "about a person's own level")
        warnings.append(f"{group}: {single} of {per_person.size} participants have a single "
                        f"{response} rating; with one rating per person {why}")
    dropped = int((~rows).sum())
    if dropped:
        first = int(data.index[(~rows).to_numpy()][0]) + 2
        warnings.append(f"{response}: {dropped} rows without {response} or {distance} "
                        f"(blank cells; first in row {first}) left out; fill them, or delete "
                        "those rows if they were never answered")
    return warnings
