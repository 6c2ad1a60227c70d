"""WSL2: whether this machine is one, and how its GPU is reached (pure parsing in
``parsers/platform.py``; what it means for the user in ``detect/wsl.py``).

Two steps, because one command depends on the answer: :func:`signs` reads the kernel's two
files and the environment before the commands run (so that ``rocminfo-dxg.txt``, rocminfo with
``HSA_ENABLE_DXG_DETECTION=1``, runs only on WSL), and :func:`probe` reads the rest after.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocmkit.machine import DeviceNode, Platform, Problem
from rocmkit.parsers import platform as pp
from rocmkit.parsers import rocminfo
from rocmkit.probes import Results, output
from rocmkit.proc.runner import CommandResult
from rocmkit.sources import LIB_DIRS, Source, lib_entries

DXG_COMMAND = "rocminfo-dxg.txt"
DRIVER_COMMAND = "windows-driver.txt"
# What runs only on WSL2, beside the commands every machine runs.
WSL_COMMANDS = (DXG_COMMAND, DRIVER_COMMAND)
DRIVER_VAR = "ROCMKIT_WSL_DRIVER"


def signs(source: Source, env: Mapping[str, str]) -> tuple[str, ...]:
    """The WSL2 signs readable before any command runs (the kernel's files, the environment)."""
    return pp.wsl_signs(source.read("/proc/sys/kernel/osrelease"), source.read("/proc/version"), env, False)


def _gpu_agents(results: Results, name: str) -> int:
    res = output(results, name)
    return len(rocminfo.parse_rocminfo(res.stdout, res.stderr).gpus) if res is not None else 0


def probe(
    source: Source, results: Results, env: Mapping[str, str], devices: tuple[DeviceNode, ...]
) -> tuple[Platform, dict[str, CommandResult], tuple[Problem, ...]]:
    """The platform record, the command results to parse (rocminfo replaced by its DXG run when
    only that one lists GPUs), and the problems of reading it."""
    dxg = any(d.path == "/dev/dxg" and d.exists for d in devices)
    found = pp.wsl_signs(source.read("/proc/sys/kernel/osrelease"), source.read("/proc/version"), env, dxg)
    replaced = dict(results)
    if not found:
        return Platform(), replaced, ()
    listings = {folder: lib_entries(source.listdir(folder)) for folder in LIB_DIRS}
    need_dxg = False
    dxg_ran = output(results, DXG_COMMAND) is not None
    if dxg_ran and _gpu_agents(results, "rocminfo.txt") == 0 and _gpu_agents(results, DXG_COMMAND) > 0:
        # ROCm before 7.13 reaches the GPU through /dev/dxg only when asked (librocdxg#34).
        replaced["rocminfo.txt"] = results[DXG_COMMAND]
        need_dxg = True
    problems: list[Problem] = []
    raw_driver = env.get(DRIVER_VAR)
    reg = output(results, DRIVER_COMMAND)
    # The variable wins (it corrects what Windows says); else the registry, where interop answers.
    driver = pp.adrenalin_version(raw_driver) if raw_driver else None
    if not raw_driver and reg is not None and reg.ok:
        driver = pp.radeon_software_version(reg.stdout)
    if raw_driver and driver is None:
        problems.append(
            Problem(
                source="environment",
                message=f"{DRIVER_VAR}={raw_driver[:40]!r} is not an Adrenalin version such as 26.2.2",
                hint="set it to the version AMD Software: Adrenalin Edition shows on Windows, or unset it",
            )
        )
    platform = Platform(
        wsl=True,
        wsl_signs=found,
        dxg=dxg,
        librocdxg=pp.rocdxg(listings),
        dxg_detection=env.get("HSA_ENABLE_DXG_DETECTION"),
        gpus_need_dxg_detection=need_dxg,
        shadowing_libs=pp.shadowing(listings),
        windows_driver=driver,
    )
    return platform, replaced, tuple(problems)
