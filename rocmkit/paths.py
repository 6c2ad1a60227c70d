"""Where rocmkit's data and caches live."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def matrices_dir() -> Path:
    """The compatibility data: inside the package when installed from a wheel,
    at the repository root in a source checkout or an editable install."""
    override = os.environ.get("ROCMKIT_MATRICES_DIR")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent
    packaged = here / "matrices"
    if packaged.is_dir():
        return packaged
    return here.parent / "matrices"


def cache_dir() -> Path:
    """rocmkit's cache folder (compile caches, downloaded indexes). ROCMKIT_CACHE_DIR overrides."""
    override = os.environ.get("ROCMKIT_CACHE_DIR")
    if override:
        return Path(override)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("rocmkit"))
