"""Bad input of every kind: one ``FILE: field: reason`` line (or ``simstudy CMD: ...``), exit 2.

Each case writes a small document (or data file) that differs from a valid one in one place,
runs the command line in this process and checks that it refuses with exit code 2, that no
traceback escapes, and that the message names the file and the field (or flag). Nothing here
trains a model: every refusal must come before work starts.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from simstudy.cli import main

SCENARIO = {
    "name": "bad-input",
    "seed": 0,
    "replications": 1,
    "world": {"kind": "loan", "n_samples": 1000},
    "decision_model": {"epochs": 2},
    "applicants": {"max_applicants": 5},
    "policies": [{"kind": "oracle"}],
    "conditions": [{"name": "all-4", "population": "pop.yaml"}],
}
POPULATION = {"actionability": {"kind": "ranking", "bias": "uniform", "n_actionable": 2},
              "cost": {"shape": "linear", "alpha": 3.0}}
CSV_WORLD = {
    "kind": "causal_flow", "source": "csv",
    "csv": {"path": "data.csv",
            "features": [{"name": "a"}, {"name": "b", "parents": ["a"]}],
            "label": "y", "positive": "yes", "immutable": ["a"], "actionable": ["b"]},
    "flow": {"epochs": 1},
}
#: the CSV world has one actionable feature: its populations leave at most one actionable
CSV_POPULATION = {**POPULATION, "actionability": {**POPULATION["actionability"],
                                                  "n_actionable": 1}}
POWER = {"seed": 0, "participants": [20, 40], "simulations": 2}
STUDY = {"seed": 0, "participants": 20}
ANALYSIS = {"models": [{"response": "act", "distance": "sparsity"}]}
AUDIT = {"run": "run", "bootstrap": 20, "permutations": 20}

KIND_DOCS = {"scenario": SCENARIO, "population": POPULATION, "power": POWER, "study": STUDY,
             "analysis": ANALYSIS, "audit": AUDIT}


def _csv(rows: int = 60, **change) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=rows), "b": rng.normal(size=rows),
                          "y": np.where(np.arange(rows) % 2 == 0, "yes", "no")})
    for column, value in change.items():
        frame[column] = frame[column].astype(object)
        frame.loc[3, column] = value
    return frame


def _set(doc: dict, path: str, value) -> dict:
    """``doc`` with the value at a dotted path (``[i]`` for list items) replaced."""
    doc = copy.deepcopy(doc)
    keys = [int(k) if k.isdigit() else k for k in path.replace("[", ".").replace("]", "")
            .split(".")]
    node = doc
    for k in keys[:-1]:
        node = node[k]
    if value is _DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return doc


_DELETE = object()


def _write(tmp: Path, kind: str, doc, csv: pd.DataFrame | None = None,
           population=POPULATION) -> Path:
    (tmp / "pop.yaml").write_text(yaml.safe_dump(population))
    if csv is not None:
        csv.to_csv(tmp / "data.csv", index=False)
    path = tmp / f"{kind}.yaml"
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


def _refused(argv: list[str], capsys, *names: str) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert err.strip(), "a refusal must say why"
    for name in names:
        assert name in err, f"{name!r} not named in: {err}"
    return err


# (case id, document kind, dotted field, new value, field named in the message)
DOCUMENT_CASES = [
    # scenario
    ("policy-kind-list", "scenario", "policies[0].kind", ["oracle"], "policies[0].kind"),
    ("world-kind-mapping", "scenario", "world.kind", {"loan": 1}, "world.kind"),
    ("policy-kind-unknown", "scenario", "policies[0].kind", "genie", "policies[0].kind"),
    ("world-kind-unknown", "scenario", "world.kind", "mars", "world.kind"),
    ("replications-text", "scenario", "replications", "1", "replications"),
    ("replications-zero", "scenario", "replications", 0, "replications"),
    ("seed-bool", "scenario", "seed", True, "seed"),
    ("seed-negative", "scenario", "seed", -1, "seed"),
    ("seed-float", "scenario", "seed", 1.5, "seed"),
    ("policies-empty", "scenario", "policies", [], "policies"),
    ("policies-not-list", "scenario", "policies", "oracle", "policies"),
    ("unknown-key", "scenario", "colour", "blue", "colour"),
    ("policy-name-escapes", "scenario", "policies[0].name", "../evil", "policies[0].name"),
    ("policy-name-slash", "scenario", "policies[0].name", "a/b", "policies[0].name"),
    ("policy-name-hidden", "scenario", "policies[0].name", ".hidden", "policies[0].name"),
    ("condition-name-long", "scenario", "conditions[0].name", "c" * 300,
     "conditions[0].name"),
    ("condition-name-escapes", "scenario", "conditions[0].name", "../up",
     "conditions[0].name"),
    ("scenario-name-slash", "scenario", "name", "a/b", "name"),
    ("conditions-duplicate", "scenario", "conditions",
     [{"name": "x", "population": "pop.yaml"}, {"name": "x", "population": "pop.yaml"}],
     "conditions"),
    ("policies-duplicate", "scenario", "policies", [{"kind": "oracle"}, {"kind": "oracle"}],
     "policies"),
    ("population-missing", "scenario", "conditions[0].population", "nowhere.yaml",
     "conditions[0].population"),
    ("lr-inf", "scenario", "decision_model.lr", float("inf"), "decision_model.lr"),
    ("lr-nan", "scenario", "decision_model.lr", float("nan"), "decision_model.lr"),
    ("epochs-zero", "scenario", "decision_model.epochs", 0, "decision_model.epochs"),
    ("hidden-zero", "scenario", "decision_model.hidden", [0], "decision_model.hidden"),
    ("n-samples-small", "scenario", "world.n_samples", 10, "world.n_samples"),
    ("world-split-sum", "scenario", "world.split", [0.5, 0.5, 0.5], "world.split"),
    ("max-applicants-zero", "scenario", "applicants.max_applicants", 0,
     "applicants.max_applicants"),
    ("applicants-split", "scenario", "applicants.split", "deploy", "applicants.split"),
    ("contrast-unknown", "scenario", "contrasts", [{"policy": "oracle", "baseline": "nope"}],
     "contrasts[0].baseline"),
    # population (inline in a scenario condition, and as its own file)
    ("cost-alpha-inf", "population", "cost.alpha", float("inf"), "cost.alpha"),
    ("cost-alpha-negative", "population", "cost.alpha", -1.0, "cost.alpha"),
    ("cost-shape", "population", "cost.shape", "quadratic", "cost.shape"),
    ("actionability-kind", "population", "actionability.kind", "some", "actionability.kind"),
    ("n-actionable-large", "population", "actionability.n_actionable", 99,
     "actionability.n_actionable"),
    ("levels-text", "population", "actionability.levels", "4", "actionability.levels"),
    ("bias-nan", "population", "actionability.bias", [float("nan"), 1.0],
     "actionability.bias"),
    ("groups-share", "population", "groups", {"rule": "random", "privileged_share": 1.5},
     "groups.privileged_share"),
    ("groups-rule", "population", "groups", {"rule": "astrology"}, "groups.rule"),
    ("population-unknown-key", "population", "colour", 1, "colour"),
    # power plans
    ("power-zero-participants", "power", "participants", [0], "participants[0]"),
    ("power-one-participant", "power", "participants", [1, 20], "participants[0]"),
    ("power-no-participants", "power", "participants", [], "participants"),
    ("power-simulations-zero", "power", "simulations", 0, "simulations"),
    ("power-alpha-inf", "power", "alpha", float("inf"), "alpha"),
    ("power-alpha-large", "power", "alpha", 1.5, "alpha"),
    ("power-outcome", "power", "outcome", "reject", "outcome"),
    ("power-noise-sd", "power", "response", {"act": {"intercept": 4.0, "sd_intercept": 1.0,
                                                     "sd_noise": 0.0}}, "response.act.sd_noise"),
    ("power-seed-bool", "power", "seed", True, "seed"),
    ("power-target-one", "power", "target_power", 1.0, "target_power"),
    # simulated studies
    ("study-one-participant", "study", "participants", 1, "participants"),
    ("study-seed-text", "study", "seed", "0", "seed"),
    ("study-items", "study", "items", 1, "items"),
    # GAMM analysis specs
    ("analysis-no-models", "analysis", "models", [], "models"),
    ("analysis-k-small", "analysis", "models[0].k", 2, "models[0].k"),
    ("analysis-ordinal-text", "analysis", "ordinal", "yes", "ordinal"),
    ("analysis-unknown-key", "analysis", "smoothness", 3, "smoothness"),
    # audit documents
    ("audit-bootstrap-few", "audit", "bootstrap", 5, "bootstrap"),
    ("audit-correction", "audit", "correction", "bonferroni", "correction"),
    ("audit-metric", "audit", "metrics", ["happiness"], "metrics"),
    ("audit-by-empty", "audit", "by", [], "by"),
    ("audit-alpha-nan", "audit", "alpha", float("nan"), "alpha"),
]


@pytest.mark.parametrize("case,kind,field,value,named", DOCUMENT_CASES,
                         ids=[c[0] for c in DOCUMENT_CASES])
def test_validate_refuses_a_bad_document(tmp_path, capsys, case, kind, field, value, named):
    path = _write(tmp_path, kind, _set(KIND_DOCS[kind], field, value))
    _refused(["validate", str(path)], capsys, str(path), named)


def _wachter(**params):
    return [{"kind": "wachter", **params}]


def _hare(**params):
    return [{"kind": "hare", **params}]


def _icarma(**params):
    return [{"kind": "icarma", **params}]


_POISSON = {"kind": "poisson", "rate_per_day": 1.0}

# Declared bounds of numeric parameters of every kind (simstudy.core.bounds and the documents):
# step counts, learning rates, budgets, layer sizes, sample sizes, probabilities, seeds.
BOUND_CASES = [
    ("wachter-lr-zero", "scenario", "policies", _wachter(lr=0.0), "policies[0].lr"),
    ("wachter-lr-negative", "scenario", "policies", _wachter(lr=-0.1), "policies[0].lr"),
    ("wachter-steps-zero", "scenario", "policies", _wachter(steps=0), "policies[0].steps"),
    ("wachter-rounds-zero", "scenario", "policies", _wachter(rounds=0), "policies[0].rounds"),
    ("wachter-lam-negative", "scenario", "policies", _wachter(lam=-1.0), "policies[0].lam"),
    ("wachter-growth-below-one", "scenario", "policies", _wachter(lambda_growth=0.5),
     "policies[0].lambda_growth"),
    ("wachter-steps-huge", "scenario", "policies", _wachter(steps=10**9), "policies[0].steps"),
    ("gs-samples-zero", "scenario", "policies", [{"kind": "growing_spheres", "n_samples": 0}],
     "policies[0].n_samples"),
    ("gs-eta-zero", "scenario", "policies", [{"kind": "growing_spheres", "eta": 0.0}],
     "policies[0].eta"),
    ("oracle-values-one", "scenario", "policies", [{"kind": "oracle", "n_values": 1}],
     "policies[0].n_values"),
    ("oracle-chunk-zero", "scenario", "policies", [{"kind": "oracle", "chunk_size": 0}],
     "policies[0].chunk_size"),
    ("hare-budget-zero", "scenario", "policies", _hare(budget=0), "policies[0].budget"),
    ("hare-lr-zero", "scenario", "policies", _hare(lr=0.0), "policies[0].lr"),
    ("hare-tolerance-zero", "scenario", "policies", _hare(tolerance=0.0), "policies[0].tolerance"),
    ("hare-steps-negative", "scenario", "policies", _hare(steps=-1), "policies[0].steps"),
    ("hare-budget-huge", "scenario", "policies", _hare(budget=10**9), "policies[0].budget"),
    ("icarma-epochs-zero", "scenario", "policies", _icarma(epochs=0), "policies[0].epochs"),
    ("icarma-lr-negative", "scenario", "policies", _icarma(lr=-1e-3), "policies[0].lr"),
    ("icarma-layer-zero", "scenario", "policies", _icarma(mask_hidden=[0]),
     "policies[0].mask_hidden"),
    ("icarma-prior-above-one", "scenario", "policies", _icarma(prior_high=1.5),
     "policies[0].prior_high"),
    ("icarma-seed-negative", "scenario", "policies", _icarma(seeds=[-1]), "policies[0].seeds"),
    ("icarma-batch-zero", "scenario", "policies", _icarma(batch_size=0), "policies[0].batch_size"),
    ("icarma-layer-huge", "scenario", "policies", _icarma(action_hidden=[10**7]),
     "policies[0].action_hidden"),
    ("dm-lr-negative", "scenario", "decision_model.lr", -0.01, "decision_model.lr"),
    ("dm-batch-zero", "scenario", "decision_model.batch_size", 0, "decision_model.batch_size"),
    ("dm-weight-decay-negative", "scenario", "decision_model.weight_decay", -1.0,
     "decision_model.weight_decay"),
    ("dm-hidden-negative", "scenario", "decision_model.hidden", [-3], "decision_model.hidden"),
    ("dm-epochs-huge", "scenario", "decision_model.epochs", 10**9, "decision_model.epochs"),
    ("dm-layer-huge", "scenario", "decision_model.hidden", [10**7], "decision_model.hidden"),
    ("users-scale-negative", "scenario", "users", {"scale": -1.0}, "users.scale"),
    ("users-samples-zero", "scenario", "users", {"n_samples": 0}, "users.n_samples"),
    ("users-noise-p", "scenario", "users", {"noise": {"kind": "bernoulli", "p": 1.5}},
     "users.noise.p"),
    ("response-sd-negative", "scenario", "response", {"kind": "logistic", "act_sd": -1.0},
     "response.act_sd"),
    ("sim-horizon-zero", "scenario", "simulation", {"horizon_days": 0.0, "arrivals": _POISSON},
     "simulation.horizon_days"),
    ("sim-request-probability", "scenario",
     "simulation", {"request_probability": 1.5, "arrivals": _POISSON},
     "simulation.request_probability"),
    ("sim-rate-zero", "scenario",
     "simulation", {"arrivals": {"kind": "poisson", "rate_per_day": 0.0}},
     "simulation.arrivals.rate_per_day"),
    ("world-split-zero-share", "scenario", "world.split", [1.0, 0.0, 0.0], "world.split"),
    ("world-samples-huge", "scenario", "world.n_samples", 10**9, "world.n_samples"),
    ("applicants-huge", "scenario", "applicants.max_applicants", 10**12,
     "applicants.max_applicants"),
    ("bias-all-zero", "population", "actionability.bias", [0.0] * 4, "actionability.bias"),
    ("bias-negative", "population", "actionability.bias", [-1.0, 1.0, 1.0, 1.0],
     "actionability.bias"),
    ("n-actionable-negative", "population", "actionability.n_actionable", -1,
     "actionability.n_actionable"),
    ("levels-one", "population", "actionability.levels", 1, "actionability.levels"),
    ("cost-power-zero", "population", "cost.power", 0.0, "cost.power"),
    ("mismatch-probability", "population", "hidden_mismatch_probability", 1.5,
     "hidden_mismatch_probability"),
    ("groups-majority", "population", "groups", {"rule": "random", "privileged_if_majority": 1.2},
     "groups.privileged_if_majority"),
    ("power-items-one", "power", "items", 1, "items"),
    ("power-confidence-one", "power", "confidence", 1.0, "confidence"),
    ("power-workers-zero", "power", "workers", 0, "workers"),
    ("power-simulations-huge", "power", "simulations", 10**9, "simulations"),
    ("study-pool-small", "study", "pool_size", 5, "pool_size"),
    ("study-participants-huge", "study", "participants", 10**9, "participants"),
    ("analysis-scale-equal", "analysis", "scale", [1, 1], "scale"),
    ("analysis-scale-three", "analysis", "scale", [1, 4, 7], "scale"),
    ("analysis-level", "analysis", "contrast", {"level": 1.5}, "contrast.level"),
    ("analysis-k-huge", "analysis", "models[0].k", 10**6, "models[0].k"),
    ("audit-permutations-few", "audit", "permutations", 5, "permutations"),
    ("audit-seed-negative", "audit", "seed", -1, "seed"),
    ("audit-bootstrap-huge", "audit", "bootstrap", 10**10, "bootstrap"),
]


@pytest.mark.parametrize("case,kind,field,value,named", BOUND_CASES,
                         ids=[c[0] for c in BOUND_CASES])
def test_validate_refuses_a_value_outside_its_declared_bounds(tmp_path, capsys, case, kind,
                                                             field, value, named):
    path = _write(tmp_path, kind, _set(KIND_DOCS[kind], field, value))
    err = _refused(["validate", str(path)], capsys, str(path), named)
    assert err.split(named, 1)[1].strip(" :]0123456789[\n"), "the rule must be stated"


def test_a_bad_population_file_is_named_when_validating_its_scenario(tmp_path, capsys):
    bad = _set(POPULATION, "cost.alpha", float("inf"))
    path = _write(tmp_path, "scenario", SCENARIO, population=bad)
    _refused(["validate", str(path)], capsys, str(tmp_path / "pop.yaml"), "cost.alpha")


# (case id, text of the file, what the message names)
FILE_CASES = [
    ("yaml-syntax", "name: [unclosed\n", "invalid YAML"),
    ("yaml-duplicate-key", "seed: 1\nseed: 2\nparticipants: [20]\n", "seed"),
    ("empty-document", "", "empty"),
    ("top-level-list", "- 1\n- 2\n", "mapping"),
]


@pytest.mark.parametrize("case,text,named", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_validate_refuses_a_broken_file(tmp_path, capsys, case, text, named):
    path = _write(tmp_path, "doc", text)
    _refused(["validate", str(path)], capsys, str(path), named)


def test_validate_refuses_a_missing_and_a_binary_file(tmp_path, capsys):
    _refused(["validate", str(tmp_path / "none.yaml")], capsys, "none.yaml", "cannot read")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00\x01")
    _refused(["validate", str(binary)], capsys, "bin.yaml", "UTF-8")


# (case id, CSV content or a change to the csv entry, field named)
CSV_CASES = [
    ("csv-missing-file", None, ("csv.path", "elsewhere.csv"), "world.csv.path"),
    ("csv-missing-column", _csv().drop(columns=["b"]), None, "world.csv.features[1].name"),
    ("csv-text-in-numbers", _csv(b="many"), None, "world.csv.features[1].name"),
    ("csv-nan", _csv(b=np.nan), None, "world.csv.features[1].name"),
    ("csv-inf", _csv(a=np.inf), None, "world.csv.features[0].name"),
    ("csv-no-label-column", _csv().drop(columns=["y"]), None, "world.csv.label"),
    ("csv-positive-matches-nothing", _csv(), ("csv.positive", "good"), "world.csv.positive"),
    ("csv-one-class", _csv().assign(y="yes"), None, "world.csv.positive"),
    ("csv-too-few-rows", _csv(rows=12), None, "world.csv.path"),
    ("csv-empty-file", pd.DataFrame(), None, "world.csv.path"),
    ("csv-renamed-column", _csv(), ("csv.features[0].column", "alpha"),
     "world.csv.features[0].column"),
    ("csv-unknown-parent", _csv(), ("csv.features[1].parents", ["z"]), "world.csv"),
    ("csv-unknown-actionable", _csv(), ("csv.actionable", ["q"]), "world.csv"),
    ("csv-source-mismatch", _csv(), ("source", "loan"), "world"),
    ("csv-split-negative", _csv(), ("csv.split", [1.2, -0.1, -0.1]), "world.csv.split"),
]


@pytest.mark.parametrize("case,frame,change,named", CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_validate_checks_the_data_file(tmp_path, capsys, case, frame, change, named):
    world = _set(CSV_WORLD, *change) if change else CSV_WORLD
    doc = _set(SCENARIO, "world", world)
    if case == "csv-empty-file":
        path = _write(tmp_path, "scenario", doc)
        (tmp_path / "data.csv").write_text("")
    else:
        path = _write(tmp_path, "scenario", doc, csv=frame)
    _refused(["validate", str(path)], capsys, str(path), named)


def test_a_good_csv_world_validates(tmp_path, capsys):
    path = _write(tmp_path, "scenario", _set(SCENARIO, "world", CSV_WORLD), csv=_csv(),
                  population=CSV_POPULATION)
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


# Command-line values are validated by the document models, before any work.
def test_run_refuses_a_negative_seed(tmp_path, capsys):
    path = _write(tmp_path, "scenario", SCENARIO)
    _refused(["run", str(path), "--out", str(tmp_path / "out"), "--seed", "-5"], capsys,
             str(path), "seed", "--seed")
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("flag,value,field", [("--simulations", "-3", "simulations"),
                                              ("--simulations", "0", "simulations"),
                                              ("--workers", "0", "workers")])
def test_power_refuses_bad_overrides(tmp_path, capsys, flag, value, field):
    path = _write(tmp_path, "power", POWER)
    _refused(["power", str(path), "--out", str(tmp_path / "out"), flag, value], capsys,
             str(path), field, flag)
    assert not (tmp_path / "out" / "parts").exists()


def _finished_run(run: Path) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    n = 40
    pd.DataFrame({"replication": 0, "condition": np.repeat(["base", "other"], n),
                  "policy": "oracle", "applicant_id": np.tile(np.arange(n), 2),
                  "gender": rng.integers(0, 2, 2 * n), "found": True, "valid": True,
                  "plausible": True, "cost_unweighted": rng.random(2 * n),
                  "logp_cf": rng.random(2 * n), "hard_action": True}).to_parquet(
        run / "recourse.parquet")
    (run / "manifest.json").write_text(json.dumps({"scenario_name": "fake", "resolved": {
        "scenario": {"world": {"kind": "loan"}}}}))
    return run


@pytest.mark.parametrize("flag,value,field", [("--bootstrap", "0", "bootstrap"),
                                              ("--permutations", "1", "permutations"),
                                              ("--seed", "-2", "seed")])
def test_audit_refuses_bad_overrides(tmp_path, capsys, flag, value, field):
    _finished_run(tmp_path / "run")
    path = _write(tmp_path, "audit", AUDIT)
    _refused(["audit", str(path), flag, value], capsys, str(path), field, flag)


def test_audit_refuses_an_unknown_baseline_and_group_column(tmp_path, capsys):
    run = _finished_run(tmp_path / "run")
    _refused(["audit", str(run), "--baseline", "nobody"], capsys, "baseline", "nobody")
    path = _write(tmp_path, "audit", _set(AUDIT, "by", ["race"]))
    _refused(["audit", str(path)], capsys, str(path), "by", "race")


# Outputs are checked before computing.
def test_writing_commands_refuse_an_output_they_cannot_write(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("a file")
    scenario = _write(tmp_path, "scenario", SCENARIO)
    _refused(["run", str(scenario), "--out", str(taken)], capsys, "--out", str(taken))
    power = _write(tmp_path, "power", POWER)
    _refused(["power", str(power), "--out", str(taken)], capsys, "--out", str(taken))
    study = _write(tmp_path, "study", STUDY)
    _refused(["study", str(study), "--out", str(tmp_path)], capsys, "--out", "directory")
    _refused(["study", str(study), "--out", str(taken / "x.csv")], capsys, "--out")
    run = _finished_run(tmp_path / "run")
    _refused(["audit", str(run), "--out", str(tmp_path)], capsys, "--out", "directory")
    analysis = _write(tmp_path, "analysis", ANALYSIS)
    ratings = tmp_path / "ratings.csv"
    pd.DataFrame({"uid": [1, 1, 2, 2], "act": [3, 4, 5, 6], "sparsity": [1, 2, 1, 2]}).to_csv(
        ratings, index=False)
    _refused(["analyze", str(ratings), str(analysis), "--out", str(taken)],
             capsys, "--out", str(taken))
    assert taken.read_text() == "a file"


def test_audit_defaults_to_the_group_columns_present_and_says_not_assessed(tmp_path, capsys):
    run = _finished_run(tmp_path / "run")
    code = main(["audit", str(run), "--bootstrap", "20", "--permutations", "20"])
    assert code == 0, capsys.readouterr().err
    assert "hidden disparities not assessed" in capsys.readouterr().out
    text = (run / "audit.md").read_text()
    assert "Not assessed" in text
    assert "gender" in text
    from simstudy.run.dictionary import undescribed

    assert (run / "data_dictionary.csv").exists() and undescribed(run) == []


@pytest.mark.parametrize("approve", [True, False])
def test_a_decision_model_approving_everyone_or_no_one_is_refused(tmp_path, capsys,
                                                                   monkeypatch, approve):
    import torch

    from simstudy.world.decision import ModelCache

    class Constant:
        def approves(self, x):
            return torch.full((len(x),), approve)

    monkeypatch.setattr(ModelCache, "decision_model",
                        lambda self, *a, **k: (Constant(), {}))
    path = _write(tmp_path, "scenario", SCENARIO)
    # one worker: the units run in this process, where the stand-in model is patched in
    err = _refused(["run", str(path), "--out", str(tmp_path / "out"), "--workers", "1"], capsys,
                   str(path), "decision_model")
    assert ("every" if approve else "no") + " applicant" in err


def test_validate_refuses_a_ranking_distribution_the_world_does_not_name(tmp_path, capsys):
    population = {**POPULATION, "actionability": {"kind": "ranking", "bias": "privileged",
                                                  "n_actionable": 1}}
    doc = _set(SCENARIO, "world", CSV_WORLD)
    path = _write(tmp_path, "scenario", doc, csv=_csv(), population=population)
    _refused(["validate", str(path)], capsys, str(path),
             "conditions[0].population.actionability.bias", "privileged")
    # the Loan world names it
    path = _write(tmp_path, "scenario", SCENARIO, population=population)
    assert main(["validate", str(path)]) == 0


def test_validate_refuses_group_features_the_world_lacks(tmp_path, capsys):
    uniform = {"privileged": {"bias": "uniform"}, "non_privileged": {"bias": "uniform"}}
    income_rule = {**CSV_POPULATION, "groups": {"rule": "income", **uniform}}
    doc = _set(SCENARIO, "world", CSV_WORLD)
    # the CSV world names no income-like feature
    path = _write(tmp_path, "scenario", doc, csv=_csv(), population=income_rule)
    _refused(["validate", str(path)], capsys, str(path),
             "conditions[0].population.groups.income_feature", "income-like")
    # a document naming a feature the world has is accepted; one it lacks is refused
    named = {**CSV_POPULATION, "groups": {"rule": "income", "income_feature": "b",
                                          **uniform}}
    path = _write(tmp_path, "scenario", doc, csv=_csv(), population=named)
    assert main(["validate", str(path)]) == 0
    named["groups"]["income_feature"] = "wage"
    path = _write(tmp_path, "scenario", doc, csv=_csv(), population=named)
    _refused(["validate", str(path)], capsys, str(path),
             "conditions[0].population.groups.income_feature", "'wage'")
    # the CSV world declares its own income-like feature
    declared = _set(doc, "world.csv.income", "b")
    path = _write(tmp_path, "scenario", declared, csv=_csv(), population=income_rule)
    assert main(["validate", str(path)]) == 0
    # a stylized attribute is balanced within a sensitive feature the world must name
    stylized = {**CSV_POPULATION, "stylized_attribute": "race"}
    path = _write(tmp_path, "scenario", doc, csv=_csv(), population=stylized)
    _refused(["validate", str(path)], capsys, str(path),
             "conditions[0].population.stylized_attribute", "sensitive")
    # the Loan world names both
    path = _write(tmp_path, "scenario", SCENARIO, population=income_rule)
    assert main(["validate", str(path)]) == 0


# Cross-field rules: values that are each fine but do not fit together (or the world).
def test_cross_field_population_rules_against_the_world(tmp_path, capsys):
    field = "conditions[0].population.actionability"
    # the Loan world has 4 actionable features
    above = _set(POPULATION, "actionability.n_actionable", 5)
    path = _write(tmp_path, "scenario", SCENARIO, population=above)
    err = _refused(["validate", str(path)], capsys, str(path), f"{field}.n_actionable",
                   "above the world's 4 actionable features")
    assert "(in pop.yaml)" in err
    # explicit ranking probabilities: one per ranking of the 4 features (24), not 4
    four = _set(POPULATION, "actionability.bias", [1.0, 1.0, 1.0, 1.0])
    path = _write(tmp_path, "scenario", SCENARIO, population=four)
    _refused(["validate", str(path)], capsys, str(path), f"{field}.bias", "24 rankings")
    fitting = _set(POPULATION, "actionability.bias", [1.0] * 24)
    path = _write(tmp_path, "scenario", SCENARIO, population=fitting)
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("where", ["actionability", "groups.privileged"])
def test_all_zero_probability_vectors_are_refused(tmp_path, capsys, where):
    if where == "actionability":
        population = _set(POPULATION, "actionability.bias", [0.0] * 24)
    else:
        population = {**POPULATION, "groups": {"rule": "random",
                                               "privileged": {"bias": [0.0] * 24}}}
    path = _write(tmp_path, "population", population)
    _refused(["validate", str(path)], capsys, str(path), f"{where}.bias", "all zero")


def test_csv_world_cross_field_rules(tmp_path, capsys):
    both = _set(SCENARIO, "world", _set(CSV_WORLD, "csv.actionable", ["a", "b"]))
    path = _write(tmp_path, "scenario", both, csv=_csv())
    _refused(["validate", str(path)], capsys, str(path), "world.csv",
             "both actionable and immutable: ['a']")
    # a label of three classes needs the positive one stated
    three = _csv().assign(y=np.array(["yes", "no", "maybe"] * 20))
    unstated = _set(SCENARIO, "world", _set(CSV_WORLD, "csv.positive", _DELETE))
    path = _write(tmp_path, "scenario", unstated, csv=three)
    _refused(["validate", str(path)], capsys, str(path), "world.csv.positive")
    stated = _set(SCENARIO, "world", CSV_WORLD)
    path = _write(tmp_path, "scenario", stated, csv=three, population=CSV_POPULATION)
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("command", ["run", "power", "study", "analyze", "audit"])
def test_an_empty_out_is_refused(tmp_path, capsys, command):
    docs = {"run": ("scenario", SCENARIO), "power": ("power", POWER),
            "study": ("study", STUDY), "analyze": ("analysis", ANALYSIS),
            "audit": ("audit", AUDIT)}
    path = _write(tmp_path, *docs[command])
    argv = [command, str(path), "--out", ""]
    if command == "analyze":
        argv = [command, str(tmp_path / "ratings.csv"), str(path), "--out", " "]
    _refused(argv, capsys, f"simstudy {command}", "--out", "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["pop.yaml", path.name])


def test_an_empty_audit_out_field_is_refused(tmp_path, capsys):
    path = _write(tmp_path, "audit", _set(AUDIT, "out", ""))
    _refused(["validate", str(path)], capsys, str(path), "out")


@pytest.mark.parametrize("field", ["name", "policies[0].name", "conditions[0].name"])
def test_unsafe_names_are_refused_with_the_rule(tmp_path, capsys, field):
    path = _write(tmp_path, "scenario", _set(SCENARIO, field, "a b/../c"))
    _refused(["validate", str(path)], capsys, str(path), field,
             "use 1-64 letters, digits, '_', '.' or '-', not starting with '.'")


def test_a_value_no_union_member_accepts_is_one_line_naming_the_field(tmp_path, capsys):
    path = _write(tmp_path, "scenario", _set(SCENARIO, "users", {"scale": -1.0}))
    err = _refused(["validate", str(path)], capsys, str(path))
    assert err.splitlines() == [f"{path}: users.scale: Input should be 'near', 'intermediate' "
                                "or 'far', or input should be greater than 0"]
