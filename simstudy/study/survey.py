"""Reading a survey platform's export as a long rating table.

Exports differ in four ways that break a plain ``read_csv``:

* the **separator**: ``,`` or, where the decimal mark is a comma, ``;``, or a tab; it is sniffed
  from the header line (the one of the three it holds most often) unless stated;
* **extra header rows**: Qualtrics writes, under the column names, a row of question texts and
  (since 2017) a row of import ids (``{"ImportId":"QID12_1"}``); ``qualtrics: true`` skips
  them. Read without it, such an export is refused with that fix;
* **text ratings**: a survey may export the labels (``Strongly agree``) rather than their
  numbers; a level map (``levels: {"Strongly agree": 7, "Agree": 6, ...}``) reads them as the
  numbers, matching labels without regard to case or surrounding spaces;
* **column names**: a column map (``columns: {uid: ResponseId, accept: Q12_1}``) renames the
  export's columns to the names the analysis reads.

Example:
    >>> import io
    >>> ids = '{"ImportId":"_recordId"};{"ImportId":"QID1"};{"ImportId":"QID2"}'
    >>> text = f"ResponseId;Q1;Q2\\nid;Accept?;Act?\\n{ids}\\nR_1;5;4\\n"
    >>> table = read_rating_table(io.StringIO(text), qualtrics=True,
    ...                           columns={"uid": "ResponseId", "accept": "Q1", "act": "Q2"})
    >>> table.to_dict(orient="records")
    [{'uid': 'R_1', 'accept': 5, 'act': 4}]
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO, Any

import pandas as pd

from ..analysis.inputs import TableError, check_reading
from ..core.file_kinds import expect_kind

__all__ = ["SEPARATORS", "sniff_separator", "read_rating_table", "load_ratings"]

#: The separators a rating export may use.
SEPARATORS = (",", ";", "\t")


def sniff_separator(header: str) -> str:
    """The separator a header line holds most often (``,`` when it holds none).

    Example:
        >>> [sniff_separator(h) for h in ("uid;item;accept", "uid\\titem", "uid")]
        [';', '\\t', ',']
    """
    counts = {sep: header.count(sep) for sep in SEPARATORS}
    best = max(counts, key=lambda s: counts[s])
    return best if counts[best] else ","


def read_rating_table(source: str | Path | IO[str], separator: str = "auto",
                      qualtrics: bool = False, columns: dict[str, str] | None = None,
                      levels: dict[str, int] | None = None) -> pd.DataFrame:
    """Reads an export (see the module docstring).

    Args:
        source: a path or an open text stream.
        separator: ``auto`` (sniffed) or one of :data:`SEPARATORS`.
        qualtrics: skip the rows Qualtrics writes under the column names (question texts,
            then import ids where present).
        columns: ``{analysis name: export column}``; an export column the file lacks raises
            ``ValueError`` naming it.
        levels: ``{label: number}``: text ratings read as numbers (see the module docstring).

    Raises:
        ValueError: a mapped column is missing, two names map to one column, or a name is
            already an export column of its own.
        TableError: the export has Qualtrics' extra rows and ``qualtrics`` is not set.
    """
    text = source.read() if hasattr(source, "read") else Path(source).read_text(
        encoding="utf-8-sig", errors="replace")
    header = text.split("\n", 1)[0]
    sep = sniff_separator(header) if separator == "auto" else separator
    table = pd.read_csv(io.StringIO(text), sep=sep, dtype=str if qualtrics else None)
    imports = table.head(2).apply(lambda c: c.astype(str).str.contains('"ImportId"')).any(axis=1)
    if qualtrics:
        skip = 2 if len(imports) > 1 and imports.iloc[1] else 1
        table = table.iloc[skip:].reset_index(drop=True)
        table = pd.read_csv(io.StringIO(table.to_csv(index=False)))  # numbers as numbers
    elif imports.any():
        raise TableError(f"row {int(imports.values.argmax()) + 2}: Qualtrics' import ids "
                         "under the header (a Qualtrics export); state qualtrics: true in the "
                         "analysis spec to skip its question-text and import-id rows")
    if columns:
        missing = [v for v in columns.values() if v not in table.columns]
        if missing:
            raise ValueError(f"columns: {missing} not in the export (its columns: "
                             f"{list(table.columns)[:20]})")
        if len(set(columns.values())) < len(columns):
            raise ValueError("columns: two names map to the same export column")
        clash = [k for k in columns if k in table.columns and k not in columns.values()]
        if clash:
            raise ValueError(f"columns: the export already has a column {clash[0]!r}; map it "
                             "too or choose another name")
        table = table.rename(columns={v: k for k, v in columns.items()})
    if levels:
        table = _read_levels(table, levels)
    return table


def _read_levels(table: pd.DataFrame, levels: dict[str, int]) -> pd.DataFrame:
    # a text column holding any label is read through the map; labels it lacks stay text (and
    # the table's check names them)
    keys = {str(k).strip().casefold(): v for k, v in levels.items()}
    table = table.copy()
    for col in table.columns:
        if pd.api.types.is_numeric_dtype(table[col]):
            continue
        folded = table[col].astype(str).str.strip().str.casefold()
        if folded.isin(keys).any():
            table[col] = table[col].where(~folded.isin(keys), folded.map(keys))
            numbers = pd.to_numeric(table[col], errors="coerce")
            if numbers.notna().sum() == table[col].notna().sum():
                table[col] = numbers
    return table


def load_ratings(path: str | Path, spec: Any, responses: list[str], distances: list[str],
                 argument: str = "DATA", command: str = "analyze") -> pd.DataFrame:
    """The rating table at ``path`` read as ``spec`` (an analysis spec: separator,
    ``qualtrics``, ``columns``, ``levels``, ``group``, ``scale``) says, checked against it
    (:func:`~simstudy.analysis.inputs.check_reading`).

    Raises:
        FileKindError: the file is not a table (a database, a workbook, a YAML document).
        TableError: ``FILE: column: reason`` (a Qualtrics export read plainly, duplicated
            rows, a distance outside its range, a scale the ratings do not use).
        ValueError: the spec's column map does not fit the export.
    """
    expect_kind(path, "csv", command, argument)
    try:
        table = read_rating_table(path, spec.separator, spec.qualtrics, spec.columns,
                                  getattr(spec, "levels", None))
    except TableError as exc:
        raise TableError(f"{path}: {exc}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeError) as exc:
        raise TableError(f"{path}: cannot read it as a table ({str(exc).strip()}); a CSV "
                         "with one header row is expected") from None
    try:
        check_reading(table, spec.group, responses, distances, spec.scale,
                      "scale" in spec.model_fields_set)
    except TableError as exc:
        raise TableError(f"{path}: {exc}") from None
    return table
