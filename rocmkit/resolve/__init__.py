"""Pick the torch/triton builds, index and environment for a machine: ``resolve(machine, constraints) -> Plan``."""

from __future__ import annotations

from rocmkit.resolve.constraints import CHANNELS, Constraints
from rocmkit.resolve.core import INDEX_BASE_ENV, resolve

__all__ = ["CHANNELS", "INDEX_BASE_ENV", "Constraints", "resolve"]
