"""Reading a survey platform's export as a long rating table.

Exports differ in three ways that break a plain ``read_csv``:

* the **separator**: ``,`` or, where the decimal mark is a comma, ``;``, or a tab; it is sniffed
  from the header line (the one of the three it holds most often) unless stated;
* **extra header rows**: Qualtrics writes, under the column names, a row of question texts and
  a row of import ids (``{"ImportId":"QID12_1"}``); ``qualtrics: true`` skips those two;
* **column names**: a column map (``columns: {uid: ResponseId, accept: Q12_1}``) renames the
  export's columns to the names the analysis reads.

Example:
    >>> import io
    >>> text = "ResponseId;Q1;Q2\\nid;Accept?;Act?\\n{};{};{}\\nR_1;5;4\\n"
    >>> table = read_rating_table(io.StringIO(text), qualtrics=True,
    ...                           columns={"uid": "ResponseId", "accept": "Q1", "act": "Q2"})
    >>> table.to_dict(orient="records")
    [{'uid': 'R_1', 'accept': 5, 'act': 4}]
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import IO

import pandas as pd

__all__ = ["SEPARATORS", "sniff_separator", "read_rating_table"]

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
                      qualtrics: bool = False, columns: dict[str, str] | None = None
                      ) -> pd.DataFrame:
    """Reads an export (see the module docstring).

    Args:
        source: a path or an open text stream.
        separator: ``auto`` (sniffed) or one of :data:`SEPARATORS`.
        qualtrics: skip the two rows Qualtrics writes under the column names.
        columns: ``{analysis name: export column}``; an export column the file lacks raises
            ``ValueError`` naming it.

    Raises:
        ValueError: a mapped column is missing, two names map to one column, or a name is
            already an export column of its own.
    """
    text = source.read() if hasattr(source, "read") else Path(source).read_text(
        encoding="utf-8-sig", errors="replace")
    header = text.split("\n", 1)[0]
    sep = sniff_separator(header) if separator == "auto" else separator
    table = pd.read_csv(io.StringIO(text), sep=sep, skiprows=[1, 2] if qualtrics else None)
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
    return table
