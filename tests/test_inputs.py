"""Checks of a rating table read from a file: the shared rules (repeated rows, a scale whose top
is unused) and the refusals :func:`check_reading` words from them."""

import numpy as np
import pandas as pd
import pytest

from simstudy.analysis.inputs import (
    UNUSED_TOP,
    TableError,
    UnusedTop,
    check_reading,
    repeated_rows,
    unused_top,
)


def test_repeated_rows_pairs_each_repeat_with_the_earliest_row_alike():
    table = pd.DataFrame({"uid": [1, 2, 2, 1, 1], "item": [0, 0, 0, 0, 0],
                          "act": [3, 4, 4, 5, 3]})
    assert repeated_rows(table, ["uid", "item"]).to_dict() == {2: 1, 3: 0, 4: 0}
    # in every column, row 3 differs from row 0 in act
    assert repeated_rows(table).to_dict() == {2: 1, 4: 0}
    assert repeated_rows(table, ["act"]).to_dict() == {2: 1, 4: 0}


def test_repeated_rows_reads_empty_cells_alike_and_keeps_the_tables_labels():
    table = pd.DataFrame({"uid": [1.0, np.nan, np.nan], "item": ["a", None, None]},
                         index=["p", "q", "r"])
    assert repeated_rows(table).to_dict() == {"r": "q"}
    assert repeated_rows(table.iloc[:2]).empty


def test_unused_top_finds_ratings_below_the_top_points_of_the_scale():
    ratings = pd.DataFrame({"accept": [1, 2, 5, np.nan], "act": [3, 4, 1, 2]})
    assert UNUSED_TOP == 2
    assert unused_top(ratings, (1, 7)) == UnusedTop(top=5.0, ratings=7)
    assert unused_top(ratings, (1, 5)) is None         # 5 is the top of 1..5
    assert unused_top(ratings.assign(act=6), (1, 7)) is None
    assert unused_top(ratings, (2, 7)) is None         # a rating below the scale
    assert unused_top(ratings, (0, 10)) == UnusedTop(top=5.0, ratings=7)
    assert unused_top(ratings.iloc[:, :0], (1, 7)) is None


def _ratings(n: int, top: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"uid": np.repeat(np.arange(n), 2), "item": np.tile([0, 1], n),
                         "sparsity": rng.integers(1, 5, 2 * n),
                         "act": rng.integers(1, top + 1, 2 * n), "accept": 4})


def test_check_reading_names_the_earliest_repeated_pair_and_counts_every_repeat():
    table = pd.DataFrame({"uid": [1, 2, 2, 1], "item": [0, 0, 0, 0], "sparsity": 1, "act": 3})
    with pytest.raises(TableError) as exc:
        check_reading(table, "uid", ["act"], ["sparsity"], (1, 7))
    assert str(exc.value).startswith("uid, item: 2 rows repeat a (uid, item) pair (first uid "
                                     "1, item 0, rows 2 and 5)")
    assert "keep one row per participant and item" in str(exc.value)
    check_reading(table.drop(columns="item"), "uid", ["act"], ["sparsity"], (1, 7))


def test_check_reading_refuses_an_unused_top_over_20_ratings_unless_the_scale_is_stated():
    table = _ratings(10)  # 20 act ratings on 1..5; accept constant
    with pytest.raises(TableError) as exc:
        check_reading(table, "uid", ["act", "accept"], ["sparsity"], (1, 7), scale_stated=False)
    # the constant accept is left out: it has its own refusal
    assert str(exc.value).startswith("act: no rating above 5 in 20 ratings of the 1..7 scale")
    assert "scale: [1, 5]" in str(exc.value) and "scale: [1, 7]" in str(exc.value)
    check_reading(table, "uid", ["act", "accept"], ["sparsity"], (1, 7), scale_stated=True)
    check_reading(_ratings(9), "uid", ["act"], ["sparsity"], (1, 7), scale_stated=False)
    check_reading(_ratings(10, top=6), "uid", ["act"], ["sparsity"], (1, 7), scale_stated=False)
