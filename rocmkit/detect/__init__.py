"""Detection: probe a Source, merge every tool's sightings into one :class:`Machine`.

Probes run all at once (``rocmkit.probes``); ``merge`` holds the precedence rules
(:data:`LISTINGS`, :data:`FIELD_PRECEDENCE`: the KFD topology, the kernel's own view,
first; the PCI table of ``matrices/gfx.toml`` last, for facts no tool printed);
``advice`` adds the problems that need the merged view; ``overrides`` applies the
``ROCMKIT_*`` variables and ``visibility`` the ``ROCR_/HIP_/CUDA_VISIBLE_DEVICES`` ones.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rocmkit.detect.advice import device_problems, driverless
from rocmkit.detect.merge import (
    FIELD_PRECEDENCE,
    LISTINGS,
    NVIDIA_LISTINGS,
    MatrixRef,
    attach_pci,
    build_amd,
    build_nvidia,
    merge,
)
from rocmkit.detect.overrides import BOOTSTRAP_VARS, Overrides, apply_overrides, parse_overrides
from rocmkit.detect.sriov import mark_virtual
from rocmkit.detect.visibility import apply_visibility
from rocmkit.detect.wsl import wsl_problems
from rocmkit.errors import UsageError
from rocmkit.machine import Machine, NvidiaInfo, Problem, RocmInfo
from rocmkit.probes import amd, gather, kernel, nvidia
from rocmkit.probes import health as health_probe
from rocmkit.probes import host as host_probe
from rocmkit.probes import platform as platform_probe
from rocmkit.sources import CaptureSource, LiveSource, Source, relevant_env


def all_command_names() -> tuple[str, ...]:
    """Every command detection asks its source for (names of ``rocmkit.sources.COMMANDS``)."""
    return (
        *amd.COMMAND_NAMES,
        *nvidia.COMMAND_NAMES,
        *host_probe.COMMAND_NAMES,
        *kernel.COMMAND_NAMES,
        *health_probe.COMMAND_NAMES,
    )


def detect_machine(source: Source | None = None, environ: Mapping[str, str] | None = None) -> Machine:
    """Probe ``source`` (the live machine when None) and merge what it shows into a Machine.

    ``environ`` supplies the ROCMKIT_* overrides (default: this process's environment);
    visibility variables come from the source (a capture's env.json, or ``environ`` live).
    """
    process_env: Mapping[str, str] = os.environ if environ is None else environ
    if source is None:
        pre = parse_overrides(process_env)
        source = LiveSource(env=process_env, timeout_s=pre.probe_timeout_s)
    src_env = source.environ()
    if isinstance(source, CaptureSource):
        _check_captured_overrides(source, _rocmkit_vars(src_env), _rocmkit_vars(process_env))
    overrides = parse_overrides({**_rocmkit_vars(src_env), **_rocmkit_vars(process_env)})

    pending = health_probe.start(source)  # the per-GPU hardware files, beside the tools
    names = all_command_names()
    if platform_probe.signs(source, src_env):
        names = (*names, *platform_probe.WSL_COMMANDS)  # WSL2: rocminfo with DXG detection, the Windows driver
    raw = gather(source, names)
    host_f = host_probe.probe(source, raw, src_env)
    platform, results, platform_problems = platform_probe.probe(source, raw, src_env, host_f.host.devices)
    amd_f = amd.probe(source, results, src_env)
    nv_f = nvidia.probe(source, results)
    kernel_f = kernel.probe(results)

    problems: list[Problem] = [*host_f.problems, *platform_problems]
    matrix = MatrixRef()
    amd_accs = merge("amd", amd_f.listings, LISTINGS, problems)
    amd_accs = attach_pci(amd_accs, host_f.pci_gpus, "amd", problems)
    gpus = build_amd(amd_accs, matrix, src_env, problems)
    nv_accs = merge("nvidia", nv_f.listings, NVIDIA_LISTINGS, problems)
    nv_accs = attach_pci(nv_accs, host_f.pci_gpus, "nvidia", problems)
    gpus += build_nvidia(nv_accs, matrix)
    gpus = mark_virtual(gpus, host_f.pci_gpus)
    problems = [*amd_f.problems, *nv_f.problems, *problems, *kernel_f.problems]
    problems += kernel.libdrm_problems(results)
    health, health_problems = health_probe.finish(pending, results, overrides.probe_timeout_s)
    problems += health_problems

    rocm = RocmInfo(
        version=amd_f.rocm_version,
        installs=amd_f.installs,
        driver_version=amd_f.driver_versions[0][1] if amd_f.driver_versions else None,
        driver_loaded=amd_f.driver_loaded,
        hip_version=amd_f.hip_version,
        cpu_agents=amd_f.cpu_agents,
    )
    nv_info = (
        NvidiaInfo(driver_version=nv_f.driver_version, cuda_version=nv_f.cuda_version)
        if nv_f.present or any(g.vendor == "nvidia" for g in gpus)
        else None
    )
    has_amd = any(g.vendor == "amd" for g in gpus)
    problems += driverless(gpus, kfd_refused=bool(kernel_f.messages))
    problems += device_problems(host_f.host, has_amd, host_f.host.container)
    if has_amd and not rocm.installs and rocm.version is None and not amd_f.tools_seen:
        problems.append(
            Problem(
                source="rocm",
                message="no ROCm user space found (no /opt/rocm*, no ROCM_PATH, no ROCm tools)",
                hint="not needed for PyTorch wheels, which bundle ROCm; install ROCm for rocminfo, "
                "amd-smi and building from source",
                severity="info",
            )
        )

    problems = wsl_problems(platform, problems, has_amd=has_amd, rocm=rocm)
    gpus, rocm, nv_info = apply_overrides(gpus, rocm, nv_info, overrides, matrix)
    problems += overrides.problems()
    final = apply_visibility(gpus, src_env, problems)
    return Machine(
        gpus=final,
        rocm=rocm,
        nvidia=nv_info,
        host=host_f.host,
        env=relevant_env(src_env),
        problems=tuple(_unique(problems)),
        overrides=overrides.raw,
        source=source.label,
        kernel_messages=kernel_f.messages,
        kernel_log_read=kernel_f.read,
        health=health,
        platform=platform,
    )


def refresh_health(
    machine: Machine, environ: Mapping[str, str] | None = None, source: Source | None = None
) -> Machine:
    """``machine`` with its hardware health read again from this machine (docs/hardware.md).

    The detection cache keeps a machine for up to an hour, but ECC counts, temperatures and
    throttling change within minutes: the doctor reads them again before judging them."""
    from dataclasses import replace

    process_env: Mapping[str, str] = os.environ if environ is None else environ
    pre = parse_overrides(process_env)
    if source is None:
        source = LiveSource(env=process_env, timeout_s=pre.probe_timeout_s)
    pending = health_probe.start(source)
    results = gather(source, health_probe.COMMAND_NAMES)
    health, problems = health_probe.finish(pending, results, pre.probe_timeout_s)
    kept = [p for p in machine.problems if p.source != "sysfs"]
    return replace(machine, health=health, problems=tuple(_unique([*kept, *problems])))


def _check_captured_overrides(
    source: CaptureSource, captured: Mapping[str, str], shell: Mapping[str, str]
) -> None:
    """A bad ROCMKIT_* value in a capture's env.json: say it is there, not in the shell."""
    try:
        parse_overrides({k: v for k, v in captured.items() if k not in shell})
    except UsageError as exc:
        raise UsageError(
            f"{exc.message}, in {source.path / 'env.json'}",
            "fix or delete it in env.json, or set a valid value in this shell (the shell wins)",
        ) from exc


def _rocmkit_vars(env: Mapping[str, str]) -> dict[str, str]:
    """The override variables: rocmkit's own and AMD's rocm-bootstrap ones."""
    return {k: v for k, v in env.items() if k.startswith("ROCMKIT_") or k in BOOTSTRAP_VARS}


def _unique(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[str, str]] = set()
    out = []
    for p in problems:
        if (p.source, p.message) not in seen:
            seen.add((p.source, p.message))
            out.append(p)
    return out


def load_machine(capture: Path | None = None) -> Machine:
    """For the CLI: detect from a capture folder, or from the live machine."""
    if capture is None:
        return detect_machine()
    return detect_machine(CaptureSource(Path(capture)))


__all__: list[str] = [
    "FIELD_PRECEDENCE",
    "LISTINGS",
    "NVIDIA_LISTINGS",
    "Overrides",
    "apply_visibility",
    "detect_machine",
    "load_machine",
    "parse_overrides",
]
