"""Shared fixtures."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# CI explores the same examples every run (a landing must not hinge on a random draw);
# local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_configure(config: pytest.Config) -> None:
    # An xdist worker starts with SIGINT ignored (its controller handles Ctrl-C), and an ignored
    # signal stays ignored across exec: the rocmkit processes a test starts, and the test's own
    # Ctrl-C (interrupt_main), would not see the SIGINT they are about. Python's handler again.
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    # --dist loadfile (scripts/test.sh), longest file first: tests/support/xdist_schedule.py.
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.support.xdist_schedule import LongestFileFirst

    return LongestFileFirst(config, log)


REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
CAPTURES = DATA / "captures"


# Variables that would point rocmkit at another GPU, or at the developer's settings.
_HIDDEN = ("HSA_OVERRIDE_GFX_VERSION", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rocmkit's cache for this session (or this xdist worker): compiles done once are hits later."""
    return tmp_path_factory.getbasetemp() / "rocmkit-cache"


def isolated_environ(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """This environment as every test sees it; for session fixtures, set up before any test."""
    env = {
        k: v for k, v in os.environ.items() if k not in _HIDDEN and not k.startswith("ROCMKIT_")
    }
    env["ROCMKIT_CACHE_DIR"] = str(session_cache(tmp_path_factory))
    env["ROCMKIT_OFFLINE"] = "1"  # as _isolated_home: the live index check only where a test serves one
    return env


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Keep caches, pip/uv config and the like out of the developer's home.
    monkeypatch.setenv("ROCMKIT_CACHE_DIR", str(session_cache(tmp_path_factory)))
    for var in _HIDDEN:
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
