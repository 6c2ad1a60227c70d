"""The WSL2 runtime step: torch uses /opt/rocm's HSA runtime instead of the one its wheel bundles.

On WSL2 the GPU is reached through /dev/dxg by AMD's WSL runtime (ROCr with librocdxg); the
``libhsa-runtime64.so`` a ROCm torch wheel bundles in ``torch/lib`` is found first (torch's
RUNPATH is its own folder), in place of /opt/rocm's. AMD's WSL install guide
removes it (`rm libhsa-runtime64.so*` in ``<site-packages>/torch/lib``; docs/platforms.md), so
that the loader finds /opt/rocm's. rocmkit does the same as one more change of the install's
transaction: the files are journaled (their bytes, or their absence) before they go, a failed
or interrupted install puts them back with everything else, and a journal left by a kill -9
restores them like the guard files (``install/journal.py`` accepts these paths and no others).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rocmkit.errors import ToolError
from rocmkit.plan import Plan
from rocmkit.pyenv import PyEnv

PREFIX = "libhsa-runtime64.so"
# Where AMD's WSL guide expects the runtime torch should use (ROCm's packages put it there).
SYSTEM_LIB = "/opt/rocm/lib"


def applies(plan: Plan) -> bool:
    """A ROCm plan for WSL2 (``plan.platform``, set by resolve/platform.py)."""
    return (plan.platform or "").startswith("wsl2-") and plan.backend.rocm is not None and "torch" in plan.framework


def torch_libs(target: PyEnv) -> tuple[Path, ...]:
    """The ``torch/lib`` folders torch may be installed into in ``target``."""
    return tuple(dict.fromkeys(Path(d) / "torch" / "lib" for d in (target.purelib, target.platlib)))


def runtime_files(target: PyEnv) -> tuple[Path, ...]:
    """The bundled runtime's files, present or not: the canonical name in every ``torch/lib``
    (absent before a first install: the journal then records that it did not exist) and every
    ``libhsa-runtime64.so*`` there now."""
    found: list[Path] = []
    for lib in torch_libs(target):
        found.append(lib / PREFIX)
        try:
            names = sorted(os.listdir(lib))
        except OSError:  # no torch yet
            continue
        found += [lib / n for n in names if n.startswith(PREFIX) and not (lib / n).is_dir()]
    return tuple(dict.fromkeys(found))


def is_runtime_file(target: PyEnv, name: str) -> bool:
    """Whether a journal may restore ``name``: a ``libhsa-runtime64.so*`` directly in one of
    ``target``'s ``torch/lib`` folders (never a path that climbs out, never another file)."""
    path = Path(os.path.normpath(name))
    # Folders compared with their symlinks resolved, as the journal compares the guard files.
    folders = {os.path.realpath(p) for p in torch_libs(target)}
    return path.name.startswith(PREFIX) and os.path.realpath(path.parent) in folders


@dataclass(frozen=True, kw_only=True)
class SystemRuntime:
    path: Path | None  # /opt/rocm/lib/libhsa-runtime64.so*, the first found

    @property
    def found(self) -> bool:
        return self.path is not None


def system_runtime(root: str = "/") -> SystemRuntime:
    lib = Path(root) / SYSTEM_LIB.lstrip("/")
    try:
        names = sorted(n for n in os.listdir(lib) if n.startswith(PREFIX))
    except OSError:
        names = []
    return SystemRuntime(path=lib / names[0] if names else None)


def check_ready(plan: Plan, root: str = "/") -> None:
    """Before anything changes: the WSL runtime torch will use must be there."""
    if applies(plan) and not system_runtime(root).found:
        raise ToolError(
            f"this WSL2 plan needs ROCm's runtime in {SYSTEM_LIB} (torch's bundled one cannot reach the GPU "
            "through /dev/dxg), and there is none",
            "install ROCm 7.2 from AMD's packages and build librocdxg (docs/platforms.md), then run the install again",
        )


def remove_bundled(target: PyEnv) -> tuple[Path, ...]:
    """Remove the bundled runtime's files from ``torch/lib``; what was removed."""
    gone: list[Path] = []
    for path in runtime_files(target):
        if path.is_file() or path.is_symlink():
            path.unlink()
            gone.append(path)
    return tuple(gone)
