import math

import numpy as np
import pytest
import torch

from simstudy.core.documents import DocumentError, validate_data
from simstudy.core.registry import entries
from simstudy.core.rng import entity_uniforms, generator
from simstudy.metrics import evaluate_recourse
from simstudy.people.population import RankingSampler
from simstudy.policies.base import RecourseContext
from simstudy.policies.icarma import (
    ICARMA,
    ICARMAConfig,
    ICARMAParams,
    best_check,
    sample_training_profiles,
    train_icarma,
)
from simstudy.primitives.profiles import ActionabilityProfiles, CostProfile
from simstudy.world import LoanSCM, sample_world_data
from simstudy.world.decision import DecisionConfig, ModelCache, train_decision_model

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def loan_context():
    world = LoanSCM()
    data = sample_world_data(world, 4000, generator(7, "world"))
    model = train_decision_model(data, DecisionConfig(epochs=40), seed=0)
    return RecourseContext(world, model, data, seed=0)


@pytest.fixture(scope="module")
def trained(loan_context, tmp_path_factory):
    cache = ModelCache(tmp_path_factory.mktemp("cache"))
    config = ICARMAConfig(epochs=25, val_every=5, patience=0)
    return ICARMA(config, cache=cache, progress=False).fit(loan_context), cache, config


def rejected(context):
    x = context.data.x_test
    return x[~context.model.approves(x)].numpy()


def test_training_profiles_cover_counts_and_respect_actionability():
    config = ICARMAConfig().with_cost(3.0, "outside")
    act, w = sample_training_profiles(20000, 4, config, torch.Generator().manual_seed(0))
    counts = np.bincount(act.sum(dim=1).numpy(), minlength=5)
    assert counts[0] == 0
    assert np.allclose(counts[1:] / 20000, 0.25, atol=0.02)
    assert torch.isinf(w[~act]).all() and torch.isfinite(w[act]).all()
    assert (w[act] >= 1).all() and (w[act] <= 1 + config.alpha).all()
    # every feature is equally likely to be actionable
    assert np.allclose(act.double().mean(dim=0).numpy(), 0.625, atol=0.02)


def test_likert_profiles_use_score_levels():
    config = ICARMAConfig.score_based(cost_shapes=("linear",)).with_cost(3.0, "outside")
    act, w = sample_training_profiles(5000, 4, config, torch.Generator().manual_seed(1))
    levels = torch.unique(w[act])
    assert torch.allclose(levels, torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64))


def test_never_acts_on_non_actionable_features(loan_context, trained):
    policy = trained[0]
    x = rejected(loan_context)
    ids = np.arange(len(x))
    features = loan_context.world.roles.actionable
    for n_act in (1, 2, None):
        scores, levels = RankingSampler(n_actionable=n_act).sample(
            features, entity_uniforms(3, "profiles", ids, 2))
        profiles = ActionabilityProfiles(features, scores, levels,
                                         CostProfile(shape="convex").weights(scores, levels))
        rec = policy.recommend(x, profiles, ids)
        names = loan_context.world.roles.names
        act_idx = [names.index(f) for f in features]
        assert not rec.intervened[:, [i for i in range(len(names)) if i not in act_idx]].any()
        assert not (rec.intervened[:, act_idx] & ~profiles.actionable).any()
        result = evaluate_recourse(loan_context.world, loan_context.model, x, rec, profiles,
                                   loan_context.feature_range)
        assert result["violation"].sum() == 0
        # no fallback: a recourse is found exactly when the deployed mask selects something
        assert np.array_equal(rec.found, rec.intervened.any(axis=1))


def test_learns_valid_recourse(loan_context, trained):
    policy = trained[0]
    x = rejected(loan_context)
    ids = np.arange(len(x))
    features = loan_context.world.roles.actionable
    scores = np.tile(np.arange(1, 5), (len(x), 1))
    profiles = ActionabilityProfiles(features, scores, 4, np.ones_like(scores, dtype=float))
    result = evaluate_recourse(loan_context.world, loan_context.model, x,
                               policy.recommend(x, profiles, ids), profiles,
                               loan_context.feature_range)
    assert result["valid"].mean() > 0.8  # an untrained network reaches about 0.2
    # an action that ignores cost would not stay this close
    assert np.nanmedian(result["cost"]) < 0.5


def test_weights_steer_away_from_expensive_features(loan_context, trained):
    """With a steep cost profile the least-preferred feature is used less than with constant."""
    policy = trained[0]
    x = rejected(loan_context)
    ids = np.arange(len(x))
    features = loan_context.world.roles.actionable
    scores, levels = RankingSampler(n_actionable=4).sample(
        features, entity_uniforms(5, "profiles", ids, 2))
    hap = {}
    for shape in ("constant", "convex"):
        profiles = ActionabilityProfiles(features, scores, levels,
                                         CostProfile(shape=shape).weights(scores, levels))
        result = evaluate_recourse(loan_context.world, loan_context.model, x,
                                   policy.recommend(x, profiles, ids), profiles,
                                   loan_context.feature_range)
        hap[shape] = result["hard_action"].mean()
    assert hap["convex"] < hap["constant"]


