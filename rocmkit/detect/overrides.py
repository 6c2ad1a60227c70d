"""The ``ROCMKIT_*`` override variables: read, validate, apply (docs/detect.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rocmkit.arch import parse_gfx
from rocmkit.detect.merge import MatrixRef
from rocmkit.errors import UsageError
from rocmkit.machine import Gpu, NvidiaInfo, RocmInfo


@dataclass(frozen=True, kw_only=True)
class Overrides:
    """The ``ROCMKIT_*`` variables that replace probed facts (docs/detect.md)."""

    gfx: tuple[str, ...] = ()
    rocm_version: str | None = None
    amdgpu_version: str | None = None
    nvidia_driver: str | None = None
    cuda_version: str | None = None
    cuda_arch: str | None = None  # "9.0"
    no_gpu: bool = False
    probe_timeout_s: float | None = None
    raw: dict[str, str] = field(default_factory=dict)


_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def parse_overrides(env: Mapping[str, str]) -> Overrides:
    """Read and validate the override variables; a bad value is a UsageError naming it."""
    raw = {k: v for k, v in env.items() if k.startswith("ROCMKIT_") and k in _OVERRIDE_VARS}

    def version(var: str) -> str | None:
        value = raw.get(var, "").strip()
        if not value:
            return None
        if not _VERSION.match(value):
            raise UsageError(f"{var}={value!r} is not a version", f"use a version like 6.2.4, or unset {var}")
        return value

    gfx: list[str] = []
    for part in raw.get("ROCMKIT_GFX", "").split(","):
        if not part.strip():
            continue
        name = parse_gfx(part)
        if name is None or name != part.strip().lower():
            raise UsageError(
                f"ROCMKIT_GFX={raw['ROCMKIT_GFX']!r}: {part.strip()!r} is not a gfx target",
                "use names like gfx1100 or gfx90a,gfx942 (one per GPU)",
            )
        gfx.append(name)
    if not gfx and raw.get("ROCMKIT_GFX", "").strip():
        # ",,," names no GPU: silently resolving for this machine instead would be a wrong answer.
        raise UsageError(
            f"ROCMKIT_GFX={raw['ROCMKIT_GFX']!r} names no gfx target",
            "use names like gfx1100 or gfx90a,gfx942 (one per GPU), or unset ROCMKIT_GFX",
        )
    cuda_arch = None
    arch_raw = raw.get("ROCMKIT_CUDA_ARCH", "").strip()
    if arch_raw:
        m = re.match(r"^(?:sm_(\d)(\d+)|(\d+)\.(\d+))$", arch_raw)
        if not m:
            raise UsageError(
                f"ROCMKIT_CUDA_ARCH={arch_raw!r} is not a compute capability", "use 9.0 or sm_90"
            )
        cuda_arch = f"{m.group(1)}.{m.group(2)}" if m.group(1) else f"{m.group(3)}.{m.group(4)}"
    no_gpu_raw = raw.get("ROCMKIT_NO_GPU", "").strip().lower()
    if no_gpu_raw not in _TRUE | _FALSE:
        raise UsageError(f"ROCMKIT_NO_GPU={no_gpu_raw!r} is not a yes/no value", "use 1 or 0")
    timeout = None
    t_raw = raw.get("ROCMKIT_PROBE_TIMEOUT", "").strip()
    if t_raw:
        try:
            timeout = float(t_raw)
        except ValueError:
            timeout = -1.0
        if not 0 < timeout <= 600:
            raise UsageError(
                f"ROCMKIT_PROBE_TIMEOUT={t_raw!r} is not a number of seconds",
                "use a value like 10 (at most 600)",
            )
    return Overrides(
        gfx=tuple(gfx),
        rocm_version=version("ROCMKIT_ROCM_VERSION"),
        amdgpu_version=version("ROCMKIT_AMDGPU_VERSION"),
        nvidia_driver=version("ROCMKIT_NVIDIA_DRIVER"),
        cuda_version=version("ROCMKIT_CUDA_VERSION"),
        cuda_arch=cuda_arch,
        no_gpu=no_gpu_raw in _TRUE,
        probe_timeout_s=timeout,
        raw={k: v for k, v in sorted(raw.items()) if v.strip() and k != "ROCMKIT_PROBE_TIMEOUT"},
    )


_OVERRIDE_VARS = {
    "ROCMKIT_GFX",
    "ROCMKIT_ROCM_VERSION",
    "ROCMKIT_AMDGPU_VERSION",
    "ROCMKIT_NVIDIA_DRIVER",
    "ROCMKIT_CUDA_VERSION",
    "ROCMKIT_CUDA_ARCH",
    "ROCMKIT_NO_GPU",
    "ROCMKIT_PROBE_TIMEOUT",
}


def apply_overrides(
    gpus: list[Gpu], rocm: RocmInfo, nv: NvidiaInfo | None, ov: Overrides, matrix: MatrixRef
) -> tuple[list[Gpu], RocmInfo, NvidiaInfo | None]:
    if ov.no_gpu:
        gpus = []
    elif ov.gfx:
        amd_gpus = [g for g in gpus if g.vendor == "amd"]
        others = [g for g in gpus if g.vendor != "amd"]
        if amd_gpus and len(ov.gfx) not in (1, len(amd_gpus)):
            raise UsageError(
                f"ROCMKIT_GFX names {len(ov.gfx)} targets but this machine has {len(amd_gpus)} AMD GPUs",
                "give one target for all GPUs, or one per GPU in order",
            )
        if amd_gpus:
            archs = ov.gfx * len(amd_gpus) if len(ov.gfx) == 1 else ov.gfx
            amd_gpus = [
                replace(g, arch=a, sources=(*g.sources, "override"))
                for g, a in zip(amd_gpus, archs, strict=True)
            ]
        else:
            # Image builds: no GPU here, but the image is for these targets.
            m = matrix.get()
            amd_gpus = []
            for i, a in enumerate(ov.gfx):
                ga = m.gfx_arch(a) if m else None
                amd_gpus.append(
                    Gpu(
                        vendor="amd",
                        index=i,
                        arch=a,
                        integrated=ga.integrated if ga else None,
                        sources=("override",),
                    )
                )
        gpus = amd_gpus + others
    if ov.cuda_arch and not ov.no_gpu:
        arch = f"sm_{ov.cuda_arch.replace('.', '')}"
        nv_gpus = [g for g in gpus if g.vendor == "nvidia"]
        rest = [g for g in gpus if g.vendor != "nvidia"]
        if nv_gpus:
            nv_gpus = [
                replace(g, arch=arch, compute_capability=ov.cuda_arch, sources=(*g.sources, "override"))
                for g in nv_gpus
            ]
        else:
            nv_gpus = [
                Gpu(
                    vendor="nvidia",
                    index=0,
                    arch=arch,
                    compute_capability=ov.cuda_arch,
                    sources=("override",),
                )
            ]
        gpus = rest + nv_gpus
    if ov.rocm_version:
        rocm = replace(rocm, version=ov.rocm_version)
    if ov.amdgpu_version:
        rocm = replace(rocm, driver_version=ov.amdgpu_version)
    if ov.nvidia_driver or ov.cuda_version or ov.cuda_arch:
        nv = nv or NvidiaInfo()
        nv = replace(
            nv,
            driver_version=ov.nvidia_driver or nv.driver_version,
            cuda_version=ov.cuda_version or nv.cuda_version,
        )
    return gpus, rocm, nv
