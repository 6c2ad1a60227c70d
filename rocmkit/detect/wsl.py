"""WSL2's problems, which need the merged view: bare-metal advice about /dev/kfd replaced by
WSL's (there is no /dev/kfd on WSL; the GPU is reached through /dev/dxg), and WSL's own
failures, each with its fix (sources in docs/platforms.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from rocmkit.machine import Platform, Problem, RocmInfo

WSL_GPU_HINT = (
    "on WSL2 the GPU is reached through /dev/dxg, not /dev/kfd: install AMD Software: Adrenalin Edition "
    "with WSL support on Windows, run `wsl --update`, then `wsl --shutdown`; with ROCm before 7.13 also "
    "`export HSA_ENABLE_DXG_DETECTION=1` (docs/platforms.md)"
)
SHADOW_FIX = "sudo apt remove libhsa-runtime64-1 libhsakmt1"


def _kfd_advice(p: Problem) -> bool:
    return p.source == "/dev/kfd" or "/dev/kfd" in (p.hint or "") or "render,video" in (p.hint or "")


def wsl_problems(
    platform: Platform, problems: Sequence[Problem], *, has_amd: bool, rocm: RocmInfo
) -> list[Problem]:
    """``problems`` with WSL's advice in place of the bare-metal one, then WSL's own."""
    if not platform.wsl:
        return list(problems)
    out: list[Problem] = []
    for p in problems:
        if p.source == "/dev/kfd":
            continue  # no /dev/kfd is how WSL2 is, not a fault
        out.append(dataclasses.replace(p, hint=WSL_GPU_HINT) if _kfd_advice(p) else p)
    if platform.dxg is False:
        out.append(
            Problem(
                source="/dev/dxg",
                message="this is WSL2 but /dev/dxg does not exist: Windows exposes no GPU to this distribution",
                hint="update WSL (`wsl --update`; WSL1 has no GPU: `wsl --set-version <distro> 2`) and install "
                "a Windows GPU driver with WSL support, then `wsl --shutdown`",
                severity="error",
            )
        )
    rocm_here = bool(rocm.installs) or rocm.version is not None
    if platform.shadowing_libs and rocm_here:
        out.append(
            Problem(
                source="loader",
                message="the distribution's HSA runtime ("
                + ", ".join(platform.shadowing_libs[:4])
                + ") is found before /opt/rocm's; it has no WSL support and fails with "
                "'ROCk module is NOT loaded'",
                hint=SHADOW_FIX,
                severity="error",
            )
        )
    if platform.gpus_need_dxg_detection and (platform.dxg_detection or "").strip() != "1":
        out.append(
            Problem(
                source="rocminfo",
                message="the AMD GPU is listed only with HSA_ENABLE_DXG_DETECTION=1, which is not set here",
                hint="export HSA_ENABLE_DXG_DETECTION=1 (add it to ~/.bashrc): ROCm before 7.13 reaches the "
                "GPU through /dev/dxg only when asked; PyTorch needs it too",
                severity="warning",
            )
        )
    if platform.dxg and rocm_here and not has_amd and not platform.librocdxg:
        out.append(
            Problem(
                source="librocdxg",
                message="ROCm is installed but AMD's WSL bridge (librocdxg) is not in /opt/rocm/lib",
                hint="build and install ROCm/librocdxg as AMD's WSL guide says (it needs the Windows SDK "
                "headers), then `sudo ldconfig`",
                severity="warning",
            )
        )
    return out
