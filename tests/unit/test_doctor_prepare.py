"""doctor/prepare.py: what a doctor run reads before its first check."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any, cast

from rocmkit.doctor.prepare import HEALTH_FRESH_S, health_stale


def _checks(*names: str) -> Any:
    return cast(Any, [SimpleNamespace(name=n) for n in names])


def test_hardware_health_is_read_again_only_for_hw_checks_on_a_stale_live_machine() -> None:
    old = time.time() - 10 * HEALTH_FRESH_S
    assert health_stale(None, _checks("env.x", "hw.ecc"), old)
    assert health_stale(None, _checks("hw.ecc"), None)  # never detected: read
    assert not health_stale(None, _checks("env.x"), old)  # no hw.* check asks
    assert not health_stale("capture-folder", _checks("hw.ecc"), old)  # a capture is what it is
    assert not health_stale(None, _checks("hw.ecc"), time.time())  # just detected
