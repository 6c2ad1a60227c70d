"""Pick the torch/triton builds, index and environment for a machine: ``resolve(machine, constraints) -> Plan``.

The names are loaded on first use: ``rocmkit resolve`` imports this package on its hot
path, and the resolver (with packaging and the matrix model) is needed only when a plan
is made, not when a cached one is printed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocmkit.resolve.constraints import CHANNELS, Constraints
    from rocmkit.resolve.core import resolve

__all__ = ["CHANNELS", "Constraints", "resolve"]

_WHERE = {
    "CHANNELS": "rocmkit.resolve.constraints",
    "Constraints": "rocmkit.resolve.constraints",
    "resolve": "rocmkit.resolve.core",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups skip this function
    return value
