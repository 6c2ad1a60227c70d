"""GPU architecture facts the checks share: HSA overrides, iGPUs, arch names.

The facts themselves (which arch is integrated, which override a consumer GPU
uses) come from ``matrices/gfx.toml`` through :func:`rocmkit.matrix.load_matrix`;
this module only applies them. Without the matrix it falls back to what
detection reported and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from rocmkit.machine import Gpu

_OVERRIDE_RE = re.compile(r"^\s*(\d+)\.(\d+)\.(\d+)\s*$")


def matrix() -> Any | None:
    """The loaded matrix, or None when it cannot be had (a broken data file is
    reported by `rocmkit matrix check`, not by every doctor check)."""
    try:
        from rocmkit.matrix import load_matrix
    except ImportError:
        return None
    from rocmkit.errors import RocmkitError

    try:
        return load_matrix()
    except RocmkitError:
        return None


def base_arch(arch: str | None) -> str | None:
    """``gfx90a:sramecc+:xnack-`` -> ``gfx90a`` (rocminfo and torch add feature flags)."""
    if not arch:
        return None
    return arch.split(":", 1)[0].strip().lower() or None


def override_arch(value: str) -> str | None:
    """``HSA_OVERRIDE_GFX_VERSION`` -> the gfx target it makes the runtime report:
    ``10.3.0`` -> ``gfx1030``, ``9.0.10`` -> ``gfx90a`` (the stepping is hex)."""
    m = _OVERRIDE_RE.match(value)
    if not m:
        return None
    major, minor, step = (int(x) for x in m.groups())
    if step > 15:
        return None
    return f"gfx{major}{minor}{step:x}"


def arch_family(arch: str) -> str:
    """The ISA family an override may stay inside: ``gfx1031`` -> ``gfx103``."""
    return arch[:-1]


def _matrix_arch(arch: str) -> Any | None:
    m = matrix()
    if m is None:
        return None
    try:
        return m.gfx_arch(arch)
    except Exception:  # a partial matrix must not break a check
        return None


def recommended_override(arch: str | None) -> str | None:
    """The HSA_OVERRIDE_GFX_VERSION the matrix records for ``arch`` (None: none needed or known)."""
    a = base_arch(arch)
    if a is None:
        return None
    info = _matrix_arch(a)
    value = getattr(info, "hsa_override", None)
    return str(value) if value else None


def is_integrated(gpu: Gpu) -> bool | None:
    """Detection's answer, else the matrix's (by PCI id, then by arch)."""
    if gpu.integrated is not None:
        return gpu.integrated
    m = matrix()
    if m is None:
        return None
    if gpu.pci_device_id:
        try:
            dev = m.pci_device(gpu.pci_device_id.lower())
        except Exception:
            dev = None
        if dev is not None and getattr(dev, "integrated", None) is not None:
            return bool(dev.integrated)
    info = _matrix_arch(base_arch(gpu.arch) or "")
    flag = getattr(info, "integrated", None)
    return None if flag is None else bool(flag)


Verdict = Literal["same", "recommended", "family", "cross", "unknown"]


@dataclass(frozen=True, kw_only=True)
class OverrideFit:
    arch: str
    verdict: Verdict
    usual: str | None  # the matrix's value for this arch


def override_fit(arch: str, value: str) -> OverrideFit:
    """How an override fits one GPU: ``same`` (a no-op), ``recommended`` (the matrix's
    value), ``family`` (another arch of the same family and generation: may work),
    ``cross`` (another family: the loader rejects the code or it computes garbage),
    ``unknown`` (the value does not parse)."""
    a = base_arch(arch) or arch
    usual = recommended_override(a)
    target = override_arch(value)
    if target is None:
        return OverrideFit(arch=a, verdict="unknown", usual=usual)
    if target == a:
        return OverrideFit(arch=a, verdict="same", usual=usual)
    if usual is not None and override_arch(usual) == target:
        return OverrideFit(arch=a, verdict="recommended", usual=usual)
    mine, theirs = _matrix_arch(a), _matrix_arch(target)
    fam_mine, fam_theirs = getattr(mine, "family", None), getattr(theirs, "family", None)
    gen_mine, gen_theirs = getattr(mine, "generation", None), getattr(theirs, "generation", None)
    if fam_mine and fam_theirs:
        same = fam_mine == fam_theirs and (gen_mine is None or gen_theirs is None or gen_mine == gen_theirs)
        return OverrideFit(arch=a, verdict="family" if same else "cross", usual=usual)
    # Without the matrix: the name prefix, except for gfx9, where one prefix spans
    # generations (gfx906 GCN5, gfx90a CDNA2) and nothing can be assumed.
    if arch_family(a) == arch_family(target) and not a.startswith("gfx9"):
        return OverrideFit(arch=a, verdict="family", usual=usual)
    return OverrideFit(arch=a, verdict="cross", usual=usual)


@dataclass(frozen=True, kw_only=True)
class DriverWindow:
    """The ROCm user-space releases an amdgpu kernel driver works with (matrices/rocm.toml)."""

    driver: str  # the amdgpu-dkms version, "6.8.5"
    shipped_with: str  # the ROCm release that ships it, "6.2"
    userspace_min: str | None
    userspace_max: str | None

    def contains(self, userspace: str) -> bool | None:
        """Whether ROCm ``userspace`` ("6.2.4", or torch's HIP "6.2.41134-...") fits; None if unknown."""
        from packaging.version import Version

        try:
            mm = Version(".".join(userspace.split("-", 1)[0].split(".")[:2]))
            lo = Version(self.userspace_min) if self.userspace_min else None
            hi = Version(self.userspace_max) if self.userspace_max else None
        except ValueError:  # InvalidVersion, or more digits than int() takes
            return None
        if lo is None and hi is None:
            return None
        return (lo is None or mm >= lo) and (hi is None or mm <= hi)

    def describe(self) -> str:
        span = f"{self.userspace_min or '?'} to {self.userspace_max or '?'}"
        return f"amdgpu {self.driver} (ROCm {self.shipped_with}'s driver) supports ROCm user space {span}"


def driver_window(driver_version: str | None) -> DriverWindow | None:
    """The window of an amdgpu-dkms driver, or None (in-tree kernel driver, not in the matrix)."""
    if not driver_version:
        return None
    m = matrix()
    find = getattr(m, "rocm_release_for_dkms", None)
    if find is None:
        return None
    rel = find(driver_version)
    if rel is None:
        return None
    return DriverWindow(
        driver=driver_version,
        shipped_with=str(rel.version),
        userspace_min=getattr(rel, "userspace_min", None),
        userspace_max=getattr(rel, "userspace_max", None),
    )
