"""The German-credit world against CARMA's graph and the data's categories, written out again
here; the oracle against a brute force of its own; every policy's contract on the world."""

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from simstudy.checks import check_policy, check_profiles, check_world, example_spec
from simstudy.core.registry import entries, kinds
from simstudy.metrics import evaluate_recourse
from simstudy.people import People, PeopleSpec
from simstudy.people.change_limits import ChangeSpec, draw_limits
from simstudy.policies.base import RecourseContext
from simstudy.policies.oracle import CausalOracle
from simstudy.primitives.levels import level_columns, off_level
from simstudy.primitives.limits import limit_violations
from simstudy.primitives.profiles import ActionabilityProfiles
from simstudy.primitives.space import ScaledSpace
from simstudy.resources import resource_path
from simstudy.world.decision import DecisionConfig, train_decision_model
from simstudy.world.german_credit import DECISION_MODEL, GERMAN_CREDIT_CSV

NAMES = ("sex", "age", "credit_amount", "duration", "checking", "savings", "housing")
#: CARMA's adjacency for German credit, as parents
PARENTS = {"sex": (), "age": (), "credit_amount": ("sex", "age"),
           "duration": ("sex", "age", "credit_amount"), "checking": ("sex", "age"),
           "savings": ("sex", "age", "checking"),
           "housing": ("sex", "age", "checking", "savings")}
CODES = {"checking": {0.0, 1.0, 2.0, 3.0}, "savings": {0.0, 1.0, 2.0, 3.0, 4.0},
         "housing": {0.0, 1.0, 2.0}}
COLUMNS = {"checking": ("status_of_existing_checking_account",
                        ["... < 0 DM", "no checking account", "0 <= ... < 200 DM",
                         "... >= 200 DM / salary assignments for at least 1 year"]),
           "savings": ("savings_account_and_bonds",
                       ["unknown/ no savings account", "... < 100 DM", "100 <= ... < 500 DM",
                        "500 <= ... < 1000 DM", "... >= 1000 DM"]),
           "housing": ("housing", ["rent", "own", "for free"])}


def descendants(name):
    out, stack = set(), [c for c, ps in PARENTS.items() if name in ps]
    while stack:
        node = stack.pop()
        if node not in out:
            out.add(node)
            stack.extend(c for c, ps in PARENTS.items() if node in ps)
    return out


@pytest.fixture(scope="module")
def german():
    spec = entries("world")["german_credit"].model_validate(
        {"kind": "german_credit", "flow": {"hidden": [32], "epochs": 40, "batch_size": 64}})
    world, data, _ = spec.build(0, None)
    model = train_decision_model(data, DecisionConfig(epochs=60), seed=0)
    with torch.no_grad():
        idx = (~model.approves(data.x_test)).nonzero().squeeze(1)
    context = RecourseContext(world, model, data, 0)
    return context, data.x_test[idx].numpy(), idx.numpy()


def test_roles_follow_carmas_graph_and_the_reading_of_the_levels():
    roles = entries("world")["german_credit"].model_validate({"kind": "german_credit"}).roles()
    assert roles.names == NAMES
    assert {k: tuple(v) for k, v in roles.parents.items()} == PARENTS
    assert roles.immutable == ("sex", "age") and roles.sensitive == ("sex",)
    assert roles.categorical == ("housing",)
    assert {f: set(c) for f, c in roles.levels.items()} == CODES


def test_the_data_are_the_csvs_categories_as_codes(german):
    context, _, _ = german
    data = context.data
    x = torch.cat([data.x_train, data.x_val, data.x_test]).numpy()
    raw = pd.read_csv(GERMAN_CREDIT_CSV)
    assert len(x) == len(raw)
    for name, (column, order) in COLUMNS.items():
        expected = raw[column].map({text: code for code, text in enumerate(order)})
        assert expected.notna().all()
        counts = np.bincount(x[:, NAMES.index(name)].astype(int), minlength=len(order))
        assert counts.tolist() == np.bincount(expected, minlength=len(order)).tolist()
    male = raw["personal_status_and_sex"].str.startswith("male").sum()
    assert int(x[:, 0].sum()) == male


