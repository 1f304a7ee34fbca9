"""Lazy package exports: a package names what it offers, and each name's module is imported
on first use.

``simstudy --help`` and ``simstudy validate`` must start in well under a second, so the
packages whose modules import torch, pandas or scipy (``world``, ``policies``, ``people``,
``sim``) load those modules only when one of their names is used (PEP 562). Written here in a
few lines rather than taken from a dependency: it is all the mechanism needs.

Example:
    >>> getattr_, dir_ = lazy_exports("json", {"JSONEncoder": "encoder"})
    >>> getattr_("JSONEncoder").__name__
    'JSONEncoder'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for ``package``.

    Args:
        package: the package's ``__name__``.
        exports: ``{name: submodule}``; ``name`` is read from ``package.submodule`` when first
            asked for.
    """

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
