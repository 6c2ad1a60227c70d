"""Unit tests are pure: any real subprocess call fails loudly (as cibuildwheel does)."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"unit tests must not start processes: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
