"""A CSV world's data: text categories read as codes, codes declared ordinal or categorical."""

import pytest
from pydantic import ValidationError

from simstudy.world.csv_source import CsvProblem, CsvSource, read_csv_source


def _source(**more):
    document = {"path": "d.csv", "label": "y", "positive": "good", "actionable": ["home"],
                "features": [{"name": "a"},
                             {"name": "home", "codes": {"rent": 0, "own": 1}, "parents": ["a"]}],
                "codebook": {"home": {0: "rent", 1: "own"}}}
    return CsvSource.model_validate({**document, **more})


def _write(folder, homes):
    rows = "a,home,y\n" + "".join(f"{i},{h},{'good' if i % 2 else 'bad'}\n"
                                  for i, h in enumerate(homes))
    (folder / "d.csv").write_text(rows)


def test_text_categories_become_their_codes(tmp_path):
    _write(tmp_path, ["rent", "own"] * 30)
    x, _ = read_csv_source(_source(), tmp_path)
    assert x[:4, 1].tolist() == [0.0, 1.0, 0.0, 1.0]


def test_a_category_without_a_code_is_named(tmp_path):
    _write(tmp_path, ["rent", "own"] * 20 + ["boat"] + ["own"] * 19)
    with pytest.raises(CsvProblem) as err:
        read_csv_source(_source(), tmp_path)
    assert err.value.field == "csv.features[1].codes"
    assert "row 42" in err.value.reason and "'boat'" in err.value.reason


def test_scales_are_ordinal_by_default_and_only_for_coded_features():
    assert _source().roles().categorical == ()
    assert _source(scales={"home": "categorical"}).roles().categorical == ("home",)
    with pytest.raises(ValidationError, match="without a codebook"):
        _source(scales={"a": "ordinal"})
    with pytest.raises(ValidationError):
        _source(scales={"home": "nominal"})
    with pytest.raises(ValidationError, match="not both"):
        CsvSource.model_validate({
            "path": "d.csv", "label": "y", "positive": "good", "actionable": ["b"],
            "features": [{"name": "a"}, {"name": "b", "startswith": "x", "codes": {"x": 1}}]})
