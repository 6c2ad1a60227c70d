"""libdrm's complaint when its GPU-name table is missing (docs/failure-modes.md #22).

libdrm prints ``/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory``
(pytorch#132987; the path varies: ``/usr/share/libdrm/amdgpu.ids``) on stderr of
any program that asks it for a marketing name: amd-smi, rocminfo, torch. It is
cosmetic (names fall back to "AMD Radeon Graphics"); compute is unaffected.
"""

from __future__ import annotations

import re

_MISSING_IDS = re.compile(r"(?P<path>\S*amdgpu\.ids): No such file or directory")


def missing_amdgpu_ids(text: str) -> str | None:
    """The amdgpu.ids path libdrm could not open, when ``text`` says so; else None."""
    m = _MISSING_IDS.search(text)
    return m.group("path") if m else None