def test_the_world_keeps_the_graph_and_the_codes(german):
    context, _, _ = german
    world, x = context.world, context.data.x_test
    check_world(world, x, "german_credit")
    back = world.predict(world.abduct(x))
    for j, name in enumerate(NAMES):
        if name in CODES or name == "sex":
            assert torch.equal(back[:, j], x[:, j])  # codes come back exactly
        else:
            assert torch.allclose(back[:, j], x[:, j], rtol=1e-9, atol=1e-9)
    g = np.random.default_rng(0)
    drawn = world.sample(300, g).numpy()
    moved = 0
    for feature in world.roles.actionable:
        j = NAMES.index(feature)
        for value in (context.lower[j], context.upper[j]):
            intervened = torch.zeros(x.shape, dtype=torch.bool)
            intervened[:, j] = True
            cf = world.counterfactual(x, intervened, torch.full(x.shape, float(value),
                                                                dtype=torch.float64))
            assert torch.equal(cf[:, j], torch.full((len(x),), float(value), dtype=x.dtype))
            keep = [k for k, f in enumerate(NAMES) if f != feature and f not in
                    descendants(feature)]
            assert torch.equal(cf[:, keep], x[:, keep])  # non-descendants: exactly factual
            for name, codes in CODES.items():
                assert set(cf[:, NAMES.index(name)].tolist()) <= codes
            below = [NAMES.index(f) for f in descendants(feature)]
            moved += int((cf[:, below] != x[:, below]).sum())
    assert moved > 0  # descendants follow their parents: not vacuous
    for name, codes in CODES.items():
        assert set(drawn[:, NAMES.index(name)].tolist()) <= codes


def _brute_force(context, x, profiles):
    """Every action on the person's features (each continuous one over its clipped grid of 25,
    each coded one over its codes), cheapest approved and plausible counterfactual."""
    world, model = context.world, context.model
    lower, upper, rng = context.lower, context.upper, context.feature_range
    k_global = len(world.roles.actionable)
    costs = np.full(len(x), np.nan)
    for i in range(len(x)):
        options = []
        feats = [f for f, ok in zip(profiles.features, profiles.actionable[i], strict=True) if ok]
        for f in feats:
            j = NAMES.index(f)
            if f in CODES:
                values = [c for c in sorted(CODES[f]) if lower[j] <= c <= upper[j]]
            else:
                values = np.unique(np.clip(np.linspace(2 * lower[j] - x[i, j],
                                                       2 * upper[j] - x[i, j], 25),
                                           lower[j], upper[j])).tolist()
            options.append([None] + [v for v in values if v != x[i, j]])
        combos = [c for c in itertools.product(*options) if any(v is not None for v in c)]
        inter = np.zeros((len(combos), len(NAMES)), bool)
        vals = np.repeat(x[i:i + 1], len(combos), axis=0)
        cost = np.zeros(len(combos))
        for n, combo in enumerate(combos):
            for f, v in zip(feats, combo, strict=True):
                if v is None:
                    continue
                j = NAMES.index(f)
                inter[n, j], vals[n, j] = True, v
                change = 1.0 if f == "housing" else (v - x[i, j]) / rng[j]
                cost[n] += change ** 2
        cost /= k_global
        with torch.no_grad():
            xi = torch.from_numpy(np.repeat(x[i:i + 1], len(combos), axis=0))
            cf = world.counterfactual(xi, torch.from_numpy(inter), torch.from_numpy(vals))
            ok = (model(cf) >= 0).numpy() & (world.log_prob(cf).numpy()
                                            >= world.log_prob(xi[:1]).numpy())
        if ok.any():
            costs[i] = cost[ok].min()
    return costs