def test_cache_roundtrip_reproduces_recommendations(loan_context, trained):
    policy, cache, config = trained
    again = ICARMA(config, cache=cache, progress=False).fit(loan_context)
    assert again.meta_["cached"] and not policy.meta_["cached"]
    assert again.model_hashes() == policy.model_hashes()
    x = rejected(loan_context)[:50]
    ids = np.arange(len(x))
    scores = np.tile(np.arange(1, 5), (len(x), 1))
    profiles = ActionabilityProfiles(loan_context.world.roles.actionable, scores, 4,
                                     np.ones((len(x), 4)))
    a, b = policy.recommend(x, profiles, ids), again.recommend(x, profiles, ids)
    assert np.array_equal(a.intervened, b.intervened)
    assert np.allclose(np.nan_to_num(a.values), np.nan_to_num(b.values))


def test_training_is_deterministic_for_a_seed(loan_context):
    config = ICARMAConfig(epochs=2, val_every=1, patience=0)
    a = ICARMA(config, seeds=[3], progress=False).fit(loan_context)
    b = ICARMA(config, seeds=[3], progress=False).fit(loan_context)
    c = ICARMA(config, seeds=[4], progress=False).fit(loan_context)
    assert a.model_hashes()["icarma_seed3"] == b.model_hashes()["icarma_seed3"]
    assert a.model_hashes()["icarma_seed3"] != c.model_hashes()["icarma_seed4"]


def test_several_seeds_deploy_best_on_validation(loan_context):
    config = ICARMAConfig(epochs=2, val_every=1, patience=0)
    policy = ICARMA(config, seeds=[0, 1], progress=False).fit(loan_context)
    checks = [m["deployed_check"] for m in policy.runs_]
    best = policy.runs_[best_check(checks)]["state_dict_sha256"]
    assert policy.model_hashes()["icarma_deployed"] == best
    assert len(policy.model_hashes()) == 3


def test_best_check_prefers_validity_then_the_objective():
    checks = [{"valid": 0.90, "primary": 0.1}, {"valid": 0.99, "primary": 2.0},
              {"valid": 0.988, "primary": 1.0}]
    assert best_check(checks) == 2  # within 0.005 of the best validity, cheaper
    assert best_check(checks[:2]) == 1


def _multipliers(context, margin, epochs=2):
    # a negative margin is no document value; set past validation for this diagnostic
    # CARMA's literal rule: every row feeds the unbounded multiplier
    config = ICARMAConfig(epochs=epochs, val_every=1, patience=0, validity="multiplier",
                          infeasible="keep").model_copy(update={"margin": margin})
    _, meta = train_icarma(context, config, seed=0)
    return [h["multiplier"] for h in meta["history"]], meta


