"""Test-only: stands in for a torch whose import initialised CUDA, which the fork server must refuse."""

from __future__ import annotations

import sys
import types

_torch = types.ModuleType("torch")
_torch.cuda = types.SimpleNamespace(is_initialized=lambda: True)  # type: ignore[attr-defined]
sys.modules["torch"] = _torch
