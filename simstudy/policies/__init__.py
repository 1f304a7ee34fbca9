"""Recourse policies behind one small batched interface."""

from .base import RecourseContext, RecoursePolicy
from .icarma import ICARMA, ICARMAConfig, ICARMASpec

__all__ = ["RecourseContext", "RecoursePolicy", "ICARMA", "ICARMAConfig", "ICARMASpec"]