def test_multiplier_grows_while_validity_is_violated(loan_context):
    # a margin above 1 can never be met (2p - 1 <= 1): the hinge is positive at every step
    mus, meta = _multipliers(loan_context, margin=1.5)
    steps = -(-meta["n_train_rejected"] // 128)
    assert mus[0] >= 0.5 * steps and mus[1] > mus[0] + 0.5 * steps


def test_multiplier_stays_put_once_validity_holds(loan_context):
    # a margin below -1 is met by every counterfactual: the hinge is zero, so is the multiplier
    mus, _ = _multipliers(loan_context, margin=-1.5)
    assert mus == [0.0, 0.0]


def test_penalty_option_keeps_the_fixed_weight(loan_context):
    config = ICARMAConfig(epochs=1, val_every=1, patience=0, validity="penalty")
    policy = ICARMA(config, seeds=[0], progress=False).fit(loan_context)
    assert policy.meta_["config"]["validity"] == "penalty"


def test_spec_picks_paper_defaults_and_refuses_unknown_keys():
    assert entries("policy")["icarma"] is ICARMAParams
    rank = validate_data({"kind": "icarma"}, ICARMAParams, "s.yaml").training_config()
    assert (rank.batch_size, rank.epochs, rank.lr, rank.margin, rank.tau) == (
        128, 450, 0.005, 0.013, 0.36)
    assert (rank.cost_weight, rank.plausibility_weight, rank.feasibility_weight,
            rank.kl_weight) == (1.1, 0.225, 0.1, 1.5)
    score = validate_data({"kind": "icarma", "preferences": "likert", "epochs": 10},
                          ICARMAParams, "s.yaml").training_config()
    assert (score.epochs, score.lr, score.margin, score.tau) == (10, 0.001, 0.004, 0.49)
    with pytest.raises(DocumentError) as err:
        validate_data({"kind": "icarma", "epoch": 3}, ICARMAParams, "s.yaml")
    assert "epoch: unknown key" in str(err.value)
    # the cost profile is the population's, not iCARMA's
    with pytest.raises(DocumentError, match="alpha: iCARMA is trained for the cost profile"):
        validate_data({"kind": "icarma", "alpha": 1.0}, ICARMAParams, "s.yaml")


def test_trains_through_a_learned_flow(loan_context):
    """The do-operator may be a learned causal flow; the hard guarantee still holds."""
    from simstudy.world.flow import FlowConfig, fit_causal_flow

    data = loan_context.data
    flow, _ = fit_causal_flow(data.roles, data.x_train, data.x_val,
                              FlowConfig(epochs=2, patience=0), seed=0)
    context = RecourseContext(flow, loan_context.model, data, seed=0)
    policy = ICARMA(ICARMAConfig(epochs=2, val_every=1, patience=0), progress=False).fit(context)
    x = rejected(loan_context)[:100]
    ids = np.arange(len(x))
    scores, levels = RankingSampler().sample(data.roles.actionable,
                                             entity_uniforms(1, "p", ids, 2))
    profiles = ActionabilityProfiles(data.roles.actionable, scores, levels,
                                     CostProfile(shape="linear").weights(scores, levels))
    result = evaluate_recourse(flow, loan_context.model, x, policy.recommend(x, profiles, ids),
                               profiles, loan_context.feature_range)
    assert result["violation"].sum() == 0
    assert np.isfinite(result["logp_cf"][result["found"]]).all()


def test_relaxed_training_counterfactual_equals_the_hard_one(loan_context, trained):
    """The straight-through relaxation changes gradients only, never the forward pass."""
    from simstudy.policies.icarma import Objective as _Objective

    policy, _, _ = trained
    config = policy.config_
    x = torch.as_tensor(rejected(loan_context)[:200])
    act, w = sample_training_profiles(len(x), 4, config, torch.Generator().manual_seed(2))
    objective = _Objective(policy.networks_, loan_context, config)
    out = objective(x, loan_context.world.log_prob(x), act, w, torch.Generator().manual_seed(3))
    hard_cf = loan_context.world.counterfactual(x, out["hard"], out["values"])
    assert torch.allclose(out["x_cf"], hard_cf, atol=1e-9)
    assert out["hard"].any()


def test_latent_action_is_the_hard_intervention_on_its_values(loan_context):
    """CARMA's latent shift, deployed as do(X_I := x_cf_I), gives the same counterfactual and
    never touches a feature the person cannot act on."""
    config = ICARMAConfig(epochs=2, val_every=1, patience=0, action_space="latent")
    policy = ICARMA(config, seeds=[0], progress=False).fit(loan_context)
    x = rejected(loan_context)[:200]
    ids = np.arange(len(x))
    features = loan_context.world.roles.actionable
    scores, levels = RankingSampler().sample(features, entity_uniforms(2, "p", ids, 2))
    profiles = ActionabilityProfiles(features, scores, levels,
                                     CostProfile(shape="linear").weights(scores, levels))
    rec = policy.recommend(x, profiles, ids)
    result = evaluate_recourse(loan_context.world, loan_context.model, x, rec, profiles,
                               loan_context.feature_range)
    assert result["violation"].sum() == 0
    # every actionable feature acted on: the shift's counterfactual is the hard intervention's
    nets = policy.networks_
    xt = torch.as_tensor(x)
    act = torch.as_tensor(profiles.actionable)
    with torch.no_grad():
        h = nets.encode(xt, act, torch.as_tensor(profiles.weights))
        shifted = nets.latent_actions(h, xt, act, loan_context.world, policy.noise_std_)
        intervened = torch.zeros_like(xt, dtype=torch.bool)
        intervened[:, nets.act_index] = act
        hard = loan_context.world.counterfactual(xt, intervened, shifted)
    assert not torch.equal(shifted, xt)
    torch.testing.assert_close(hard, shifted, atol=1e-9, rtol=0)


def test_trained_model_lands_in_the_run_cache(loan_context, tmp_path):
    from dataclasses import replace as with_field

    context = with_field(loan_context, cache=ModelCache(tmp_path / "run-cache"))
    policy = ICARMA(ICARMAConfig(epochs=1, val_every=1), progress=False).fit(context)
    stored = sorted(p.name for p in (tmp_path / "run-cache").glob("icarma-*.json"))
    assert stored == [policy.meta_["cache_key"] + ".json"] and not policy.meta_["cached"]
    again = ICARMA(ICARMAConfig(epochs=1, val_every=1), progress=False).fit(context)
    assert again.meta_["cached"] and again.model_hashes() == policy.model_hashes()
    assert not ICARMA(ICARMAConfig(epochs=1, val_every=1), cache=False,
                      progress=False).fit(context).meta_["cached"]


def test_entry_refuses_bad_hyperparameters():
    for bad in ({"epochs": 0}, {"lr": -1.0}, {"prior_high": 2.0}, {"cost_shapes": ["cubic"]},
                {"mask_hidden": [0]}):
        with pytest.raises(ValueError):
            ICARMAParams.model_validate({"kind": "icarma", **bad})


# -- validity rules ------------------------------------------------------------------------

def test_per_person_multipliers_follow_their_own_constraint():
    from simstudy.policies.icarma import ValidityRule

    rule = ValidityRule("per_person", n=6, step=0.5, damping=0.0)
    assert rule.multipliers.shape == (6,)
    g = torch.tensor([0.4, -0.3, 1.0], dtype=torch.float64)
    idx = torch.tensor([5, 0, 2])
    rule.update(g, idx, epoch=0)
    # only the batch's people move, each by step * own hinge; a valid person stays at zero
    assert rule.multipliers.tolist() == [0.0, 0.0, 0.5, 0.0, 0.0, 0.2]
    mu = rule.multipliers[idx]
    expected = (mu * torch.relu(g)).mean()
    torch.testing.assert_close(rule.term(g, idx), expected)


def test_augmented_lagrangian_lowers_the_multiplier_of_a_person_with_slack():
    from simstudy.policies.icarma import ValidityRule

    rule = ValidityRule("augmented", n=2, step=1.0)
    rule.update(torch.tensor([0.8, 0.3], dtype=torch.float64), torch.tensor([0, 1]), epoch=0)
    rule.update(torch.tensor([-0.5, -0.9], dtype=torch.float64), torch.tensor([0, 1]), epoch=1)
    torch.testing.assert_close(rule.multipliers,
                               torch.tensor([0.3, 0.0], dtype=torch.float64))
    # the PHR term: (max(0, mu + rho g)^2 - mu^2) / (2 rho), here for mu = 0.3, g = 0.2
    term = rule.term(torch.tensor([0.2], dtype=torch.float64), torch.tensor([0]))
    assert abs(float(term) - (0.5**2 - 0.3**2) / 2) < 1e-12


def _history(context, **overrides):
    # every row feeds the multiplier unless a test screens (infeasible: keep, CARMA's)
    config = ICARMAConfig(val_every=1, patience=0, mask_hidden=(8,), action_hidden=(8,),
                          **{"infeasible": "keep", **overrides})
    policy = ICARMA(config, seeds=[0], cache=False, progress=False).fit(context)
    return policy.meta_["history"], policy


def test_checkpoint_best_deploys_the_best_of_all_checks(loan_context):
    from simstudy.policies.icarma import best_check

    history, best = _history(loan_context, epochs=6, infeasible="threshold", checkpoint="best")
    last_history, last = _history(loan_context, epochs=6, infeasible="threshold")
    assert history == last_history  # one training; only which check is deployed differs
    chosen = best_check(history)  # over every check, not a running pairwise comparison
    assert best.meta_["deployed_check"] == history[chosen] != history[-1]
    assert last.meta_["deployed_check"] == history[-1]
    # the deployed networks are that check's, not the last epoch's
    assert best.meta_["state_dict_sha256"] != last.meta_["state_dict_sha256"]
    assert best.config_.to_json()["checkpoint"] == "best"  # it keys its own cache entry
    assert "checkpoint" not in last.config_.to_json()


def test_bounded_multiplier_stops_at_its_bound(loan_context):
    # a margin above 1 can never be met: CARMA's multiplier would grow by >= 0.5 a step
    history, _ = _history(loan_context, epochs=2, margin=1.5, validity="bounded",
                          multiplier_bound=3.0)
    assert [h["multiplier"] for h in history] == [3.0, 3.0]


def test_warmup_keeps_the_multiplier_at_zero_until_it_ends(loan_context):
    history, _ = _history(loan_context, epochs=3, margin=1.5, validity="warmup",
                          warmup_epochs=2)
    mus = [h["multiplier"] for h in history]
    assert mus[:2] == [0.0, 0.0] and mus[2] > 10


def test_per_person_training_keeps_one_multiplier_per_training_person(loan_context):
    history, policy = _history(loan_context, epochs=1, margin=1.5, validity="per_person")
    final = policy.meta_["final_multipliers"]
    # every person was violated in their one batch: each multiplier is their own hinge
    # (between 0.5 and 2.5 for a margin of 1.5), none is zero
    assert final["multiplier_active"] == 1.0
    assert 0.5 <= final["multiplier"] <= final["multiplier_max"] <= 2.5


def test_latent_action_clamp_is_honoured_by_value(loan_context):
    from simstudy.policies.icarma import latent_step_bounds, noise_scale

    lo, hi = latent_step_bounds(loan_context)
    u = loan_context.world.abduct(loan_context.data.x_train.to(torch.float64))
    z = (u - u.mean(0)) / u.std(0)
    assert (lo, hi) == (math.floor(float(z.min())), math.ceil(float(z.max())))
    x = torch.as_tensor(rejected(loan_context)[:50])
    act = torch.ones(len(x), 4, dtype=torch.bool)
    sigma = noise_scale(loan_context)

    def forced_steps(**overrides):
        """The latent steps (in noise spreads) when the network asks for a huge one."""
        nets = _history(loan_context, epochs=1, **overrides)[1].networks_
        with torch.no_grad():
            nets.action_net[-1].bias.fill_(1e3)
            h = nets.encode(x, act, torch.ones(len(x), 4))
            x_cf = nets.latent_actions(h, x, act, loan_context.world, sigma)
        world = loan_context.world
        shift = (world.abduct(x_cf) - world.abduct(x))[:, nets.act_index]
        return nets, shift / sigma[nets.act_index]

    nets, steps = forced_steps(action_clamp=True)
    assert nets.step_bounds.tolist() == [lo, hi]
    torch.testing.assert_close(steps, torch.full_like(steps, hi), atol=1e-6, rtol=1e-6)
    _, free = forced_steps(action_clamp=False)
    assert (free > 10 * hi).all()


def test_straight_through_clamp_keeps_the_step_and_passes_the_gradient():
    from simstudy.policies.icarma import ICARMANetworks

    def shift_and_gradient(clamp_gradient: str):
        config = ICARMAConfig(mask_hidden=(4,), action_hidden=(4,), alpha=3.0,
                              clamp_gradient=clamp_gradient)
        nets = ICARMANetworks(("a", "b"), ("b",), torch.zeros(2), torch.ones(2), torch.ones(2),
                              config, step_bounds=(-1.0, 1.0))
        with torch.no_grad():
            nets.action_net[-1].bias.fill_(5.0)  # far past the bound
        x = torch.zeros(3, 2, dtype=torch.float64)
        act = torch.ones(3, 1, dtype=torch.bool)
        h = nets.encode(x, act, torch.ones(3, 1))
        shift = nets.latent_shift(h, x, act, torch.full((2,), 2.0, dtype=torch.float64))
        shift.sum().backward()
        return shift.detach(), nets.action_net[-1].bias.grad.clone()

    blocked, no_gradient = shift_and_gradient("zero")
    passed, gradient = shift_and_gradient("straight_through")
    # the same clamped step (bound 1 times the noise's spread 2) either way
    assert torch.equal(blocked, passed) and blocked[:, 1].tolist() == [2.0, 2.0, 2.0]
    assert no_gradient.abs().sum() == 0 and gradient.abs().sum() > 0


def test_weight_decay_reaches_the_optimizer(loan_context):
    _, with_decay = _history(loan_context, epochs=1, weight_decay=0.5)
    _, without = _history(loan_context, epochs=1, weight_decay=0.0)
    w1 = torch.cat([p.flatten() for p in with_decay.networks_.parameters()])
    w0 = torch.cat([p.flatten() for p in without.networks_.parameters()])
    assert w1.norm() < w0.norm()  # a strong decay shrinks the weights


def test_several_seeds_deploy_the_argmax_of_validation_validity(loan_context):
    config = ICARMAConfig(epochs=1, val_every=1, patience=0, mask_hidden=(8,),
                          action_hidden=(8,))
    policy = ICARMA(config, seeds=[0, 1, 2], cache=False, progress=False).fit(loan_context)
    valid = [m["deployed_check"]["valid"] for m in policy.runs_]
    primary = [m["deployed_check"]["primary"] for m in policy.runs_]
    near = [i for i, v in enumerate(valid) if v >= max(valid) - 0.005]
    chosen = min(near, key=lambda i: primary[i])
    assert policy.meta_["seed"] == [0, 1, 2][chosen]
    assert policy.meta_["deployed_check"]["valid"] >= max(valid) - 0.005


class _AgeGate(torch.nn.Module):
    """A decision model no action can satisfy for the oldest third: the loan model's logit
    minus 1000 above the training age's 2/3 quantile (age is immutable)."""

    def __init__(self, base, age_column: int, threshold: float) -> None:
        super().__init__()
        self.base, self.age_column, self.threshold = base, age_column, threshold

    def forward(self, x):
        gate = (x[:, self.age_column] > self.threshold).to(torch.float32)
        return self.base(x) - 1000.0 * gate

    @torch.no_grad()
    def approves(self, x):
        return self(x) >= 0


@pytest.fixture(scope="module")
def gated_context(loan_context):
    world, data = loan_context.world, loan_context.data
    col = world.roles.names.index("age")
    threshold = float(torch.quantile(data.x_train[:, col].double(), 2 / 3))
    return RecourseContext(world, _AgeGate(loan_context.model, col, threshold), data, seed=0)


#: epochs of the growth check; the bound the screened multiplier stays under after them, and
#: the most it may still grow over the last four epochs (CARMA's rule: about 6 an epoch)
GROWTH_EPOCHS, SCREENED_BOUND, SCREENED_CREEP = 12, 20.0, 2.0


def test_infeasible_rows_drive_the_literal_multiplier_and_screening_stops_it(gated_context):
    # a third of the training people cannot be made valid by any action: under CARMA's rule
    # each adds a hinge of about 1 to every batch, so the multiplier grows by >= 0.3 a step
    steps = -(-int((~gated_context.model.approves(gated_context.data.x_train)).sum()) // 128)
    literal, _ = _history(gated_context, epochs=GROWTH_EPOCHS, validity="multiplier",
                          infeasible="keep", action_clamp=True)
    screened, policy = _history(gated_context, epochs=GROWTH_EPOCHS, validity="multiplier",
                                infeasible="reachable_mask", action_clamp=True)
    mus = [h["multiplier"] for h in literal]
    assert mus[-1] >= 0.3 * steps * GROWTH_EPOCHS
    assert all(b > a for a, b in zip(mus, mus[1:], strict=False))
    assert mus[-1] - mus[-5] > 4 * 0.3 * steps  # and keeps growing
    kept = [h["multiplier"] for h in screened]
    assert kept[-1] < SCREENED_BOUND and kept[-1] - kept[-5] < SCREENED_CREEP
    assert policy.meta_["excluded_share"] > 0.3


def test_reachable_probability_finds_the_gate(gated_context):
    from simstudy.policies.icarma import latent_step_bounds, noise_scale
    from simstudy.policies.icarma.feasibility import reachable_probability

    context = gated_context
    x = context.data.x_train[:200].double()
    idx = torch.tensor([context.world.roles.names.index(f) for f in context.world.roles.actionable])
    best = reachable_probability(context.world, context.model, context.world.abduct(x), idx,
                                 noise_scale(context), latent_step_bounds(context))
    gated = x[:, context.model.age_column] > context.model.threshold
    assert (best[gated] < 0.5).all()  # nobody above the gate can be approved
    assert (best[~gated, -1] >= best[~gated, 0]).all()  # acting never lowers the best


def test_clamp_from_the_actionable_features(loan_context):
    from simstudy.policies.icarma import latent_step_bounds

    lo_all, hi_all = latent_step_bounds(loan_context)
    lo_act, hi_act = latent_step_bounds(loan_context, "actionable")
    assert lo_all <= lo_act < 0 < hi_act <= hi_all


def test_threshold_screen_keeps_rows_out_of_the_update_only(gated_context):
    history, policy = _history(gated_context, epochs=2, infeasible="threshold")
    assert policy.meta_["excluded_share"] > 0.3
    assert policy.meta_["config"]["infeasible"] == "threshold"


def test_the_reachable_screen_needs_the_latent_action():
    from pydantic import ValidationError

    ICARMAConfig(infeasible="reachable_mask")  # the latent action: accepted
    for rule in ("reachable", "reachable_mask"):
        with pytest.raises(ValidationError, match="needs action_space: latent"):
            ICARMAConfig(infeasible=rule, action_space="value")
    with pytest.raises(ValidationError, match="train_shortened .* needs action_space: latent"):
        ICARMAConfig(train_shortened=True, action_space="value", infeasible="threshold")


def test_shortened_actions_stop_at_the_first_approved_point(loan_context, trained):
    _, cache, config = trained
    # the network's mask, so both read the same features (the exact choice judges each
    # subset's action as deployed, shortened or not)
    policy = ICARMA(config, cache=cache, progress=False, shorten="none",
                    mask_choice="network").fit(loan_context)
    short = ICARMA(config, cache=cache, progress=False, shorten="boundary",
                   shorten_steps=20, mask_choice="network").fit(loan_context)
    # deployment alone: the same trained networks, taken from the cache
    assert short.meta_["state_dict_sha256"] == policy.meta_["state_dict_sha256"]
    assert short.meta_["cached"]
    x = rejected(loan_context)
    ids = np.arange(len(x))
    features = loan_context.world.roles.actionable
    scores = np.tile(np.arange(1, 5), (len(x), 1))
    profiles = ActionabilityProfiles(features, scores, 4, np.ones_like(scores, dtype=float))
    full, cut = policy.recommend(x, profiles, ids), short.recommend(x, profiles, ids)
    np.testing.assert_array_equal(full.intervened, cut.intervened)
    world, model = loan_context.world, loan_context.model
    xt = torch.as_tensor(x, dtype=torch.float64)
    acted = torch.from_numpy(full.intervened)
    base = np.where(full.intervened, x, 0.0)
    step_full = np.where(full.intervened, full.values - x, 0.0)
    step_cut = np.where(full.intervened, cut.values - x, 0.0)
    # every shortened action is the full one times one t of the grid, the same for each feature
    t = np.round(20 * np.abs(step_cut).sum(1) / np.maximum(np.abs(step_full).sum(1), 1e-12)) / 20
    np.testing.assert_allclose(step_cut, t[:, None] * step_full, atol=1e-9)
    with torch.no_grad():
        approved_full = model.approves(world.counterfactual(
            xt, acted, torch.from_numpy(np.where(full.intervened, full.values, x)))).numpy().ravel()
        approved_cut = model.approves(world.counterfactual(
            xt, acted, torch.from_numpy(np.where(full.intervened, cut.values, x)))).numpy().ravel()
        before = np.where(full.intervened, base + (t - 1 / 20)[:, None] * step_full, x)
        approved_before = model.approves(world.counterfactual(
            xt, acted, torch.from_numpy(before))).numpy().ravel()
    shortened = t < 1
    assert shortened.mean() > 0.5  # the trained network goes past the boundary for most
    assert approved_cut[shortened].all()  # a shortened action is still approved ...
    # ... and the grid point before it is not
    later = shortened & (t > 1 / 20)
    assert later.any() and not approved_before[later].any()
    assert approved_cut[approved_full].all()  # shortening never loses validity


def test_mask_noise_is_recorded_only_when_set():
    # models stored before the field existed keep their cache keys
    assert "mask_noise" not in ICARMAConfig().to_json()
    assert ICARMAConfig(mask_noise="none").to_json()["mask_noise"] == "none"


def test_shortened_training_judges_the_action_where_validity_is_first_met(loan_context, trained):
    from simstudy.policies.icarma import Objective

    policy, _, config = trained
    config = policy.config_.model_copy(update={"train_shortened": True})
    x = torch.as_tensor(rejected(loan_context)[:200])
    act, w = sample_training_profiles(len(x), 4, config, torch.Generator().manual_seed(2))
    nets, world, model = policy.networks_, loan_context.world, loan_context.model
    objective = Objective(nets, loan_context, config)
    out = objective(x, world.log_prob(x), act, w, None)
    # the same action unshortened, from the same deterministic mask
    h = nets.encode(x, act, w)
    mask = ((nets.mask_logits(h) > 0) & act).to(torch.float64)
    u = world.abduct(x)
    with torch.no_grad():
        shift = nets.latent_shift(h, x, mask, objective.noise_std)
        share = objective._boundary_share(u, shift)

        def g(s):  # the validity constraint at share s of the action
            p = torch.sigmoid(model(world.predict(u + s * shift)).to(torch.float64)).ravel()
            return config.margin - (2 * p - 1)

    met = (g(torch.ones_like(share)) <= 0) & mask.bool().any(dim=1)
    shortened = met & (share.ravel() < 1)
    assert shortened.float().mean() > 0.5
    # the training counterfactual is the shortened one, where the constraint is met (the
    # straight-through mask equals the hard one up to float32 rounding) ...
    torch.testing.assert_close(out["x_cf"], world.predict(u + share * shift), rtol=1e-5,
                               atol=1e-5)
    assert (g(share)[met] <= 0).all()
    # ... and not met one bisection step (2^-8 of the action) earlier
    assert (g(share - 2.0**-8)[shortened] > 0).all()


def test_training_without_mask_noise_uses_the_deployment_mask(loan_context, monkeypatch):
    # with mask_noise: none the Gumbel stream is never drawn, and the networks differ
    from simstudy.policies.icarma import objective

    draws = []
    real = objective._sample_mask

    def counting(logits, actionable, tau, generator):
        draws.append(generator is not None)
        return real(logits, actionable, tau, generator)

    monkeypatch.setattr(objective, "_sample_mask", counting)
    small = {"epochs": 1, "mask_hidden": (8,), "action_hidden": (8,)}
    noisy, _ = train_icarma(loan_context, ICARMAConfig(**small), seed=0)
    assert any(draws)
    draws.clear()
    plain, _ = train_icarma(loan_context, ICARMAConfig(**small, mask_noise="none"), seed=0)
    assert draws and not any(draws)
    assert any(not torch.equal(a, b) for a, b in zip(noisy.state_dict().values(),
                                                     plain.state_dict().values(), strict=True))


def _ranked_profiles(context, n, seed, shape="linear", n_actionable=None):
    features = context.world.roles.actionable
    scores, levels = RankingSampler(n_actionable=n_actionable).sample(
        features, entity_uniforms(seed, "profiles", np.arange(n), 2))
    return ActionabilityProfiles(features, scores, levels,
                                 CostProfile(shape=shape).weights(scores, levels))


def _subset_score(policy, context, x, profiles, rec):
    """``(approved, score)`` of deployed recourses, the score recomputed from the objective's
    formula: cost (Eq. 10) + plausibility hinge + feasibility - kl_weight * log prior(S)."""
    cfg, nets = policy.config_, policy.networks_
    idx = nets.act_index.numpy()
    act, w = (t.numpy() for t in nets.profile_columns(profiles))
    acted = rec.intervened[:, idx]
    values = np.where(rec.intervened, rec.values, x)
    with torch.no_grad():
        xt = torch.as_tensor(x, dtype=torch.float64)
        cf = context.world.counterfactual(xt, torch.from_numpy(rec.intervened),
                                          torch.from_numpy(values))
        approved = context.model.approves(cf).numpy().ravel()
        gap = (context.world.log_prob(xt) - context.world.log_prob(cf)).numpy()
    cf = cf.numpy()
    scale = np.sqrt(nets.std.double().numpy()[idx] * context.feature_range[idx])
    delta = (cf[:, idx] - x[:, idx]) / scale
    cost = (np.where(acted, np.where(act, w, 0.0), 0.0) * delta**2).sum(1) / len(idx)
    feas = ((np.maximum(context.lower - cf, 0) + np.maximum(cf - context.upper, 0))
            / context.feature_range).sum(1)
    rel = np.clip(np.where(act, (w - 1) / cfg.alpha, 0.0), 0, 1)
    rho = cfg.prior_high - (cfg.prior_high - cfg.prior_low) * rel
    log_prior = np.where(act, np.where(acted, np.log(rho), np.log1p(-rho)), 0.0).sum(1)
    score = (cfg.cost_weight * cost + cfg.plausibility_weight * np.maximum(gap, 0)
             + cfg.feasibility_weight * feas - cfg.kl_weight * log_prior)
    return approved & acted.any(1), score


def test_exact_mask_choice_deploys_the_best_approved_subset(loan_context, trained, monkeypatch):
    """``mask_choice: exact``: every subset of each person's actionable features given to the
    action network one by one (the network's mask forced), its action scored as training
    judges it (unshortened) by the objective's formula recomputed here; the exact choice is the
    approved subset of lowest score, and acts only where allowed."""
    _, cache, config = trained
    # unshortened, so the recommendations are the actions the choice judges
    exact = ICARMA(config, cache=cache, progress=False, mask_choice="exact",
                   shorten="none").fit(loan_context)
    network = ICARMA(config, cache=cache, progress=False, mask_choice="network",
                     shorten="none").fit(loan_context)
    x = rejected(loan_context)[:60]
    ids = np.arange(len(x))
    profiles = _ranked_profiles(loan_context, len(x), 11)
    chosen = exact.recommend(x, profiles, ids)
    nets = network.networks_
    k = len(nets.actionable)
    best, best_acted = np.full(len(x), np.inf), np.zeros((len(x), k), dtype=bool)
    for bits in range(1, 2**k):
        subset = np.array([(bits >> j) & 1 for j in range(k)], dtype=bool)
        forced = torch.tensor(np.where(subset, 20.0, -20.0), dtype=torch.float32)
        monkeypatch.setattr(nets, "mask_logits", lambda h, f=forced: f.expand(len(h), k))
        rec = network.recommend(x, profiles, ids)
        ok, score = _subset_score(network, loan_context, x, profiles, rec)
        ok &= ~(subset & ~profiles.actionable).any(1)  # a subset the person cannot act on
        better = ok & (score < best)
        best[better] = score[better]
        best_acted[better] = rec.intervened[:, nets.act_index.numpy()][better]
    monkeypatch.undo()
    found = np.isfinite(best)
    assert found.mean() > 0.8
    np.testing.assert_array_equal(chosen.intervened[found][:, nets.act_index.numpy()],
                                  best_acted[found])
    assert not (chosen.intervened[:, nets.act_index.numpy()] & ~profiles.actionable).any()
    # the network's own mask is one of the subsets: the exact choice never scores worse, and
    # is approved wherever the network's is
    ok_n, score_n = _subset_score(network, loan_context, x, profiles,
                                  network.recommend(x, profiles, ids))
    ok_e, score_e = _subset_score(exact, loan_context, x, profiles, chosen)
    assert ok_e[ok_n].all() and (score_e[ok_n] <= score_n[ok_n] + 1e-9).all()


def test_exact_mask_choice_is_the_same_whatever_the_batch(loan_context, trained):
    _, cache, config = trained
    policy = ICARMA(config, cache=cache, progress=False, mask_choice="exact").fit(loan_context)
    x = rejected(loan_context)[:40]
    profiles = _ranked_profiles(loan_context, len(x), 12)
    ids = np.arange(len(x))
    whole = policy.recommend(x, profiles, ids)
    first = policy.recommend(x[:17], profiles.subset(slice(0, 17)), ids[:17])
    rest = policy.recommend(x[17:], profiles.subset(slice(17, None)), ids[17:])
    np.testing.assert_array_equal(whole.intervened,
                                  np.concatenate([first.intervened, rest.intervened]))
    np.testing.assert_array_equal(whole.values, np.concatenate([first.values, rest.values]))


def test_exact_mask_choice_deploys_its_choice_shortened(loan_context, trained):
    """The chosen mask's action is read as any other: with ``shorten: boundary`` the same
    features, the action shortened to its first approved point."""
    _, cache, config = trained
    x = rejected(loan_context)[:60]
    ids = np.arange(len(x))
    profiles = _ranked_profiles(loan_context, len(x), 13)
    full = ICARMA(config, cache=cache, progress=False, mask_choice="exact",
                  shorten="none").fit(loan_context).recommend(x, profiles, ids)
    cut = ICARMA(config, cache=cache, progress=False, mask_choice="exact",
                 shorten="boundary").fit(loan_context).recommend(x, profiles, ids)
    np.testing.assert_array_equal(full.intervened, cut.intervened)
    step_full = np.where(full.intervened, full.values - x, 0.0)
    step_cut = np.where(full.intervened, cut.values - x, 0.0)
    assert (np.abs(step_cut) <= np.abs(step_full) + 1e-12).all()
    assert (np.abs(step_cut).sum(1) < np.abs(step_full).sum(1) - 1e-9).mean() > 0.5
