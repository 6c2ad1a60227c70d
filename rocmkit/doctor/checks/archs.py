"""GPU architecture facts the checks share: HSA override fit, iGPUs, driver windows.

The facts themselves (which arch is integrated, which override a consumer GPU
uses) come from ``matrices/gfx.toml`` through :func:`rocmkit.matrix.load_matrix`;
this module only applies them, with the naming rules of :mod:`rocmkit.arch`.
A broken data file is an error, as everywhere; an arch the matrix does not list falls back
to what detection reported and the name's prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rocmkit.arch import base_arch, family, override_to_gfx
from rocmkit.machine import Gpu

if TYPE_CHECKING:
    from rocmkit.matrix import Matrix
    from rocmkit.matrix.model import GfxArch


def matrix() -> Matrix:
    """The loaded matrix. A broken shipped data file is an error here too (the check that
    meets it reports it, and the tests fail on it), never a quiet fallback."""
    from rocmkit.matrix import load_matrix

    return load_matrix()


def _matrix_arch(arch: str) -> GfxArch | None:
    """The matrix's row for ``arch`` (None: an arch it does not list)."""
    return matrix().gfx_arch(arch)


def recommended_override(arch: str | None) -> str | None:
    """The HSA_OVERRIDE_GFX_VERSION the matrix records for ``arch`` (None: none needed or known)."""
    a = base_arch(arch)
    if a is None:
        return None
    info = _matrix_arch(a)
    return str(info.hsa_override) if info is not None and info.hsa_override else None


def is_integrated(gpu: Gpu) -> bool | None:
    """Detection's answer, else the matrix's (by PCI id, then by arch)."""
    if gpu.integrated is not None:
        return gpu.integrated
    if gpu.pci_device_id:
        dev = matrix().pci_device(gpu.pci_device_id.lower())
        if dev is not None and dev.integrated is not None:
            return bool(dev.integrated)
    info = _matrix_arch(base_arch(gpu.arch) or "")
    return None if info is None or info.integrated is None else bool(info.integrated)


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
    target = override_to_gfx(value)
    if target is None:
        return OverrideFit(arch=a, verdict="unknown", usual=usual)
    if target == a:
        return OverrideFit(arch=a, verdict="same", usual=usual)
    if usual is not None and override_to_gfx(usual) == target:
        return OverrideFit(arch=a, verdict="recommended", usual=usual)
    mine, theirs = _matrix_arch(a), _matrix_arch(target)
    if mine is not None and theirs is not None and mine.family and theirs.family:
        gen_mine, gen_theirs = mine.generation, theirs.generation
        same = mine.family == theirs.family and (gen_mine is None or gen_theirs is None or gen_mine == gen_theirs)
        return OverrideFit(arch=a, verdict="family" if same else "cross", usual=usual)
    # An arch the matrix does not list: the name prefix, except for gfx9, where one prefix
    # spans generations (gfx906 GCN5, gfx90a CDNA2) and nothing can be assumed.
    if family(a) == family(target) and not a.startswith("gfx9"):
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
    rel = matrix().rocm_release_for_dkms(driver_version)
    if rel is None:
        return None
    return DriverWindow(
        driver=driver_version,
        shipped_with=str(rel.version),
        userspace_min=rel.userspace_min,
        userspace_max=rel.userspace_max,
    )
