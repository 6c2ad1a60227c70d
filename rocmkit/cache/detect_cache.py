"""Detection facts cached per boot and driver state, for the doctor's reruns.

A Slurm health check runs ``rocmkit doctor`` every few minutes; between two runs on
the same boot, with the same driver, the same devices and the same environment,
detection (rocminfo, amd-smi, nvidia-smi, sysfs) finds the same machine. The key
covers everything that changes what detection reports without a reboot: the boot
id, the loaded driver versions and the KFD topology generation, the device nodes
(their owners and modes), the mounts under /dev, /opt and /usr (/dev/shm, a ROCm
bind mount), the ROCm install, this process's user and groups, the variables
detection reads, the tools it runs as found on PATH (path, size, mtime), the matrix data
(its PCI and gfx tables name what detection finds) and rocmkit's version. Anything else
changed means a different key, so a stale entry is never read; ``--fresh`` (doctor,
detect, resolve) ignores the cache altogether. ``rocmkit detect`` and ``rocmkit resolve``
read the same entries (:func:`machine_at`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit import __version__
from rocmkit.util.envvars import relevant_raw
from rocmkit.util.trust import load_cached, store_cached

if TYPE_CHECKING:
    from rocmkit.machine import Machine
    from rocmkit.plan import Plan

SCHEMA = "rocmkit.detect-cache/1"
# Even with an unchanged key, detect again after this long (a dmesg line about a GPU
# arrives without any key change; level-0 dmesg checks should see it within the hour).
MAX_AGE_S = 3600.0

_FILES = (
    "/proc/sys/kernel/random/boot_id",
    "/sys/module/amdgpu/version",
    "/sys/module/amdgpu/initstate",
    "/sys/module/nvidia/version",
    "/proc/driver/nvidia/version",
    "/sys/class/kfd/kfd/topology/generation_id",
    "/opt/rocm/.info/version",
)
_DEVICE_DIRS = ("/dev/dri",)
_DEVICES = ("/dev/kfd", "/dev/dxg")
# The library folders detection lists (rocmkit.sources.LIB_DIRS, kept equal by a test): a
# shadowing libhsa-runtime64 removed, or librocdxg installed, changes the folder's mtime.
LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/opt/rocm/lib", "/usr/lib/wsl/lib")
# The commands detection runs (argv[0] of rocmkit.sources.COMMANDS, kept equal by a test):
# a tool upgraded or put first on PATH prints something else.
TOOLS = (
    "amd-smi", "dmesg", "hipconfig", "id", "ldd", "lspci", "nvidia-smi", "reg.exe", "rocm-smi",
    "rocm_agent_enumerator", "rocminfo", "uname",
)  # fmt: skip


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(1 << 20)
    except OSError:
        return ""


def _stat(path: str) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_mode:o}:{st.st_uid}:{st.st_gid}:{st.st_rdev}"


def _mtime(path: str) -> str:
    try:
        return str(os.stat(path).st_mtime_ns)
    except OSError:
        return "-"


# Mount points whose change changes what detection reports (/dev/shm's size, a ROCm or
# driver tree bind-mounted into a container). Other mounts come and go with every job
# (a Slurm job's tmpfs, a container's overlay) and must not empty the cache.
_MOUNT_PREFIXES = ("/dev", "/opt", "/usr", "/sys/module")


def _tools(path_var: str) -> str:
    """Where each tool is found on PATH, with its size and mtime (as a shell finds it)."""
    folders = [d for d in path_var.split(os.pathsep) if d]
    out = []
    for tool in TOOLS:
        for folder in folders:
            exe = os.path.join(folder, tool)
            try:
                st = os.stat(exe)
            except OSError:
                continue
            if os.access(exe, os.X_OK):
                out.append(f"{exe}:{st.st_size}:{st.st_mtime_ns}")
                break
    return "\n".join(out)


def _mounts(text: str) -> str:
    keep = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1].startswith(_MOUNT_PREFIXES):
            keep.append(" ".join(fields[:4]))
    return "\n".join(sorted(keep))


def state_key(environ: Mapping[str, str]) -> str | None:
    """The key of this boot's driver and device state, or None where there is no boot id
    (not Linux, or /proc hidden): then nothing is cached."""
    from rocmkit.matrix.compiled import matrix_key
    from rocmkit.util.paths import matrices_dir

    boot = _read(_FILES[0]).strip()
    if not boot:
        return None
    parts: list[str] = [SCHEMA, __version__]
    parts += [f"{p}={_read(p)}" for p in _FILES]
    parts.append(_mounts(_read("/proc/mounts")))
    devices = list(_DEVICES)
    for folder in _DEVICE_DIRS:
        with contextlib.suppress(OSError):
            devices += sorted(str(Path(folder) / n) for n in os.listdir(folder))
    parts += [f"{d}={_stat(d)}" for d in devices]
    parts += [f"{d}={_mtime(d)}" for d in LIB_DIRS]
    # The node's name: a cache folder on a shared home is read by every node of a cluster, and
    # nodes sharing one kernel (containers, namespaces) share the boot id too.
    parts.append(f"host={os.uname().nodename}")
    parts.append(f"rocm={os.path.realpath('/opt/rocm')}")
    parts.append(f"user={os.getuid()}:{sorted(os.getgroups())}")
    parts.append(json.dumps(relevant_raw(environ), sort_keys=True))
    parts.append(f"PATH={environ.get('PATH', '')}")
    parts.append(_tools(environ.get("PATH", "")))
    data = matrices_dir()
    parts.append(f"matrix={data}:{matrix_key(data)}")
    parts.append(f"LD_LIBRARY_PATH={environ.get('LD_LIBRARY_PATH', '')}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def cached_machine(
    cache_dir: Path,
    *,
    fresh: bool = False,
    environ: Mapping[str, str] | None = None,
    detect: Callable[[], Machine] | None = None,
    now: Callable[[], float] = time.time,
) -> tuple[Machine, bool]:
    """This machine, from the cache when the state key matches, else detected and stored.
    Returns the machine and whether it came from the cache. ``fresh``: detect, then store."""
    machine, _, hit = machine_at(cache_dir, fresh=fresh, environ=environ, detect=detect, now=now)
    return machine, hit


def machine_at(
    cache_dir: Path,
    *,
    fresh: bool = False,
    environ: Mapping[str, str] | None = None,
    detect: Callable[[], Machine] | None = None,
    now: Callable[[], float] = time.time,
) -> tuple[Machine, float, bool]:
    """As :func:`cached_machine`, with when the machine was detected (the cache entry's
    time on a hit): what is derived from it expires with it."""
    from rocmkit.machine import Machine

    env = os.environ if environ is None else environ
    key = state_key(env)
    path = cache_dir / "detect" / f"{key}.json"
    if key is not None and not fresh:
        try:
            # Only an entry of this user's (or root's) in a folder nobody else can write.
            data = json.loads(load_cached(path) or b"{}")
            stored_at = float(data["stored_at"])
            if data.get("schema") == SCHEMA and 0 <= now() - stored_at < MAX_AGE_S:
                return Machine.from_dict(data["machine"]), stored_at, True
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            pass  # absent, unreadable or damaged (even nested past recursion): detect
    if detect is None:
        # Only on a miss: the probes and parsers are most of what detection costs to import.
        from rocmkit.detect import detect_machine

        detect = detect_machine
    started = now()
    machine = detect()
    if key is not None and machine.source == "live":
        # A cache we cannot write is a slower rerun, never a failed doctor.
        with contextlib.suppress(OSError):
            payload = {"schema": SCHEMA, "stored_at": started, "machine": machine.to_dict()}
            store_cached(path, json.dumps(payload).encode())
    return machine, started, False


def cached_plan(
    cache_dir: Path,
    machine: Machine,
    make: Callable[[Machine], Plan | None],
    *,
    fresh: bool = False,
    environ: Mapping[str, str] | None = None,
    variant: str = "",
) -> Plan | None:
    """The plan resolve makes for ``machine``, cached beside it: the key adds the machine
    itself, a checksum of the matrix files and ``variant`` (the constraints, the target
    Python), so new data, another machine or other options resolve again. Saves a rerun
    importing and running resolve."""
    from rocmkit.matrix.compiled import matrix_key
    from rocmkit.plan import Plan
    from rocmkit.util.paths import matrices_dir

    env = os.environ if environ is None else environ
    key = state_key(env)
    if key is None or machine.source != "live":
        return make(machine)
    facts = json.dumps(machine.to_dict(), sort_keys=True).encode()
    asked = hashlib.sha256(variant.encode()).hexdigest()[:12]
    name = f"{key}-plan-{matrix_key(matrices_dir())}-{zlib.crc32(facts):08x}-{asked}.json"
    path = cache_dir / "detect" / name
    if not fresh:
        try:
            data = json.loads(load_cached(path) or b"{}")
            if data.get("schema") == SCHEMA:
                return Plan.from_dict(data["plan"]) if data["plan"] is not None else None
        except Exception:  # absent, unreadable, or a plan this rocmkit no longer accepts
            pass
    plan = make(machine)
    with contextlib.suppress(OSError):
        payload = {"schema": SCHEMA, "plan": plan.to_dict() if plan is not None else None}
        store_cached(path, json.dumps(payload).encode())
    return plan
