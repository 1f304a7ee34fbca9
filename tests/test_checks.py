"""Contract checks run over every registered world, policy and response model."""

import numpy as np
import pytest
import torch

from simstudy.checks import (
    ContractError,
    beyond_range,
    check_policy,
    check_profiles,
    check_recourse_values,
    check_response_model,
    check_world,
    example_spec,
    registered_kinds,
)
from simstudy.core.rng import generator
from simstudy.metrics import Recourse
from simstudy.people import People, PeopleSpec
from simstudy.policies import CausalOracle
from simstudy.policies.base import RecourseContext
from simstudy.primitives.consistency import inconsistent_features, world_counterfactual
from simstudy.primitives.space import ScaledSpace, action_mask
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache, train_decision_model

KINDS = registered_kinds()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return ModelCache(tmp_path_factory.mktemp("check-cache"))


@pytest.mark.parametrize("kind", KINDS["world"])
def test_world_contract(kind, cache):
    spec = example_spec("world", kind)
    world, data, _ = spec.build(0, cache, base_dir=".")
    labels = bool(getattr(type(spec), "labels", False))
    check_world(world, data.x_test[:100], name=kind, needs_label=labels)
    if not labels:  # then retraining, which needs labels, must be refused at validation
        from simstudy.run.scenario import Scenario

        with pytest.raises(ValueError, match="retraining"):
            Scenario.model_validate({
                "name": "x", "world": spec.model_dump(), "policies": [{"kind": "oracle"}],
                "conditions": [{"name": "c", "population": {}}],
                "simulation": {"arrivals": {"kind": "poisson", "rate_per_day": 1},
                               "retraining": {"every_days": 7, "window_days": 7}}})


@pytest.fixture(scope="module")
def mlp_context():
    """A 400-sample Loan world with a briefly trained decision model, and 8 rejected people."""
    world = LoanSCM()
    data = sample_world_data(world, 400, generator(0, "check-world"))
    model = train_decision_model(data, DecisionConfig(epochs=5), seed=0)
    with torch.no_grad():
        idx = (~model.approves(data.x_test)).nonzero().squeeze(1)[:8]
    return RecourseContext(world, model, data, 0), data.x_test[idx].numpy(), idx.numpy()


#: Known breaches of the policy contract, each with its cause; a kind listed here that passes
#: fails the test, so the entry is removed once the cause is fixed.
KNOWN_BREACHES: dict[str, tuple[str, str]] = {}


def _feedback(context, x, ids, profiles, spec):
    """Extra ``recommend`` arguments for the people at some rows: for a policy that asks
    questions, people with hidden preference weights answer (a fresh session per request)."""
    if not spec.policy().asks_questions:
        return None
    people = People.from_spec(
        PeopleSpec.model_validate({"users": {"preference": "weights"}}),
        x, ids, 0, context.feature_names, context.world.roles.actionable,
        ScaledSpace.from_context(context), reported=profiles,
        immutable=context.world.roles.immutable)

    def extra(rows):
        return {"feedback": people.feedback()}
    return extra


def _hare_over(base: str):
    """The small HARE of the checks over the example of another registered kind; it also
    searches for the people its base found nothing for, so that every base's search runs."""
    document = example_spec("policy", "hare").model_dump()
    document["base"] = example_spec("policy", base).model_dump()
    document["search_without_base"] = True
    return type(example_spec("policy", "hare")).model_validate(document)


#: Every registered kind, and HARE over every registered kind it can refine.
POLICY_CASES = KINDS["policy"] + [f"hare/{base}" for base in KINDS["policy"] if base != "hare"]


def _case_spec(case: str):
    return _hare_over(case.split("/")[1]) if "/" in case else example_spec("policy", case)


