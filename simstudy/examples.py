"""Small worlds for docstring examples and tests.

Each function builds, in a second or so, one small ready-made setting that examples share: a
Loan world with a briefly trained decision model (:func:`small_context`), a few rejected
applicants with uniform actionability (:func:`rejected_applicants`), simulated people for them
(:func:`small_people`), a short event-world simulation (:func:`small_event_world`,
:func:`small_simulation`) and the inputs of a response model (:func:`response_inputs`).
Everything is seeded, so the same call gives the same world.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .core.rng import generator
from .people import People, PeopleSpec, ResponseInputs
from .policies import GrowingSpheres, RecourseContext
from .primitives import ScaledSpace
from .primitives.profiles import ActionabilityProfiles
from .sim import SimulationResult, SimulationSpec, fitted, simulate
from .world import LoanSCM, LoanWorldSpec, WorldData, sample_world_data
from .world.decision import DecisionConfig, DecisionModel, train_decision_model

__all__ = ["small_context", "rejected_applicants", "small_people", "small_event_world",
           "small_simulation", "response_inputs", "RECOVERY_TRUTH", "RECOVERY_TRUE_VALUES"]

#: A rating model with known parameters (the published calibration's order of magnitude, a
#: blocked penalty and correlated person effects): parameter-recovery checks simulate pilots
#: from it and calibrate them back (``tests/test_calibration.py``, ``benchmarks/calibrate.py``).
RECOVERY_TRUTH = {
    "kind": "rating",
    "accept": {"intercept": 4.2, "effect": {"kind": "linear", "slope": 0.05},
               "sd_intercept": 1.0, "sd_slope": 0.0, "sd_noise": 1.05},
    "act": {"intercept": 4.1, "effect": {"kind": "linear", "slope": 0.25},
            "sd_intercept": 0.9, "sd_slope": 0.0, "sd_noise": 1.0, "blocked_penalty": 1.5},
    "intercept_correlation": 0.5}


def _estimated(entry: dict, prefix: str = "") -> dict[str, float]:
    # the calibrated parameters by dotted name; random slopes are not estimated
    out = {}
    for key, value in entry.items():
        if isinstance(value, dict):
            out.update(_estimated(value, f"{prefix}{key}."))
        elif key not in ("kind", "sd_slope"):
            out[prefix + key] = value
    return out


#: :data:`RECOVERY_TRUTH`'s parameters that calibration estimates, by dotted name.
RECOVERY_TRUE_VALUES: dict[str, float] = _estimated(RECOVERY_TRUTH)


def small_context(n_samples: int = 400, epochs: int = 5, seed: int = 0) -> RecourseContext:
    """A Loan world, ``n_samples`` rows sampled from it and a decision model trained briefly.

    Example:
        >>> from simstudy.examples import small_context
        >>> context = small_context()
        >>> context.feature_names[:3], len(context.data.x_test) > 0
        (('gender', 'age', 'education'), True)
    """
    data = sample_world_data(LoanSCM(), n_samples, generator(seed, "example"))
    model = train_decision_model(data, DecisionConfig(epochs=epochs))
    return RecourseContext(LoanSCM(), model, data)


def rejected_applicants(context: RecourseContext, k: int = 3
                        ) -> tuple[np.ndarray, np.ndarray, ActionabilityProfiles]:
    """The first ``k`` rejected test rows: their ids, features and actionability profiles.

    Every person may act on every globally actionable feature, all at the same score and
    unit cost weight.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context
        >>> ids, x, profiles = rejected_applicants(small_context())
        >>> ids.shape, x.shape, profiles.scores.shape
        ((3,), (3, 7), (3, 4))
    """
    ids = np.flatnonzero(~context.model.approves(context.data.x_test).numpy())[:k]
    actionable = context.world.roles.actionable
    shape = (len(ids), len(actionable))
    profiles = ActionabilityProfiles(actionable, np.ones(shape, int), 1, np.ones(shape))
    return ids, context.data.x_test.numpy()[ids], profiles


def small_people(context: RecourseContext, ids: np.ndarray, x: np.ndarray,
                 profiles: ActionabilityProfiles) -> People:
    """Default simulated people (:class:`~simstudy.people.PeopleSpec`) for the given rows.

    Example:
        >>> from simstudy.examples import rejected_applicants, small_context, small_people
        >>> context = small_context()
        >>> people = small_people(context, *rejected_applicants(context))
        >>> len(people)
        3
    """
    roles = context.world.roles
    return People.from_spec(PeopleSpec(), x, ids, 0, context.feature_names,
                            roles.actionable, ScaledSpace.from_context(context),
                            reported=profiles, immutable=roles.immutable)


def small_event_world(n_samples: int = 400, epochs: int = 5, horizon_days: float = 10,
                      cohort: int = 20, seed: int = 0
                      ) -> tuple[SimulationSpec, LoanSCM, WorldData, DecisionModel, PeopleSpec]:
    """An event world: a cohort arriving at once, a Loan world, its model and plain people.

    Returns ``(spec, world, data, model, people)``, the arguments
    :func:`~simstudy.sim.simulate` takes besides the policy.

    Example:
        >>> from simstudy.examples import small_event_world
        >>> spec, world, data, model, people = small_event_world()
        >>> spec.horizon_days, spec.arrivals.size
        (10.0, 20)
    """
    world, data, _ = LoanWorldSpec(n_samples=n_samples).build(seed=seed)
    model = train_decision_model(data, DecisionConfig(epochs=epochs))
    spec = SimulationSpec(horizon_days=horizon_days,
                          arrivals={"kind": "cohort", "size": cohort})
    people = PeopleSpec.model_validate({"population": {"groups": {}}})
    return spec, world, data, model, people


def small_simulation(seed: int = 0, **world: float) -> SimulationResult:
    """One replication of :func:`small_event_world` (keywords passed on) under Growing Spheres.

    Example:
        >>> from simstudy.examples import small_simulation
        >>> result = small_simulation()
        >>> result.applicants["applicant"].nunique()
        20
    """
    spec, loan, data, model, people = small_event_world(**world)
    return simulate(spec, loan, data, model, fitted(GrowingSpheres), people, seed=seed)


def response_inputs(cost: Sequence[float] = (0.0, 0.5, 2.0),
                    sparsity: Sequence[int] = (0, 1, 3),
                    proximity_l1: Sequence[float] = (0.0, 0.2, 0.9)) -> ResponseInputs:
    """Response-model inputs of people with average dispositions (all person effects zero).

    The weighted and unweighted costs are the same.

    Example:
        >>> from simstudy.examples import response_inputs
        >>> inputs = response_inputs()
        >>> len(inputs), inputs.sparsity.tolist(), inputs.blocked is None
        (3, [0, 1, 3], True)
    """
    cost_array = np.asarray(cost, dtype=float)
    zero = np.zeros(len(cost_array))
    return ResponseInputs(cost=cost_array, cost_unweighted=cost_array,
                          sparsity=np.asarray(sparsity), proximity_l1=np.asarray(proximity_l1),
                          accept_effect=zero, act_effect=zero)
