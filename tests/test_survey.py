"""Survey exports: separators, Qualtrics header rows, a column map, swapped arguments."""

import pandas as pd
import pytest
import yaml

from simstudy.cli import main
from simstudy.study.survey import read_rating_table, sniff_separator

ROWS = [("1", "0", "1", "0.1", "5", "4"), ("1", "1", "2", "0.3", "4", "3"),
        ("2", "0", "1", "0.2", "6", "6"), ("2", "1", "3", "0.5", "3", "2")]


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_separators_are_sniffed(tmp_path, sep):
    path = tmp_path / "export.csv"
    path.write_text("\n".join(sep.join(r) for r in
                              [("uid", "item", "sparsity", "proximity", "accept", "act"), *ROWS]))
    assert sniff_separator(path.read_text().split("\n")[0]) == sep
    table = read_rating_table(path)
    assert list(table.columns) == ["uid", "item", "sparsity", "proximity", "accept", "act"]
    assert table["act"].tolist() == [4, 3, 6, 2]


def test_qualtrics_rows_are_skipped_and_columns_mapped(tmp_path):
    path = tmp_path / "qualtrics.csv"
    lines = ["ResponseId,item,sparsity,proximity,Q12_1,Q13_1",
             "Response ID,item,sparsity,proximity,How acceptable?,Would you act?",
             '{"ImportId":"_recordId"},x,x,x,{"ImportId":"QID12_1"},{"ImportId":"QID13_1"}',
             *(",".join(("R_" + r[0], *r[1:])) for r in ROWS)]
    path.write_text("\n".join(lines))
    table = read_rating_table(path, qualtrics=True,
                              columns={"uid": "ResponseId", "accept": "Q12_1", "act": "Q13_1"})
    assert table["uid"].tolist() == ["R_1", "R_1", "R_2", "R_2"]
    assert pd.api.types.is_numeric_dtype(table["accept"]) and table["accept"].sum() == 18
    with pytest.raises(ValueError, match="Q99"):
        read_rating_table(path, qualtrics=True, columns={"accept": "Q99"})


def test_swapped_analyze_arguments_are_recognised(tmp_path, capsys):
    rng = pd.Series(range(240))
    table = pd.DataFrame({"uid": rng // 4, "item": rng % 4, "sparsity": rng % 4 + 1,
                          "proximity": (rng % 7) / 7, "accept": (rng * 7 % 7) + 1,
                          "act": (rng * 3 % 7) + 1})
    data = tmp_path / "data.csv"
    table.to_csv(data, sep=";", index=False)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"models": [{"response": "act", "distance": "sparsity"}],
                                    "ordinal": False, "plot": False}))
    assert main(["analyze", str(spec), str(data), "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "DATA comes first" in err
    assert (tmp_path / "a" / "gamm.csv").exists()
