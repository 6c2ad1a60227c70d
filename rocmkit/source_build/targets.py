"""What a build is for: the backend and GPU archs, and how hard the build host can be pushed.

The archs come from ``--arch`` or from the detected machine. MAX_JOBS comes from one rule, stated
in every plan (see :func:`max_jobs`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocmkit.arch import GpuBackend as Backend
from rocmkit.arch import parse_cc, parse_gfx, sm_number
from rocmkit.errors import UsageError
from rocmkit.machine import Machine

if TYPE_CHECKING:
    from rocmkit.matrix import Matrix


@dataclass(frozen=True, kw_only=True)
class ArchTargets:
    """The GPU architectures one build compiles for, and how they were chosen."""

    backend: Backend
    archs: tuple[str, ...]  # ("gfx1031", "gfx1030") or ("8.0", "9.0")
    origin: str  # how the archs were chosen, for the plan
    skipped: tuple[str, ...] = ()  # GPUs left out, with why

    @property
    def arch_list(self) -> str:
        """The semicolon list PYTORCH_ROCM_ARCH / TORCH_CUDA_ARCH_LIST take."""
        return ";".join(self.archs)


def _dedupe(items: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def target_from_args(archs: Sequence[str], backend: Backend | None, matrix: Matrix | None = None) -> ArchTargets:
    """``--arch`` values: all gfx names (ROCm) or all compute capabilities (CUDA); with
    ``matrix``, only archs its data knows (gfx.toml's targets, nvidia.toml's range)."""
    cleaned = [a.strip() for a in archs if a.strip()]
    if not cleaned:
        # An empty --arch would plan a build for no GPU at all.
        raise UsageError("--arch is empty", "name a GPU arch: --arch gfx1031, or --arch sm_90")
    if matrix is not None:
        _known(cleaned, matrix)
    gfx = [a.lower() for a in cleaned if a.lower().startswith("gfx")]
    if gfx and len(gfx) != len(cleaned):
        raise UsageError(
            f"--arch mixes AMD and NVIDIA targets ({', '.join(cleaned)})", "build for one vendor at a time"
        )
    if gfx:
        bad = [a for a in gfx if parse_gfx(a) != a]
        if bad:
            raise UsageError(
                f"--arch {bad[0]} is not a gfx arch name", "use names like gfx1031, gfx90a, gfx942"
            )
        if backend == "cuda":
            raise UsageError("--backend cuda with gfx archs", "drop --backend or pass compute capabilities")
        return ArchTargets(backend="rocm", archs=_dedupe(gfx), origin="--arch")
    ccs = [parse_cc(a) for a in cleaned]
    if any(c is None for c in ccs):
        bad_cc = next(a for a, c in zip(cleaned, ccs, strict=True) if c is None)
        raise UsageError(
            f"--arch {bad_cc} is neither a gfx arch nor a CUDA compute capability",
            "use gfx1031 / gfx90a for AMD, 8.6 / sm_90 for NVIDIA",
        )
    if backend == "rocm":
        raise UsageError("--backend rocm with CUDA compute capabilities", "pass gfx arch names")
    return ArchTargets(backend="cuda", archs=_dedupe([c for c in ccs if c]), origin="--arch")


def _cc_key(cc: str) -> int:
    return sm_number(cc) or 0


def _known(archs: Sequence[str], matrix: Matrix) -> None:
    """Refuse an arch that no GPU has (gfx9999, sm_999): a build for it runs for hours, then
    fails in the compiler or gives wheels nothing can load."""
    for arch in archs:
        gfx = parse_gfx(arch)
        if arch.lower().startswith("gfx"):
            if gfx is not None and matrix.gfx_arch(gfx) is None:
                raise UsageError(
                    f"--arch {arch} is not a GPU arch rocmkit knows (matrices/gfx.toml)",
                    f"use one of {', '.join(sorted(matrix.archs))}",
                )
            continue
        cc = parse_cc(arch)
        ccs = sorted({g.compute_capability for g in matrix.nvidia_gpus}, key=_cc_key)
        if cc is not None and ccs and not _cc_key(ccs[0]) <= _cc_key(cc) <= _cc_key(ccs[-1]):
            raise UsageError(
                f"--arch {arch} is not a compute capability rocmkit knows ({ccs[0]} to {ccs[-1]})",
                "use the GPU's own, e.g. --arch 9.0 (H100) or 8.6",
            )


def target_from_machine(
    machine: Machine,
    backend: Backend | None = None,
    nvidia_cc: Callable[[str], str | None] | None = None,
) -> ArchTargets:
    """The archs of the machine's visible GPUs. Integrated AMD GPUs are left out when a discrete
    one is present: building for them doubles HIP compile time for a GPU nobody trains on."""
    chosen = backend or machine.backend_kind
    if chosen == "cpu":
        raise UsageError(
            f"no visible AMD or NVIDIA GPU to build for ({machine.source})",
            "pass --arch (e.g. --arch gfx1031) to build for another machine",
        )
    skipped: list[str] = []
    if chosen == "rocm":
        gpus = [g for g in machine.amd_gpus if g.visible]
        discrete = [g for g in gpus if g.integrated is not True]
        archs: list[str] = []
        for g in gpus:
            label = f"GPU {g.index} ({g.arch or '?'}, {g.name or 'unknown'})"
            if g.integrated is True and discrete:
                skipped.append(f"{label}: integrated, left out (pass --arch to include it)")
                continue
            arch = parse_gfx(g.arch) or ""
            if not arch:
                skipped.append(f"{label}: arch unknown")
                continue
            archs.append(arch)
        if not archs:
            raise UsageError("no AMD GPU with a known gfx arch was detected", "pass --arch gfx...")
        return ArchTargets(backend="rocm", archs=_dedupe(archs), origin="detected", skipped=tuple(skipped))
    ccs: list[str] = []
    for g in machine.nvidia_gpus:
        if not g.visible:
            continue
        cc = parse_cc(g.compute_capability) or parse_cc(g.arch)
        if cc is None and nvidia_cc is not None and g.name:
            looked_up = nvidia_cc(g.name)
            cc = parse_cc(looked_up) if looked_up else None
        if cc is None:
            skipped.append(f"GPU {g.index} ({g.name or 'unknown'}): compute capability unknown")
            continue
        ccs.append(cc)
    if not ccs:
        raise UsageError(
            "no NVIDIA GPU with a known compute capability was detected", "pass --arch 8.6 (for example)"
        )
    return ArchTargets(backend="cuda", archs=_dedupe(ccs), origin="detected", skipped=tuple(skipped))


CGROUP_MEMORY_FILES = (
    "/sys/fs/cgroup/memory.max",  # cgroup v2
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",  # cgroup v1
)


def build_memory(total: int | None, read: Callable[[str], str | None]) -> int | None:
    """Memory a build may use: the machine's total, or the container's cgroup limit when lower.
    A `docker run -m 16g` build on a 512 GiB host must size MAX_JOBS for 16 GiB, or it is killed."""
    limits: list[int] = []
    for path in CGROUP_MEMORY_FILES:
        text = (read(path) or "").strip()
        if (text.isascii() and text.isdigit()):
            limits.append(int(text))  # "max" (v2) or a huge v1 number mean no limit
    candidates = [v for v in (total, *limits) if v is not None and v > 0]
    return min(candidates) if candidates else None


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(100)
    except OSError:
        return None


def ccache_env(ccache: str | None, backend: Backend) -> dict[str, str]:
    """Compiler launcher variables so CMake puts ccache in front of every compiler."""
    if not ccache:
        return {}
    langs = ["C", "CXX", "HIP" if backend == "rocm" else "CUDA"]
    return {f"CMAKE_{lang}_COMPILER_LAUNCHER": ccache for lang in langs}
