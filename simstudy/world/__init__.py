"""Causal worlds: known structural causal models, learned causal flows, the decision model.

The scenario entries (:mod:`simstudy.world.specs`, torch-free) are declared as kinds in
:mod:`simstudy.world.kinds`; the worlds themselves, which import torch, load when first used.
"""

from ..core.lazy import lazy_exports

_EXPORTS = {
    "CausalWorld": "base",
    "FeatureRoles": "base",
    "causal_order_check": "base",
    "WorldData": "data",
    "sample_world_data": "data",
    "tensor_hash": "data",
    "CausalFlow": "flow",
    "FlowConfig": "config",
    "DecisionConfig": "config",
    "fit_causal_flow": "flow",
    "cached_causal_flow": "flow",
    "CausalFlowWorldSpec": "specs",
    "WorldParams": "specs",
    "LoanWorldSpec": "specs",
    "load_csv_data": "learned",
    "LOAN_ROLES": "loan",
    "LoanSCM": "loan",
    "loan_label": "loan",
    "loan_label_probability": "loan",
    "AdditiveNoiseSCM": "additive",
    "SCMTable": "additive",
    "KNOWN_TABLES": "known",
    "known_world": "known",
    "KNOWN_ROLES": "known_specs",
    "KNOWN_WORLDS": "known_specs",
    "CodedFlow": "coded",
    "GermanCreditWorldSpec": "german_credit",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
