from pathlib import Path

from simstudy.cli import main
from simstudy.resources import resource_root

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = resource_root()


def test_analyze_command_writes_table_and_plots(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("models:\n  - {response: act, distance: sparsity}\nordinal: true\n")
    code = main(["analyze", str(ROOT / "tests/data/gamm/study_c.csv"), str(spec),
                 "--out", str(tmp_path / "out")])
    assert code == 0
    assert (tmp_path / "out" / "gamm.csv").exists()
    assert (tmp_path / "out" / "smooth_act_sparsity.png").exists()
    assert "act ~ sparsity" in capsys.readouterr().out


def test_bad_documents_exit_2(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("models: []\nbogus: 1\n")
    assert main(["analyze", str(ROOT / "tests/data/gamm/study_c.csv"), str(spec)]) == 2
    err = capsys.readouterr().err
    assert "bogus: unknown key" in err
    assert main(["power", str(RESOURCES / "analysis/power_plan.yaml").replace("plan", "nope")]) == 2


def test_example_documents_validate():
    from simstudy.analysis.analysis_spec import AnalysisSpec, PowerPlan, StudySpec
    from simstudy.core.documents import load_document

    load_document(RESOURCES / "analysis/gamm_published.yaml", AnalysisSpec)
    plan = load_document(RESOURCES / "analysis/power_plan.yaml", PowerPlan)
    assert plan.response.build().act.effect.kind == "plateau"
    load_document(RESOURCES / "analysis/study_published.yaml", StudySpec)


def _write(tmp_path, table, spec_text="models:\n  - {response: act, distance: sparsity}\n"
           "ordinal: false\nplot: false\n"):
    data = tmp_path / "ratings.csv"
    table.to_csv(data, index=False)
    spec = tmp_path / "spec.yaml"
    spec.write_text(spec_text)
    return str(data), str(spec)


def _study():
    import pandas as pd

    return pd.read_csv(ROOT / "tests/data/gamm/study_c.csv")


def test_missing_codes_and_out_of_scale_ratings_are_refused(tmp_path, capsys):
    table = _study()
    table.loc[[3, 8], "act"] = -99
    data, spec = _write(tmp_path, table)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("act: 2 values outside the rating scale 1..7 (-99; a missing-value "
                        "code? leave missing ratings empty)")
    assert f"{data}: act:" in err and len(err.splitlines()) == 1
    table = _study()
    table.loc[5, "act"] = 9
    data, spec = _write(tmp_path, table)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "o")]) == 2
    assert "act: 1 value outside the rating scale 1..7 (9)" in capsys.readouterr().err
    assert not (tmp_path / "o" / "gamm.csv").exists()


def test_text_markers_constant_and_single_ratings(tmp_path, capsys):
    table = _study().astype({"sparsity": object})
    table.loc[7, "sparsity"] = "."
    data, spec = _write(tmp_path, table)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "o")]) == 2
    assert ("sparsity: 1 non-numeric value (first '.' in row 9) (a missing-value marker? "
            "leave missing cells empty)") in capsys.readouterr().err
    table = _study()
    table["act"] = 4
    data, spec = _write(tmp_path, table)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "o")]) == 2
    assert "act: every rating is 4; a constant response cannot be modelled" in \
        capsys.readouterr().err
    table = _study().sample(frac=1, random_state=0).groupby("uid").head(1)
    data, spec = _write(tmp_path, table)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "uid: 120 of 120 participants have a single act rating" in err


def test_binomial_and_three_valued_models_through_the_command(tmp_path, capsys):
    import pandas as pd

    fam = ROOT / "tests/data/gamm_families"
    table = pd.read_csv(fam / "ocat_three_values.csv")
    table["accept"] = (table["y"] >= 4).astype(int)
    spec_text = ("models:\n  - {response: y, distance: sparsity}\n"
                 "  - {response: y, distance: sparsity, family: ocat}\n"
                 "  - {response: accept, distance: sparsity, family: binomial}\nplot: true\n")
    data, spec = _write(tmp_path, table, spec_text)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "o")]) == 0
    out = pd.read_csv(tmp_path / "o" / "gamm.csv")
    assert list(out["family"]) == ["gaussian", "ocat", "binomial"]
    assert out["reml_converged"].all() and (out["k"] == 3).all()
    assert out["warnings"].str.contains("raised to the minimum 3").all()
    assert "ordinal fit: basis dimension k=2 raised" in out["warnings"][0]
    assert "raised to the minimum 3 (3 distinct values) (warning)" in capsys.readouterr().err
    assert (tmp_path / "o" / "smooth_accept_sparsity.png").exists()


def test_five_point_scale_declared_as_a_yaml_list(tmp_path, capsys):
    import numpy as np
    import pandas as pd

    table = _study()
    table["act"] = np.ceil(table["act"] * 5 / 7).astype(int)       # 1..7 onto 1..5
    assert set(table["act"]) == {1, 2, 3, 4, 5}
    spec_text = ("models:\n  - {response: act, distance: sparsity}\n"
                 "  - {response: act, distance: sparsity, family: ocat}\n"
                 "scale: [1, 5]\nordinal: false\nplot: false\n")
    data, spec = _write(tmp_path, table, spec_text)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "o")]) == 0
    out = pd.read_csv(tmp_path / "o" / "gamm.csv")
    assert list(out["family"]) == ["gaussian", "ocat"] and out["reml_converged"].all()
    table.loc[0, "act"] = 6
    data, spec = _write(tmp_path, table, spec_text)
    assert main(["analyze", data, spec, "--out", str(tmp_path / "p")]) == 2
    assert "act: 1 value outside the rating scale 1..5 (6)" in capsys.readouterr().err


def test_single_rating_warning_speaks_of_a_residual_only_where_there_is_one():
    import pandas as pd

    from simstudy.analysis.inputs import check_rating_table

    table = _study().sample(frac=1, random_state=0).groupby("uid").head(1)
    table = pd.concat([table, _study().head(20)])
    gaussian = check_rating_table(table, "uid", [("act", "sparsity", "gaussian")], (1, 7))
    ocat = check_rating_table(table, "uid", [("act", "sparsity", "ocat")], (1, 7))
    table["yes"] = (table["act"] >= 4).astype(int)
    binomial = check_rating_table(table, "uid", [("yes", "sparsity", "binomial")], None)
    assert "residual" in gaussian[0]
    for notes in (ocat, binomial):
        assert "single" in notes[0] and "residual" not in notes[0]
