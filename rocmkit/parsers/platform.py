"""WSL2 and the libraries it depends on: pure functions of what the kernel and the loader's
folders show. Never raise on odd input (a garbage /proc/version is "no sign", not an error).

WSL2's kernel names itself in its release and in /proc/version ("6.6.87.2-microsoft-standard-WSL2",
as github.com/andweng/wsl-rocm records on a Strix Halo); WSL sets ``WSL_DISTRO_NAME`` in its shells,
and maps the Windows GPU driver at /dev/dxg, the node AMD's WSL runtime reaches the GPU through
(ROCm/librocdxg; docs/platforms.md has every source).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# The distribution's own ROCm runtime (Ubuntu 24.04's ROCm 5.7 packages libhsa-runtime64-1 and
# libhsakmt1) on the loader's default path: found before /opt/rocm's, it has no DXG support and
# fails with "ROCk module is NOT loaded" on WSL (github.com/andweng/wsl-rocm, step 2).
SHADOWING_PREFIXES = ("libhsa-runtime64.so", "libhsakmt.so")
DISTRO_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
ROCDXG_PREFIX = "librocdxg.so"

_WSL_RELEASE = re.compile(r"microsoft-standard-wsl2|-wsl2\b", re.IGNORECASE)
_WSL1 = re.compile(r"-microsoft\b", re.IGNORECASE)


def wsl_signs(
    release: str | None, proc_version: str | None, environ: Mapping[str, str], dxg: bool
) -> tuple[str, ...]:
    """What says this is WSL2, best first; empty when nothing does.

    A WSL1 kernel ("4.4.0-19041-Microsoft") is not WSL2: it has no /dev/dxg and no GPU, so it
    counts only through the other signs.
    """
    signs: list[str] = []
    rel = (release or "").strip()[:200]
    ver = (proc_version or "")[:2000]
    if _WSL_RELEASE.search(rel):
        signs.append("kernel release")
    if _WSL_RELEASE.search(ver) or ("microsoft" in ver.lower() and "wsl2" in ver.lower()):
        signs.append("/proc/version")
    if dxg:
        signs.append("/dev/dxg")
    if (environ.get("WSL_DISTRO_NAME") or "").strip() and (signs or not _WSL1.search(rel)):
        signs.append("WSL_DISTRO_NAME")
    return tuple(signs)


def shadowing(listings: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """Full paths of the distribution's HSA runtime libraries in ``listings`` (folder -> names)."""
    found: list[str] = []
    for folder in DISTRO_LIB_DIRS:
        for name in sorted(listings.get(folder) or ()):
            if name.startswith(SHADOWING_PREFIXES):
                found.append(f"{folder}/{name}")
    return tuple(found)


def rocdxg(listings: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """Where AMD's WSL bridge (librocdxg.so*) is, among ``listings``."""
    return tuple(
        f"{folder}/{name}"
        for folder, names in sorted(listings.items())
        for name in sorted(names or ())
        if name.startswith(ROCDXG_PREFIX)
    )


_DRIVER = re.compile(r"^\d{2}\.\d{1,2}\.\d{1,2}$")


def adrenalin_version(text: str | None) -> str | None:
    """An Adrenalin release as AMD names it ("26.2.2"); None for anything else."""
    value = (text or "").strip()
    return value if _DRIVER.match(value) else None


_REG_VALUE = re.compile(r"^\s*RadeonSoftwareVersion\s+REG_SZ\s+(\S+)\s*$", re.MULTILINE)


def radeon_software_version(reg_output: str | None) -> str | None:
    """The Adrenalin release from ``reg.exe query HKLM\\SOFTWARE\\AMD\\CN /v RadeonSoftwareVersion``
    ("    RadeonSoftwareVersion    REG_SZ    25.5.1", CRLF lines); None for anything else."""
    m = _REG_VALUE.search((reg_output or "")[:10000].replace("\r", ""))
    return adrenalin_version(m.group(1)) if m else None


def dxg_detection_on(value: str | None) -> bool:
    """ROCr reads HSA_ENABLE_DXG_DETECTION as on for ``1`` (rocm-systems#7320's table)."""
    return (value or "").strip() == "1"
