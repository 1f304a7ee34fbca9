import numpy as np

from simstudy.people.rating import published_model
from simstudy.study.power import clopper_pearson, run_power, summarize_power


def test_clopper_pearson_bounds():
    lo, hi = clopper_pearson(8, 10)
    assert lo < 0.8 < hi
    np.testing.assert_allclose((lo, hi), (0.4439, 0.9748), atol=1e-3)
    assert clopper_pearson(0, 10)[0] == 0.0 and clopper_pearson(10, 10)[1] == 1.0


def test_power_runs_and_resumes_from_checkpoints(tmp_path):
    model = published_model()
    rows = run_power(model, [30], 2, tmp_path, seed=1, workers=1, progress=False)
    assert len(rows) == 2
    part = tmp_path / "parts" / "n30.csv"
    with part.open("a") as fh:
        fh.write("30,5,0.0")  # a line cut short by an interruption is ignored
    first = part.read_text()
    more = run_power(model, [30], 3, tmp_path, seed=1, workers=1, progress=False)
    assert len(more) == 3
    assert part.read_text().startswith(first)  # finished simulations were kept, not redone
    np.testing.assert_allclose(more["p"].to_numpy()[:2], rows["p"].to_numpy())
    table, smallest = summarize_power(more, target=0.5)
    assert table["simulations"].iloc[0] == 3
    assert smallest in (None, 30)
