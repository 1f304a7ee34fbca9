from pathlib import Path

from simstudy.cli import main

ROOT = Path(__file__).resolve().parents[1]


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
    assert main(["power", str(ROOT / "analysis/power_plan.yaml").replace("plan", "nope")]) == 2


def test_example_documents_validate():
    from simstudy.analysis.documents import AnalysisSpec, PowerPlan, StudySpec
    from simstudy.documents import load_document

    load_document(ROOT / "analysis/gamm_published.yaml", AnalysisSpec)
    plan = load_document(ROOT / "analysis/power_plan.yaml", PowerPlan)
    assert plan.response.build().act.effect.kind == "plateau"
    load_document(ROOT / "analysis/study_published.yaml", StudySpec)
