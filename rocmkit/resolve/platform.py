"""What the platform adds to a plan: aarch64 (which builds exist for it) and WSL2 (what AMD
supports there), from ``matrices/platforms.toml`` (docs/platforms.md).

Three narrow hooks, so that the backend resolvers stay platform-blind:
:func:`prepare` runs before the backend is chosen (refuses ROCm on aarch64, pins the ROCm line
AMD supports on WSL2), :func:`cuda_build_exists` / :func:`cpu_build_exists` filter the variants
the CUDA and CPU resolvers consider, and :func:`finish` stamps the plan with its platform, the
environment and the warnings.
"""

from __future__ import annotations

import dataclasses

from rocmkit.errors import NoPlanError, rerun
from rocmkit.machine import Machine
from rocmkit.matrix.platforms import PlatformData, WslRelease, load_platforms
from rocmkit.plan import Backend, Plan
from rocmkit.resolve.constraints import AMD_CHANNELS, Constraints
from rocmkit.resolve.explain import Notes, short_source

X86 = ("x86_64", "amd64", None, "")
ARM = ("aarch64", "arm64")
DXG_VAR = "HSA_ENABLE_DXG_DETECTION"


def cpu_arch(machine: Machine) -> str:
    """``x86_64`` or ``aarch64`` (what wheels are tagged for); another machine name as it is."""
    arch = (machine.host.arch or "").lower()
    return "aarch64" if arch in ARM else "x86_64" if arch in X86 else arch


def platform_tag(machine: Machine) -> str | None:
    """The plan's ``platform``: None on x86_64 Linux (what every plan meant before), else
    ``linux-aarch64`` or ``wsl2-x86_64``."""
    arch = cpu_arch(machine)
    if machine.platform.wsl:
        return f"wsl2-{arch}"
    return None if arch == "x86_64" else f"linux-{arch}"


