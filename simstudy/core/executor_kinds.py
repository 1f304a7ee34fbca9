"""The executor kinds, each one declaration: its parameters model (torch-free) and its runtime
(:func:`~simstudy.core.executors.local_executor`, :func:`~simstudy.core.executors.ray_executor`),
imported when an executor is first built.

Named by the entry-point group ``simstudy.kinds`` (``pyproject.toml``), as a plugin's kinds are.

Example:
    >>> RayExecutorParams(workers=2).address is None
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from .documents import StrictModel
from .registry import lazy, register

__all__ = ["LocalExecutorParams", "RayExecutorParams"]


class LocalExecutorParams(StrictModel):
    """This process (one worker) or a local process pool of ``workers`` (default: all cores)."""

    kind: Literal["local"] = "local"
    workers: int | None = Field(None, ge=1)


class RayExecutorParams(StrictModel):
    """A Ray cluster at ``address`` (``None``: a private local instance of ``workers`` CPUs)."""

    kind: Literal["ray"] = "ray"
    workers: int | None = Field(None, ge=1)
    address: str | None = None


def _local() -> Callable:
    from .executors import local_executor
    return local_executor


def _ray() -> Callable:
    from .executors import ray_executor
    return ray_executor


register("executor", LocalExecutorParams, lazy(_local))
register("executor", RayExecutorParams, lazy(_ray))
