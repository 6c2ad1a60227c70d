"""Preflight: what a source build needs before it starts, each missing item with its fix.

A torch build that runs out of disk or finds no compiler fails after an hour, not at once; these
checks make it fail in a second instead. Probes are passed in (:class:`Probes`) so that tests
describe a host without touching this one.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rocmkit.arch import GpuBackend
from rocmkit.util.buildjobs import GIB

Severity = Literal["error", "warning"]

# Free disk a build needs: a torch checkout with submodules plus its build tree is ~30 GB; Triton
# (with the LLVM it downloads) and torchvision add a few GB, the wheels ~1 GB.
DISK_GIB_TORCH = 30.0
DISK_GIB_TRITON = 6.0
DISK_GIB_VISION = 2.0
# Below this a single HIP/CUDA translation unit may not fit; below the second, the build crawls.
MEMORY_GIB_MIN = 6.0
MEMORY_GIB_COMFORT = 16.0


@dataclass(frozen=True, kw_only=True)
class PreflightItem:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    severity: Severity = "error"  # what a failed item means

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "detail": self.detail,
            "fix": self.fix,
            "severity": self.severity,
        }

    def line(self) -> str:
        mark = "ok  " if self.ok else ("FAIL" if self.severity == "error" else "warn")
        text = f"[{mark}] {self.name}: {self.detail}"
        return text + (f" (fix: {self.fix})" if not self.ok and self.fix else "")


@dataclass(frozen=True, kw_only=True)
class PythonInfo:
    include_dir: str
    version: str  # "3.11"


@dataclass(frozen=True, kw_only=True)
class Probes:
    which: Callable[[str], str | None]
    exists: Callable[[str], bool]
    disk_free: Callable[[Path], int | None]
    python_info: Callable[[str], PythonInfo | None]
    memory_bytes: int | None


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def live_probes(memory_bytes: int | None = None, env: dict[str, str] | None = None) -> Probes:
    """Probes of this machine: PATH (plus ROCm's bin), the file system, the target interpreter."""
    from rocmkit.proc.runner import which

    def disk_free(path: Path) -> int | None:
        try:
            return shutil.disk_usage(_nearest_existing(path)).free
        except OSError:
            return None

    def python_info(python: str) -> PythonInfo | None:
        from rocmkit.errors import RocmkitError
        from rocmkit.pyenv import probe

        try:
            found = probe(python)
        except RocmkitError:
            return None
        return PythonInfo(include_dir=str(found.include), version=found.short_version)

    if memory_bytes is None:
        try:
            import psutil

            memory_bytes = int(psutil.virtual_memory().total)
        except (ImportError, OSError):
            memory_bytes = None
    return Probes(
        which=lambda name: which(name, env),
        exists=os.path.exists,
        disk_free=disk_free,
        python_info=python_info,
        memory_bytes=memory_bytes,
    )


def _tool(probes: Probes, name: str, extra_dirs: tuple[str, ...] = ()) -> str | None:
    found = probes.which(name)
    if found:
        return found
    for d in extra_dirs:
        candidate = str(Path(d) / name)
        if probes.exists(candidate):
            return candidate
    return None


def run_preflight(
    *,
    backend: GpuBackend,
    build_dir: Path,
    python: str,
    probes: Probes,
    rocm_path: str = "/opt/rocm",
    cuda_home: str | None = None,
    triton: bool = True,
    torchvision: bool = True,
) -> list[PreflightItem]:
    items: list[PreflightItem] = []
    py_bin = str(Path(python).parent)

    need = DISK_GIB_TORCH + (DISK_GIB_TRITON if triton else 0) + (DISK_GIB_VISION if torchvision else 0)
    free = probes.disk_free(build_dir)
    where = _nearest_existing(build_dir)
    if free is None:
        items.append(
            PreflightItem(
                name="disk", ok=False, severity="warning", detail=f"cannot read free space at {where}"
            )
        )
    else:
        ok = free / GIB >= need
        items.append(
            PreflightItem(
                name="disk",
                ok=ok,
                detail=f"{free / GIB:.1f} GiB free at {where}, the build needs about {need:.0f} GiB",
                fix=None if ok else "free space there, or pass --build-dir on a bigger disk",
            )
        )

    mem = probes.memory_bytes
    if mem is None:
        items.append(
            PreflightItem(name="memory", ok=False, severity="warning", detail="total memory unknown")
        )
    else:
        gib = mem / GIB
        if gib < MEMORY_GIB_MIN:
            items.append(
                PreflightItem(
                    name="memory",
                    ok=False,
                    detail=f"{gib:.1f} GiB; one compile job can need 4 GiB",
                    fix=f"add swap or build on a machine with at least {MEMORY_GIB_MIN:g} GiB",
                )
            )
        else:
            ok = gib >= MEMORY_GIB_COMFORT
            items.append(
                PreflightItem(
                    name="memory",
                    ok=ok,
                    severity="warning",
                    detail=f"{gib:.1f} GiB"
                    + ("" if ok else "; few parallel jobs fit, the build will be slow"),
                    fix=None if ok else "expect hours; more memory allows a higher MAX_JOBS",
                )
            )

    git = _tool(probes, "git")
    items.append(
        PreflightItem(
            name="git",
            ok=git is not None,
            detail=git or "not found",
            fix="install git (sudo apt install git / sudo dnf install git)",
        )
    )
    # torch's requirements.txt lists cmake and ninja, so the torch-build-deps step installs them
    # next to the interpreter (on PATH for the build); missing here is worth a word, not a stop.
    for tool in ("cmake", "ninja"):
        path = _tool(probes, tool, (py_bin,))
        items.append(
            PreflightItem(
                name=tool,
                ok=path is not None,
                severity="warning",
                detail=path or "not found yet",
                fix=f"the torch-build-deps step installs it from torch's requirements.txt; or: {python} -m pip install {tool}",
            )
        )

    cc = _tool(probes, "gcc") or _tool(probes, "clang") or _tool(probes, "cc")
    cxx = _tool(probes, "g++") or _tool(probes, "clang++") or _tool(probes, "c++")
    compiler_fix = (
        "sudo apt install build-essential (Debian/Ubuntu) or sudo dnf install gcc-c++ (RHEL/Fedora)"
    )
    items.append(
        PreflightItem(
            name="C compiler", ok=cc is not None, detail=cc or "no gcc, clang or cc", fix=compiler_fix
        )
    )
    items.append(
        PreflightItem(
            name="C++ compiler", ok=cxx is not None, detail=cxx or "no g++, clang++ or c++", fix=compiler_fix
        )
    )

    if backend == "rocm":
        rocm_bin = str(Path(rocm_path) / "bin")
        sdk_fix = "install the ROCm HIP SDK: sudo apt install rocm-hip-sdk (or amdgpu-install --usecase=rocm,hiplibsdk)"
        hipcc = _tool(probes, "hipcc", (rocm_bin,))
        items.append(
            PreflightItem(
                name="hipcc", ok=hipcc is not None, detail=hipcc or f"not in PATH or {rocm_bin}", fix=sdk_fix
            )
        )
        header = str(Path(rocm_path) / "include" / "hip" / "hip_runtime.h")
        has_header = probes.exists(header)
        items.append(
            PreflightItem(
                name="ROCm development files",
                ok=has_header,
                detail=header if has_header else f"{header} missing",
                fix=sdk_fix + "; or point ROCM_PATH at the ROCm install",
            )
        )
    else:
        dirs = tuple(str(Path(d) / "bin") for d in (cuda_home, "/usr/local/cuda") if d)
        nvcc = _tool(probes, "nvcc", dirs)
        items.append(
            PreflightItem(
                name="nvcc",
                ok=nvcc is not None,
                detail=nvcc or "CUDA compiler not found",
                fix="install the CUDA toolkit and set CUDA_HOME",
            )
        )

    info = probes.python_info(python)
    if info is None:
        items.append(
            PreflightItem(
                name="python",
                ok=False,
                detail=f"{python} does not run",
                fix="pass --python with a working interpreter",
            )
        )
    else:
        header = str(Path(info.include_dir) / "Python.h")
        ok = probes.exists(header)
        items.append(
            PreflightItem(
                name="Python headers",
                ok=ok,
                detail=header if ok else f"{header} missing",
                fix=None
                if ok
                else f"sudo apt install python{info.version}-dev (or python{info.version}-devel)",
            )
        )

    ccache = probes.which("ccache")
    items.append(
        PreflightItem(
            name="ccache",
            ok=ccache is not None,
            severity="warning",
            detail=ccache or "not found",
            fix="install ccache: a rebuild after a failure then reuses every compiled file",
        )
    )
    return items


def blocking(items: list[PreflightItem]) -> list[PreflightItem]:
    return [i for i in items if not i.ok and i.severity == "error"]
