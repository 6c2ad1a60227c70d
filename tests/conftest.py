"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI explores the same examples every run (a landing must not hinge on a random draw);
# local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
CAPTURES = DATA / "captures"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Keep caches, pip/uv config and the like out of the developer's home.
    cache = tmp_path_factory.getbasetemp() / "rocmkit-cache"
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(cache))
    for var in (
        "HSA_OVERRIDE_GFX_VERSION",
        "HIP_VISIBLE_DEVICES",
        "ROCR_VISIBLE_DEVICES",
        "CUDA_VISIBLE_DEVICES",
    ):
        monkeypatch.delenv(var, raising=False)
    for var in list(os.environ):
        if var.startswith("ROCMKIT_") and var != "ROCMKIT_CACHE_DIR":
            monkeypatch.delenv(var, raising=False)
    # resolve/install ask the live index what it serves; tests use the packaged data
    # unless they serve an index themselves (and delete this).
    monkeypatch.setenv("ROCMKIT_OFFLINE", "1")


@pytest.fixture
def captures_dir() -> Path:
    return CAPTURES