@pytest.mark.parametrize("kind", KINDS["policy"])
def test_policy_contract(kind, mlp_context):
    context, x, ids = mlp_context
    spec = example_spec("policy", kind)
    profiles = check_profiles(context.world.roles.actionable, ids)
    extra = _feedback(context, x, ids, profiles, spec)
    if kind not in KNOWN_BREACHES:
        check_policy(spec.policy, context, x, ids, profiles, name=kind, seed=3,
                     recommend_kwargs=extra)
        return
    match, cause = KNOWN_BREACHES[kind]
    # everything else holds for people inside the training range
    inside = np.clip(x, context.lower, context.upper)
    check_policy(spec.policy, context, inside, ids, profiles, name=kind, seed=3,
                 outside_range=False, recommend_kwargs=extra)
    with pytest.raises(ContractError, match=match):
        check_policy(spec.policy, context, x, ids, profiles, name=kind, seed=3,
                     recommend_kwargs=extra)
    pytest.xfail(f"{kind}: {cause}")


@pytest.mark.parametrize("case", POLICY_CASES)
def test_no_policy_moves_a_forbidden_feature_off_the_worlds_counterfactual(
        case, small_loan_context, rejected):
    """Property over every registered policy (HARE over every base kind included), people
    beyond the training range: no recourse shows a feature the person may not act on at a value
    other than their own or the world's counterfactual of the allowed interventions."""
    context, x, ids = small_loan_context, rejected[0][:24], rejected[1][:24]
    profiles = check_profiles(context.world.roles.actionable, ids)
    spec = _case_spec(case)
    allowed = action_mask(context.feature_names, profiles)
    x = beyond_range(x, allowed, context.lower, context.upper)
    extra = _feedback(context, x, ids, profiles, spec)
    rec = spec.policy().fit(context).recommend(x, profiles, ids, 3,
                                               **(extra(np.arange(len(ids))) if extra else {}))
    found = rec.found
    # the property is checked on real recourses (a policy proposing only actions, whose points
    # the world computes, is consistent by construction even where its brief training finds none)
    assert found.any() or rec.counterfactual is None
    point = (world_counterfactual(context.world, x, rec.intervened, rec.values)
             if rec.counterfactual is None else rec.counterfactual)
    point = np.where(found[:, None], point, x)
    bad = inconsistent_features(context.world, x, rec.intervened & found[:, None], rec.values,
                                point, context.feature_range)
    assert not (rec.intervened & ~allowed).any()
    assert int((bad & ~allowed).any(axis=1).sum()) == 0
    if "hare" in case:
        assert (rec.extras["violations"] == 0).all()


def test_hare_over_the_oracle_follows_a_learned_flow_world(cache):
    """In a world that is a learned causal flow, the points HARE shows over a causal base are
    the flow's counterfactuals of its actions, for people beyond the training range too."""
    world, data, _ = example_spec("world", "causal_flow").build(0, cache, base_dir=".")
    model = train_decision_model(data, DecisionConfig(epochs=20), seed=0)
    context = RecourseContext(world, model, data, 0)
    with torch.no_grad():
        idx = (~model.approves(data.x_test)).nonzero().squeeze(1)[:12]
    x, ids = data.x_test[idx].numpy(), idx.numpy()
    profiles = check_profiles(world.roles.actionable, ids)
    x = beyond_range(x, action_mask(world.roles.names, profiles), context.lower, context.upper)
    spec = _hare_over("oracle")
    extra = _feedback(context, x, ids, profiles, spec)
    rec = spec.policy().fit(context).recommend(x, profiles, ids, 3, **extra(np.arange(12)))
    assert rec.found.sum() >= 3 and (rec.extras["violations"] == 0).all()
    check_recourse_values(world, x, rec, context.feature_range, "hare/oracle (flow)")