def test_the_oracle_equals_a_brute_force_over_the_flows_counterfactuals(german):
    context, x, ids = german  # every rejected deployment applicant
    features = context.world.roles.actionable
    # duration (continuous), checking and savings (ordinal), housing (categorical)
    scores = np.tile([0, 1, 1, 1, 1], (len(x), 1))
    profiles = ActionabilityProfiles(features, scores, 1, np.where(scores > 0, 1.0, np.inf))
    rec = CausalOracle().fit(context).recommend(x, profiles, ids)
    ev = evaluate_recourse(context.world, context.model, x, rec, profiles,
                           context.feature_range)
    expected = _brute_force(context, x, profiles)
    assert np.array_equal(rec.found, np.isfinite(expected)) and rec.found.sum() >= len(x) // 3
    np.testing.assert_allclose(ev["cost"][rec.found], expected[rec.found], rtol=1e-12)
    assert ev["valid"][rec.found].all() and ev["plausible"][rec.found].all()
    # the categorical feature counts one unit: a housing change costs 1/K whatever the codes
    moved = rec.found & rec.intervened[:, NAMES.index("housing")]
    if moved.any():
        assert (ev["cost"][moved] >= 1 / len(features) - 1e-12).all()


def _spec(kind):
    if kind == "icarma":
        return type(example_spec("policy", kind)).model_validate(
            {"kind": "icarma", "epochs": 4, "batch_size": 64, "cache": False})
    if kind.startswith("hare/"):
        document = example_spec("policy", "hare").model_dump()
        document["base"] = _spec(kind.split("/")[1]).model_dump()
        document["search_without_base"] = True
        return type(example_spec("policy", "hare")).model_validate(document)
    return example_spec("policy", kind)


CASES = kinds("policy") + [f"hare/{b}" for b in kinds("policy") if b != "hare"]


@pytest.mark.parametrize("case", CASES)
def test_every_policy_keeps_the_contract_on_german_credit(case, german):
    context, x, ids = german
    x, ids = x[:6], ids[:6]
    profiles = check_profiles(context.world.roles.actionable, ids)
    changes = {f: ChangeSpec.model_validate({"direction": {"up": 0.4, "down": 0.3, "any": 0.3},
                                             "bound": {"share": [0.3, 1.0]}})
               for f in context.world.roles.actionable}
    limited = dataclasses.replace(profiles, limits=draw_limits(
        changes, context.world.roles.actionable, ids, seed=1))
    spec = _spec(case)
    levels = level_columns(NAMES, context.world.roles.levels)
    # HARE is slow over a causal base (every step recomputes counterfactuals): limits only
    for people in ((limited,) if case.startswith("hare/") else (profiles, limited)):
        extra = None
        if spec.policy().asks_questions:
            crowd = People.from_spec(
                PeopleSpec.model_validate({"users": {"preference": "weights"}}),
                x, ids, 0, NAMES, context.world.roles.actionable,
                ScaledSpace.from_context(context), reported=people,
                immutable=context.world.roles.immutable)

            def extra(rows, crowd=crowd):
                return {"feedback": crowd.feedback()}
        rec = spec.policy().fit(context).recommend(x, people, ids, 3,
                                                   **({} if extra is None else extra(None)))
        acting = rec.intervened & rec.found[:, None]
        assert not off_level(rec.values, acting, levels).any()
        if case in ("oracle", "hare/oracle"):
            assert acting[:, list(levels)].any()  # not vacuous: some recourse sets a level
        if "violations" in rec.extras:  # HARE: forbidden features off the world's values
            assert int(rec.extras["violations"].sum()) == 0
        if people.limits is not None:
            assert not limit_violations(people.limits, x, acting, rec.values,
                                        context.feature_range,
                                        people.columns_in(NAMES)).any()
        check_policy(spec.policy, context, x, ids, people, name=case, seed=3,
                     recommend_kwargs=extra,
                     rtol=1e-4 if case.startswith(("hare", "wachter")) else 1e-6)


def test_the_world_scenario_uses_the_worlds_decision_model():
    # the scenario's text names DECISION_MODEL as its decision model: the two must not drift
    doc = yaml.safe_load(resource_path("scenarios", "world_german_credit.yaml").read_text())
    assert DecisionConfig(**doc["decision_model"]) == DecisionConfig(**DECISION_MODEL)
