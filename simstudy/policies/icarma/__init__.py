"""iCARMA: amortized individualized causal recourse (mask network + action network).

iCARMA ("From Universal to Individualized Actionability", 2026, Sec. 4.3 and App. B) extends
CARMA (Majumdar & Valera, FAccT 2024). A *mask network* gives, per globally actionable feature,
the logit of acting on it; an *action network* how much. Both see the applicant's individual
actionability and cost weights, so one trained model serves any profile. They are trained
jointly without supervision on the applicants the decision model rejects, with validity as a
constraint handled by CARMA's Lagrange multiplier (or another named rule, :mod:`.validity`).
Preference profiles (how many and which features, their ranks or Likert scores, the cost
profile) are drawn afresh at every epoch as data augmentation.

Rooms: :mod:`.config` (the hyperparameters, declared once), :mod:`.networks` (the networks and
their save/load), :mod:`.objective` (the loss of one batch, formulas in its docstring),
:mod:`.validity` (the validity rules), :mod:`.training` (validation and model selection),
:mod:`.shortening` (an action shortened to the decision boundary) and :mod:`.policy` (the
policy, its model cache and its scenario entry).

References:
    Majumdar & Valera, "CARMA: a practical framework to generate recommendations for causal
    algorithmic recourse at scale", FAccT 2024; code: github.com/ayanmaj92/carma-recourse.
    "From Universal to Individualized Actionability: Revisiting Personalization in Algorithmic
    Recourse", 2026, arXiv.

Example:
    >>> from simstudy.policies.icarma import ICARMAParams
    >>> ICARMAParams(kind="icarma").build().params.epochs
    450
"""

from ...core.lazy import lazy_exports

# the torch modules load on first use, so the torch-free entry (:mod:`.spec`) and the
# hyperparameters (:mod:`.config`) are read without them
_EXPORTS = {
    "ICARMAConfig": "config",
    "ICARMANetworks": "networks",
    "load_networks": "networks",
    "save_networks": "networks",
    "Objective": "objective",
    "noise_scale": "objective",
    "latent_step_bounds": "objective",
    "sample_training_profiles": "objective",
    "ICARMA": "policy",
    "first_approved": "shortening",
    "ICARMAParams": "spec",
    "best_check": "training",
    "train_icarma": "training",
    "world_fingerprint": "training",
    "VALIDITY_RULES": "validity",
    "ValidityRule": "validity",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
