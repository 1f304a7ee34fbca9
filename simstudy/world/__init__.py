"""Causal worlds: known structural causal models, learned causal flows, the decision model."""

from .base import CausalWorld, FeatureRoles, causal_order_check
from .data import WorldData, sample_world_data, tensor_hash
from .flow import CausalFlow, FlowConfig, cached_causal_flow, fit_causal_flow
from .learned import CausalFlowWorldSpec, load_csv_data
from .loan import LOAN_ROLES, LoanSCM, loan_label, loan_label_probability
from .specs import LoanWorldSpec

__all__ = [
    "CausalWorld",
    "FeatureRoles",
    "causal_order_check",
    "WorldData",
    "sample_world_data",
    "tensor_hash",
    "CausalFlow",
    "FlowConfig",
    "fit_causal_flow",
    "cached_causal_flow",
    "CausalFlowWorldSpec",
    "load_csv_data",
    "LOAN_ROLES",
    "LoanSCM",
    "loan_label",
    "loan_label_probability",
    "LoanWorldSpec",
]
