"""The amdgpu kernel driver's window: which ROCm user space it works with (``matrices/rocm.toml``).

A ROCm wheel bundles its ROCm user space but not the kernel driver. AMD documents, per
driver release, the user-space releases it supports (the "User and AMD GPU Driver (amdgpu)
support matrix"; from ROCm 6.4 up to a year apart, before that +/- 2 releases). The node's
driver is recognised by its module version (``/sys/module/amdgpu/version``, rocminfo's
"ROCk module version"): AMD's amdgpu-dkms of each ROCm release is listed in rocm.toml.

An amdgpu that is no DKMS release is the kernel's own. AMD builds each amdgpu-dkms from
one upstream kernel's driver (its version is that kernel's: 6.14.14 for ROCm 7.0, 6.16.x
for 7.1 and 7.2) and supports the kernel's own driver on the kernels it lists for a
release, so such a driver is judged by the kernel version: kernel 6.16 carries at least
the driver code of the DKMS built from 6.16, and gets that release's window. The rule is
rocmkit's reading of AMD's numbering, so the plan says it relies on it.
"""

from __future__ import annotations

import re

from rocmkit.machine import Machine
from rocmkit.matrix import Matrix, RocmRelease
from rocmkit.matrix.model import release_key
from rocmkit.resolve.explain import Notes

_KERNEL = re.compile(r"^(\d+)\.(\d+)")


def driver_release(machine: Machine, m: Matrix) -> tuple[RocmRelease | None, str]:
    """The ROCm release whose driver the node runs, and how it was told ("" when unknown)."""
    if machine.platform.wsl:
        return None, ""  # WSL2 has no amdgpu: the Windows driver is judged in resolve/platform.py
    drv = machine.rocm.driver_version
    if drv:
        rel = m.rocm_release_for_dkms(drv)
        if rel is not None:
            return rel, f"amdgpu-dkms {drv}"
    kernel = machine.host.kernel or ""
    if drv and "-" not in drv and not kernel.startswith(drv):
        # A plain version that is no DKMS release rocmkit lists, nor the running kernel's.
        return None, ""
    text = kernel if (not drv or kernel.startswith(drv)) and kernel else (drv or "")
    match = _KERNEL.match(text)
    if not match or machine.rocm.driver_loaded is False:
        return None, ""
    rel = release_for_kernel(m, (int(match.group(1)), int(match.group(2))))
    return rel, (f"the kernel's own amdgpu (kernel {text})" if rel else "")


def release_for_kernel(m: Matrix, kernel: tuple[int, int]) -> RocmRelease | None:
    """The newest release whose amdgpu-dkms was built from a kernel no newer than ``kernel``."""
    best: RocmRelease | None = None
    for rel in m.rocm_releases:
        if rel.userspace_min is None or rel.userspace_max is None:
            continue
        bases = [release_key(d)[:2] for d in rel.amdgpu_dkms]
        if bases and min(bases) <= kernel:
            best = rel
    return best


def in_window(rel: RocmRelease, rocm: str) -> bool | None:
    """Whether the wheel's ROCm ``rocm`` is inside the window of ``rel``'s driver (None: no window)."""
    lo, hi = rel.userspace_min, rel.userspace_max
    if lo is None or hi is None:
        return None
    key = release_key(rocm)[:2]
    return release_key(lo) <= key <= release_key(hi)


def window_filter(machine: Machine, m: Matrix) -> tuple[RocmRelease | None, str]:
    """For resolve's preference: the node's driver release, when it has a window."""
    rel, how = driver_release(machine, m)
    if rel is None or rel.userspace_min is None or rel.userspace_max is None:
        return None, ""
    return rel, how


def check_driver(machine: Machine, m: Matrix, notes: Notes, rocm: str | None) -> None:
    """Wheels bundle ROCm user space but not the kernel driver: check the driver's window."""
    if machine.rocm.driver_loaded is False:
        notes.warn(
            "the amdgpu kernel driver is not loaded; no ROCm wheel can reach the GPU until it is "
            "(load it with `modprobe amdgpu`, or install amdgpu-dkms)"
        )
    if not rocm:
        return
    drv = machine.rocm.driver_version
    rel, how = driver_release(machine, m)
    if rel is None:
        if drv:
            notes.why(
                f"amdgpu kernel driver {drv} is not an amdgpu-dkms release listed in matrices/rocm.toml "
                "and its kernel is not known; its window was not checked"
            )
        return
    inbox = how.startswith("the kernel's")
    if inbox:
        dkms = ", ".join(rel.amdgpu_dkms)
        notes.why(
            f"{how} is judged by the kernel version: at least the driver of ROCm {rel.version} "
            f"(whose amdgpu-dkms {dkms} is built from that kernel line; rocmkit's reading of AMD's driver "
            "numbering, which no AMD page states for the kernel's own driver)"
        )
        notes.relies_on(rel, "rocm.toml", f"ROCm {rel.version}'s amdgpu-dkms is {dkms}", "amdgpu_dkms")
    else:
        notes.relies_on(rel, "rocm.toml", f"{how} ships with ROCm {rel.version}", "amdgpu_dkms")
    lo, hi = rel.userspace_min, rel.userspace_max
    inside = in_window(rel, rocm)
    if inside is None:
        notes.why(f"{how} is ROCm {rel.version}'s driver; no user-space window is recorded for it")
        return
    notes.relies_on(
        rel, "rocm.toml", f"ROCm {rel.version}'s driver works with user space {lo}-{hi}", "userspace_min"
    )
    if inside:
        notes.why(f"kernel driver: {how} (ROCm {rel.version}) works with ROCm {lo} to {hi}; the wheel's {rocm} is inside")
        return
    fits = [r for r in m.rocm_releases if r.amdgpu_dkms and in_window(r, rocm)]
    newest = f"ROCm {fits[-1].version}'s amdgpu-dkms ({fits[-1].amdgpu_dkms[-1]})" if fits else "a newer amdgpu-dkms"
    fix = f"install a newer kernel or {newest}" if inbox else f"install {newest}"
    notes.warn(
        f"kernel driver: {how} (ROCm {rel.version}'s) supports ROCm user space {lo} to {hi}, but the "
        f"wheel bundles ROCm {rocm}; {fix} (AMD's user/kernel-space support matrix), or pick --backend rocm{lo} to rocm{hi}"
    )
