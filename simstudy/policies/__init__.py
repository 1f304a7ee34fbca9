"""Recourse policies behind one small batched interface."""

from .base import RecourseContext, RecoursePolicy
from .icarma import ICARMA, ICARMAConfig, ICARMASpec
from .oracle import CausalOracle, OracleSpec

__all__ = ["RecourseContext", "RecoursePolicy", "CausalOracle", "OracleSpec", "ICARMA",
           "ICARMAConfig", "ICARMASpec"]
