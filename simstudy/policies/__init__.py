"""Recourse policies behind one small batched interface."""

from .base import RecourseContext, RecoursePolicy
from .oracle import CausalOracle, OracleSpec

__all__ = ["RecourseContext", "RecoursePolicy", "CausalOracle", "OracleSpec"]