def _release_key(version: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in version.split("."):
        digits = "".join(c for c in part if c.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def _line(version: str | None) -> str | None:
    return ".".join(version.split(".")[:2]) if version else None


def _wsl_release(data: PlatformData, machine: Machine, cons: Constraints) -> WslRelease | None:
    wanted = _line(cons.rocm_version) if cons.rocm else _line(machine.rocm.version)
    return next((r for r in data.wsl_releases if r.rocm == wanted), None)


def prepare(machine: Machine, cons: Constraints, notes: Notes) -> Constraints:
    """Before the backend is chosen: refuse what the platform cannot have, pin what it needs."""
    arch = cpu_arch(machine)
    rocm_wanted = (
        not cons.cpu
        and not cons.cuda
        and (bool(cons.rocm) or cons.amd_channel or machine.backend_kind == "rocm")
    )
    if arch not in ("x86_64", "aarch64"):
        notes.warn(f"this host is {arch}; PyTorch publishes wheels for x86_64 and aarch64 Linux only")
        return cons
    if arch == "aarch64":
        if rocm_wanted:
            amd = [g for g in machine.amd_gpus if g.visible]
            what = (
                f"this aarch64 host has {len(amd)} AMD GPU(s)"
                if amd
                else "a ROCm build was asked for on aarch64"
            )
            raise NoPlanError(
                f"{what}: no ROCm build for aarch64 (PyTorch's and the jax ROCm plugins have x86_64 wheels only)",
                (rerun("--backend", "cpu") + "   # CPU aarch64 wheels", "rocmkit build   # torch for ROCm, from source"),
            )
        notes.why(
            "aarch64 host: only builds published for linux-aarch64 are considered (matrices/platforms.toml)"
        )
        return cons
    if not machine.platform.wsl or not rocm_wanted or cons.amd_channel:
        return cons
    data = load_platforms()
    row = _wsl_release(data, machine, cons)
    lines = ", ".join(f"{r.rocm}.x" for r in data.wsl_releases)
    installed = _line(machine.rocm.version)
    if row is None:
        have = (
            f"--backend {Backend.rocm_index(cons.rocm_version or '')}"
            if cons.rocm
            else f"ROCm {machine.rocm.version} is installed"
            if machine.rocm.version
            else "no ROCm is installed"
        )
        notes.warn(
            f"WSL2: {have}, but AMD supports ROCm on WSL2 with {lines} and librocdxg only (older releases "
            f"used AMD's retired WSL runtime packages); install ROCm {data.wsl_releases[0].rocm} and librocdxg"
        )
    if cons.rocm:
        return cons
    # torch uses /opt/rocm's runtime on WSL2 (install removes the wheel's own): the wheels of the
    # installed line, else of the newest line AMD supports there (install then asks for it).
    line = installed or data.wsl_releases[0].rocm
    notes.why(
        f"WSL2: ROCm {line} wheels: torch uses /opt/rocm's runtime there in place of its bundled one, "
        + (f"and ROCm {installed} is installed" if installed else "and no ROCm is installed yet")
        + (f" (AMD supports {line}.x on WSL2 with librocdxg {row.librocdxg})" if row else "")
    )
    return dataclasses.replace(cons, rocm=line)


def cuda_build_exists(machine: Machine, torch_version: str, index: str) -> bool:
    """Whether ``torch_version`` has ``index`` wheels for this host's CPU (aarch64: as recorded)."""
    if cpu_arch(machine) != "aarch64":
        return True
    return index in (load_platforms().cuda_aarch64(torch_version) or ())


def jax_plugin_exists(machine: Machine, family: str, version: str) -> bool:
    """Whether the jax ``family`` plugin of ``version`` has wheels for this host's CPU."""
    if cpu_arch(machine) != "aarch64":
        return True
    return load_platforms().jax_aarch64(family, version)


def cpu_build_exists(machine: Machine, torch_version: str) -> bool:
    if cpu_arch(machine) != "aarch64":
        return True
    return _release_key(torch_version) >= _release_key(load_platforms().cpu_aarch64_from)


def finish(machine: Machine, plan: Plan, notes: Notes) -> Plan:
    """The plan stamped with its platform; on WSL2 the runtime step, the DXG variable and the
    checks of the GPU and the Windows driver against AMD's list."""
    tag = platform_tag(machine)
    if tag is None:
        return plan
    reasons, warnings, env = list(plan.reasons), list(plan.warnings), dict(plan.env)
    if cpu_arch(machine) == "aarch64" and plan.backend.kind == "cpu":
        data = load_platforms()
        reasons.append(
            f"aarch64: CPU wheels from the cpu index; PyPI's aarch64 torch is a {data.pypi_cuda} build from "
            f"{data.pypi_cuda_from} on (matrices/platforms.toml)"
        )
    if machine.platform.wsl and plan.channel in AMD_CHANNELS:
        # AMD's own wheels bring ROCm as pip packages (rocm[libraries]): librocdxg must be built into
        # that SDK, not /opt/rocm (ROCm/librocdxg README, "Build with TheRock Wheels").
        warnings.append(
            "WSL2: AMD's wheels bring their own ROCm SDK in the venv; build librocdxg into it "
            "(`rocm-sdk path --root`, ROCm/librocdxg README: Build with TheRock Wheels) and export "
            "HSA_ENABLE_DXG_DETECTION=1, or use the PyTorch ROCm wheels (--channel stable) with /opt/rocm's runtime"
        )
    if machine.platform.wsl and plan.backend.rocm is not None:
        data = load_platforms()
        # A torch backend names its ROCm line ("rocm7.2"); a jax one only the major: the installed line.
        row = _wsl_release(data, machine, Constraints(rocm=_line(plan.backend.rocm))) or (
            _wsl_release(data, machine, Constraints())
        )
        if row is not None and row.dxg_detection:
            env[DXG_VAR] = "1"
            reasons.append(f"{DXG_VAR}=1: ROCm {row.rocm} reaches the GPU through /dev/dxg only when asked")
        if "torch" in plan.framework:
            reasons.append(
                "WSL2: install replaces the wheel's bundled libhsa-runtime64.so with /opt/rocm's WSL runtime, "
                "as AMD's WSL guide does (journaled, and restored if the install fails)"
            )
        if "jax" in plan.framework:
            warnings.append(
                "WSL2: AMD does not enable or validate JAX's ROCm plugin under WSL (ROCm/librocdxg's known "
                "issues): jax may fail to install, initialize or run"
            )
        for gpu in machine.amd_gpus:
            listed = data.wsl_gpu(gpu.arch)
            if gpu.visible and listed is None:
                warnings.append(
                    f"WSL2: GPU {gpu.index} ({gpu.arch or 'unknown arch'}, {gpu.name or 'AMD'}) is not among the "
                    "GPUs AMD supports on WSL2 (matrices/platforms.toml)"
                )
        if row is not None:
            driver = machine.platform.windows_driver
            if driver is None:
                warnings.append(
                    f"WSL2: the Windows driver's version was not read; ROCm {row.rocm} needs AMD Software: "
                    f"Adrenalin Edition {row.adrenalin_min} or newer (set ROCMKIT_WSL_DRIVER to check it)"
                )
            elif _release_key(driver) < _release_key(row.adrenalin_min):
                warnings.append(
                    f"WSL2: Adrenalin {driver} is older than {row.adrenalin_min}, the minimum for ROCm {row.rocm} "
                    "on WSL2: update the Windows driver"
                )
            if row.unconfirmed:
                warnings.append(
                    f"relies on an unconfirmed fact: Adrenalin {row.adrenalin_min} is the minimum for ROCm "
                    f"{row.rocm} on WSL2 (matrices/platforms.toml; sources: "
                    f"{', '.join(short_source(data.sources[s]) for s in row.sources)})"
                )
    return dataclasses.replace(
        plan,
        platform=tag,
        env=env,
        reasons=tuple(dict.fromkeys(reasons)),
        warnings=tuple(dict.fromkeys(warnings)),
    )
