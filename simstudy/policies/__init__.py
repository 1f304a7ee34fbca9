"""Recourse policies behind one small batched interface."""

from .base import RecourseContext, RecoursePolicy

__all__ = ["RecourseContext", "RecoursePolicy"]