def test_the_value_check_catches_interpolated_counterfactual_coordinates(lin_ctx, lin_people):
    """HARE's earlier boundary search over a causal base interpolated every coordinate of the
    base's counterfactual, descendants included; the value check refuses such points."""
    context, (x, ids, profiles) = lin_ctx, lin_people

    class InterpolatesCoordinates(CausalOracle):
        """The earlier search's point: a candidate that moves the oracle's intervened features
        twice as far but carries every other coordinate over from the action's counterfactual,
        bisected coordinate by coordinate towards the factual (its midpoint shown)."""

        def recommend(self, x, profiles, ids, seed=0, feedback=None):
            rec = super().recommend(x, profiles, ids, seed)
            caused = world_counterfactual(self.context_.world, x, rec.intervened, rec.values)
            candidate = np.where(rec.intervened, x + 2 * (caused - x), caused)
            half = np.where(rec.found[:, None], x + 0.5 * (candidate - x), x)
            return Recourse(rec.intervened, half, rec.found, counterfactual=half)

    def make():
        return InterpolatesCoordinates(n_values=8)

    with pytest.raises(ContractError, match="counterfactual of its interventions"):
        check_policy(make, context, x, ids, profiles, name="interpolating")
    # the same actions shown as the world's counterfactual pass
    oracle = CausalOracle(n_values=8).fit(context)
    rec = oracle.recommend(x, profiles, ids)
    assert rec.found.any()
    rec.counterfactual = np.where(
        rec.found[:, None], world_counterfactual(context.world, x, rec.intervened, rec.values), x)
    check_recourse_values(context.world, x, rec, context.feature_range)


def test_the_checks_can_fail(lin_ctx, lin_people):
    x, ids, profiles = lin_people
    x, ids, profiles = x[:8], ids[:8], profiles.subset(slice(0, 8))

    class ActsOnEverything(CausalOracle):
        def recommend(self, x, profiles, ids, seed=0):
            n, d = x.shape
            return Recourse(np.ones((n, d), bool), x + 1.0, np.ones(n, bool))

    with pytest.raises(ContractError, match="cannot change"):
        check_policy(ActsOnEverything, lin_ctx, x, ids, profiles, outside_range=False)

    class BatchDependent(CausalOracle):
        def recommend(self, x, profiles, ids, seed=0):
            rec = super().recommend(x, profiles, ids, seed)
            rec.found[:] = len(ids) > 5
            return rec

    with pytest.raises(ContractError, match="batch"):
        check_policy(BatchDependent, lin_ctx, x, ids, profiles, outside_range=False)

    class LeakyWorld(LoanSCM):
        def predict(self, u):
            return super().predict(u) + 1e-3

    with pytest.raises(ContractError, match="abduct"):
        check_world(LeakyWorld(), lin_ctx.data.x_test[:50])
    class DensityHoles(LoanSCM):
        def log_prob(self, x):
            lp = super().log_prob(x)
            return torch.where(torch.arange(len(x)) % 2 == 0, -torch.inf, lp)

    with pytest.raises(ContractError, match="log_prob"):
        check_world(DensityHoles(), lin_ctx.data.x_test[:50])


def _response_inputs(n=40, seed=0):
    from simstudy.people.response import ResponseInputs

    rng = np.random.default_rng(seed)
    columns = {"cost": rng.uniform(0, 3, n), "cost_unweighted": rng.uniform(0, 3, n),
               "sparsity": rng.integers(1, 5, n).astype(float),
               "proximity_l1": rng.uniform(0, 2, n), "accept_effect": rng.normal(size=n),
               "act_effect": rng.normal(size=n), "accept_slope_effect": rng.normal(size=n),
               "act_slope_effect": rng.normal(size=n), "blocked": rng.random(n) < 0.3}
    return lambda rows: ResponseInputs(**{k: v[rows] for k, v in columns.items()})


@pytest.mark.parametrize("kind", KINDS["response"])
def test_response_model_contract(kind):
    check_response_model(example_spec("response", kind).build(), _response_inputs(), 40,
                         name=kind)


def test_the_response_checks_can_fail():
    model = example_spec("response", "logistic").build()

    class BatchNormalised(type(model)):
        def ratings(self, inputs, uniforms):
            accept, act = super().ratings(inputs, uniforms)
            return accept, (act + (inputs.cost > inputs.cost.mean())) % 2

    with pytest.raises(ContractError, match="subset"):
        check_response_model(BatchNormalised(), _response_inputs(), 40)

    class Overconfident(type(model)):
        def probabilities(self, inputs):
            accept, act = super().probabilities(inputs)
            return accept * 2, act

    with pytest.raises(ContractError, match=r"\[0, 1\]"):
        check_response_model(Overconfident(), _response_inputs(), 40)
