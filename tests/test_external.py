"""Decision models of one's own: scikit-learn (skops), TorchScript and ONNX files named in
scenarios, served by the oracle and Growing Spheres; gradient policies refuse the others."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from simstudy.cli import main
from simstudy.world.specs import LoanWorldSpec

sio = pytest.importorskip("skops.io")
LogisticRegression = pytest.importorskip("sklearn.linear_model").LogisticRegression
GradientBoosting = pytest.importorskip("sklearn.ensemble").GradientBoostingClassifier


@pytest.fixture(scope="module")
def loan_data():
    _, data, _ = LoanWorldSpec(kind="loan", n_samples=3000).build(5)
    return data


def _scenario(tmp_path: Path, decision_model: dict, policies: list[dict]) -> Path:
    doc = {"name": "own-model", "seed": 0, "replications": 1,
           "world": {"kind": "loan", "n_samples": 2000},
           "decision_model": decision_model,
           "applicants": {"max_applicants": 12},
           "policies": policies,
           "conditions": [{"name": "all", "population": {
               "actionability": {"kind": "all"}}}]}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


POLICIES = [{"kind": "oracle"}, {"kind": "growing_spheres"}]


def _run_and_check(path: Path, tmp_path: Path, capsys) -> pd.DataFrame:
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    out = tmp_path / "run"
    code = main(["--quiet", "run", str(path), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    recourse = pd.read_parquet(out / "recourse.parquet")
    assert set(recourse["policy"]) == {"oracle", "growing_spheres"}
    assert len(recourse) == 24
    # recourse for the user's model: most applicants get one that model approves
    assert recourse.groupby("policy")["valid"].mean().min() > 0.5
    return recourse


def test_a_scikit_learn_model_serves_the_oracle_and_growing_spheres(
        tmp_path, capsys, monkeypatch, loan_data):
    monkeypatch.setenv("SIMSTUDY_CACHE", str(tmp_path / "cache"))
    names = list(loan_data.roles.names)
    x = pd.DataFrame(loan_data.x_train.numpy(), columns=names)
    clf = GradientBoosting(n_estimators=30, random_state=0).fit(x, loan_data.y_train.numpy())
    sio.dump(clf, tmp_path / "model.skops")
    path = _scenario(tmp_path, {"kind": "sklearn", "path": "model.skops"}, POLICIES)
    # skops trusts no tree structure by default: the user lists it, knowing the file
    assert main(["validate", str(path)]) == 2
    assert "sklearn.tree._tree.Tree" in capsys.readouterr().err
    path = _scenario(tmp_path, {"kind": "sklearn", "path": "model.skops",
                                "trusted": ["sklearn.tree._tree.Tree"]}, POLICIES)
    recourse = _run_and_check(path, tmp_path, capsys)
    # the recourse is judged by the user's model: its own predictions agree with `valid`
    got = recourse[recourse["found"]]
    xcf = got[[f"xcf_{f}" for f in names]].to_numpy()
    approved = clf.predict_proba(pd.DataFrame(xcf, columns=names))[:, 1] >= 0.5
    np.testing.assert_array_equal(approved, got["valid"].to_numpy(bool))


def test_wachter_on_a_scikit_learn_model_is_refused_at_validation(tmp_path, capsys,
                                                                    loan_data):
    clf = LogisticRegression(max_iter=500).fit(loan_data.x_train.numpy(),
                                               loan_data.y_train.numpy())
    sio.dump(clf, tmp_path / "model.skops")
    path = _scenario(tmp_path, {"kind": "sklearn", "path": "model.skops"},
                     [{"kind": "oracle"}, {"kind": "wachter"}])
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: policies[1].kind: wachter follows the decision model's gradient" in err
    assert "Traceback" not in err


def test_a_scikit_learn_model_with_other_columns_is_refused(tmp_path, capsys, loan_data):
    names = [f"{n}_renamed" for n in loan_data.roles.names]
    x = pd.DataFrame(loan_data.x_train.numpy(), columns=names)
    sio.dump(LogisticRegression(max_iter=500).fit(x, loan_data.y_train.numpy()),
             tmp_path / "model.skops")
    path = _scenario(tmp_path, {"kind": "sklearn", "path": "model.skops"}, POLICIES)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: decision_model.features: the model was fitted on columns" in err


def test_a_file_that_is_not_a_model_is_refused(tmp_path, capsys):
    (tmp_path / "model.skops").write_bytes(b"not a model")
    (tmp_path / "model.pt").write_bytes(b"not a model")
    for kind, name in (("sklearn", "model.skops"), ("torchscript", "model.pt"),
                       ("sklearn", "missing.skops")):
        path = _scenario(tmp_path, {"kind": kind, "path": name}, POLICIES)
        assert main(["validate", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"{path}: decision_model.path:" in err and "Traceback" not in err


class _Logit(torch.nn.Module):
    def __init__(self, mean: torch.Tensor, std: torch.Tensor):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.net = torch.nn.Sequential(torch.nn.Linear(len(mean), 16), torch.nn.ReLU(),
                                       torch.nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net((x - self.mean) / self.std).squeeze(-1)


def test_a_torchscript_model_serves_the_oracle_and_growing_spheres_and_wachter(
        tmp_path, capsys, monkeypatch, loan_data):
    monkeypatch.setenv("SIMSTUDY_CACHE", str(tmp_path / "cache"))
    x = loan_data.x_train.to(torch.float32)
    y = loan_data.y_train.to(torch.float32)
    torch.manual_seed(0)
    net = _Logit(x.mean(0), x.std(0))
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(200):
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy_with_logits(net(x), y).backward()
        opt.step()
    torch.jit.save(torch.jit.script(net), str(tmp_path / "model.pt"))
    path = _scenario(tmp_path, {"kind": "torchscript", "path": "model.pt",
                                "features": list(loan_data.roles.names)}, POLICIES)
    _run_and_check(path, tmp_path, capsys)
    # gradients exist: Wachter is accepted for a TorchScript model
    path = _scenario(tmp_path, {"kind": "torchscript", "path": "model.pt"},
                     [{"kind": "wachter"}])
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


def test_an_onnx_model_is_served(tmp_path, capsys, monkeypatch, loan_data):
    skl2onnx = pytest.importorskip("skl2onnx")
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("SIMSTUDY_CACHE", str(tmp_path / "cache"))
    clf = LogisticRegression(max_iter=500).fit(loan_data.x_train.numpy().astype(np.float32),
                                               loan_data.y_train.numpy())
    from skl2onnx.common.data_types import FloatTensorType

    onx = skl2onnx.convert_sklearn(
        clf, initial_types=[("x", FloatTensorType([None, len(loan_data.roles.names)]))],
        options={id(clf): {"zipmap": False}})
    (tmp_path / "model.onnx").write_bytes(onx.SerializeToString())
    path = _scenario(tmp_path, {"kind": "onnx", "path": "model.onnx"}, POLICIES)
    _run_and_check(path, tmp_path, capsys)
