"""What the fork server imported before forking this check, and how long each took.

A check such as ``torch.import`` reports the import time; in a fork the module is
already loaded, so it reports the worker's measurement instead of ~0 s.
"""

from __future__ import annotations

from rocmkit.proc.prefork_worker import IMPORT_SECONDS


def import_seconds(module: str, measured: float) -> float:
    """The worker's import time for ``module`` where it preloaded it, else ``measured``."""
    return IMPORT_SECONDS.get(module, measured)
