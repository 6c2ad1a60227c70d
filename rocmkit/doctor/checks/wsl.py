"""Level-0 checks of ROCm on WSL2 (docs/platforms.md): the WSL runtime, DXG detection, the
shadowing libraries, the Windows driver, and the VM's memory against the GPU's. Static facts
from detection, so they run on a capture too; off WSL2 each is skipped. The facts they judge
by are in ``matrices/platforms.toml``.
"""

from __future__ import annotations

from rocmkit.doctor.checks import archs
from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.machine import Machine
from rocmkit.matrix.platforms import WslRelease, load_platforms

GIB = 1024**3
# GPU memory within 2 % of the VM's RAM (or above it) is the cap of ROCm/ROCm#6022, not chance.
CAP_FRACTION = 0.98
WSLCONFIG_FIX = (
    "raise `memory=` under `[wsl2]` in %UserProfile%\\.wslconfig on Windows (e.g. `memory=96GB`), "
    "then `wsl --shutdown` and start the distribution again"
)


def _not_wsl(m: Machine) -> CheckResult | None:
    if m.platform.wsl:
        return None
    return result(Status.SKIP, "not WSL2", not_applicable="not_wsl")


def _release(m: Machine) -> WslRelease | None:
    line = ".".join((m.rocm.version or "").split(".")[:2])
    return next((r for r in load_platforms().wsl_releases if r.rocm == line), None)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


@check(
    "env.wsl_runtime",
    level=0,
    description="WSL2: /dev/dxg is there and AMD's WSL runtime (librocdxg in /opt/rocm/lib) is installed (#32).",
)
def wsl_runtime(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _not_wsl(m)) is not None:
        return na
    pf = m.platform
    if pf.dxg is False:
        return result(
            Status.FAIL,
            "/dev/dxg does not exist: Windows exposes no GPU to this WSL2 distribution",
            "install AMD Software: Adrenalin Edition with WSL support on Windows, run `wsl --update`, then "
            "`wsl --shutdown`",
        )
    if not pf.librocdxg and any(g.visible for g in m.amd_gpus):
        return result(
            Status.WARN,
            "the GPU is reached without librocdxg: AMD's older WSL runtime (ROCm 6.x's WSL packages), which "
            "AMD no longer ships; ROCm 7.2 with librocdxg is the supported path",
            "install ROCm 7.2 from AMD's packages and build github.com/ROCm/librocdxg (docs/platforms.md)",
        )
    if not pf.librocdxg:
        return result(
            Status.FAIL,
            "AMD's WSL runtime bridge, librocdxg, is not in /opt/rocm/lib: ROCm cannot reach the GPU through /dev/dxg",
            "install ROCm 7.2 from AMD's packages, then build and install github.com/ROCm/librocdxg "
            "(`cmake .. -DWIN_SDK=...; make; sudo make install`) and run `sudo ldconfig`",
        )
    return result(Status.PASS, f"/dev/dxg and {pf.librocdxg[0]}", librocdxg=list(pf.librocdxg))


@check(
    "env.wsl_dxg_detection",
    level=0,
    description="WSL2: HSA_ENABLE_DXG_DETECTION=1 is set where the ROCm release needs it to find the GPU (#32).",
)
def wsl_dxg_detection(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _not_wsl(m)) is not None:
        return na
    value = m.platform.dxg_detection
    row = _release(m)
    needed = row.dxg_detection if row is not None else m.platform.gpus_need_dxg_detection
    if (value or "").strip() == "1":
        return result(Status.PASS, "HSA_ENABLE_DXG_DETECTION=1")
    if not needed:
        return result(
            Status.SKIP, f"ROCm {m.rocm.version or 'unknown'}: not known to need HSA_ENABLE_DXG_DETECTION"
        )
    shown = f"set to {value!r}" if value is not None else "not set"
    return result(
        Status.FAIL,
        f"HSA_ENABLE_DXG_DETECTION is {shown}: ROCm {m.rocm.version or '(this release)'} reaches the GPU "
        "through /dev/dxg only with it, so torch sees no GPU",
        "`export HSA_ENABLE_DXG_DETECTION=1` (add it to ~/.bashrc; `rocmkit install` puts it in the plan's env)",
    )


@check(
    "env.wsl_shadowing",
    level=0,
    description="WSL2: no distribution HSA runtime (libhsa-runtime64/libhsakmt) shadows /opt/rocm's (#33).",
)
def wsl_shadowing(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _not_wsl(m)) is not None:
        return na
    libs = m.platform.shadowing_libs
    if not libs:
        return result(Status.PASS, "no libhsa-runtime64/libhsakmt in the distribution's library folders")
    return result(
        Status.FAIL,
        f"{', '.join(libs)} is found before /opt/rocm's runtime; it has no WSL support and fails with "
        "'ROCk module is NOT loaded'",
        "`sudo apt remove libhsa-runtime64-1 libhsakmt1` (Ubuntu's ROCm 5.7 packages)",
        libs=list(libs),
    )


@check(
    "env.wsl_driver",
    level=0,
    description="WSL2: the Windows AMD driver (Adrenalin) is at least the minimum for the ROCm release.",
)
def wsl_driver(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _not_wsl(m)) is not None:
        return na
    row = _release(m) or load_platforms().wsl_releases[0]
    driver = m.platform.windows_driver
    if driver is None:
        return result(
            Status.SKIP,
            f"the Windows driver's version was not read (no reg.exe through WSL interop, or no AMD software in "
            f"the registry); ROCm {row.rocm} needs Adrenalin {row.adrenalin_min} or newer",
            "set ROCMKIT_WSL_DRIVER to the version AMD Software: Adrenalin Edition shows on Windows",
        )
    if _key(driver) >= _key(row.adrenalin_min):
        return result(Status.PASS, f"Adrenalin {driver} (ROCm {row.rocm} needs {row.adrenalin_min} or newer)")
    return result(
        Status.FAIL,
        f"Adrenalin {driver} is older than {row.adrenalin_min}, the minimum for ROCm {row.rocm} on WSL2",
        "update AMD Software: Adrenalin Edition on Windows (amd.com/support), then `wsl --shutdown`",
        driver=driver,
        minimum=row.adrenalin_min,
    )


@check(
    "env.wsl_memory",
    level=0,
    description="WSL2: an integrated GPU's memory is not capped at the WSL VM's RAM (#35).",
)
def wsl_memory(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _not_wsl(m)) is not None:
        return na
    vm = m.host.memory_bytes
    gpus = [g for g in m.amd_gpus if g.visible and g.memory_bytes]
    if not vm or not gpus:
        return result(Status.SKIP, "the VM's memory or the GPU's is unknown")
    # The cap is on shared (UMA) memory: an integrated GPU's; a discrete GPU has its own VRAM.
    capped = [
        g
        for g in gpus
        if archs.is_integrated(g) and g.memory_bytes and vm * CAP_FRACTION <= g.memory_bytes <= vm
    ]
    shown = ", ".join(f"GPU {g.index} {(g.memory_bytes or 0) / GIB:.1f} GiB" for g in gpus)
    if not capped:
        return result(Status.PASS, f"{shown}; VM {vm / GIB:.1f} GiB")
    return result(
        Status.WARN,
        f"{shown}: as much as the WSL VM's {vm / GIB:.1f} GiB of RAM, so the GPU's memory is likely capped "
        "at the VM's (librocdxg reports at most the VM's RAM)",
        WSLCONFIG_FIX,
        vm_bytes=vm,
    )
