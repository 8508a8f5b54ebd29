"""A package's public names imported on first use (PEP 562 module ``__getattr__``).

Why: the front doors import only what they run. The span processor pulls in the SDK's
processor machinery, the service gRPC and uvicorn, the judge asyncio and sqlite3; a CLI
run, a scoring process or an application that never asks for one of those should not pay
for importing it. Imports no package module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``homes`` is read from its
    submodule (``homes[name]``, relative to ``package``) on first access and then kept in
    the package's namespace, so later reads do not come back here; any other name raises
    the ``AttributeError`` Python's own lookup would."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
