"""The ``ROCMKIT_*`` override variables, and AMD's ``ROCM_BOOTSTRAP_*`` ones: read, validate,
apply (docs/detect.md).

AMD's rocm-bootstrap (PyPI; its ``detect.py`` is recorded in
tests/data/upstream/rocm-bootstrap) reads two variables, in this order:
``ROCM_BOOTSTRAP_DISABLE_DETECTION=1`` (exactly "1") reports no AMD GPU at all, else
``ROCM_BOOTSTRAP_FORCE_GFX_ARCH`` (a comma list, one target per GPU, "gfx942,gfx942" for
two MI300X) replaces detection. rocmkit honours both the same way, so a node set up for
AMD's wheels resolves the same here; rocmkit's own ``ROCMKIT_NO_GPU`` and ``ROCMKIT_GFX``
are the more explicit settings and win over them (a disagreement is reported).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rocmkit.arch import parse_cc, parse_gfx, sm_name
from rocmkit.detect.merge import MatrixRef
from rocmkit.errors import UsageError
from rocmkit.machine import Gpu, NvidiaInfo, Problem, RocmInfo

BOOTSTRAP_FORCE = "ROCM_BOOTSTRAP_FORCE_GFX_ARCH"
BOOTSTRAP_DISABLE = "ROCM_BOOTSTRAP_DISABLE_DETECTION"
BOOTSTRAP_VARS = (BOOTSTRAP_FORCE, BOOTSTRAP_DISABLE)


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
    # AMD's rocm-bootstrap contract: the forced targets (one per GPU, as listed), and
    # DISABLE_DETECTION=1 (no AMD GPU). Empty / False when unset or overridden by ROCMKIT_*.
    bootstrap_gfx: tuple[str, ...] = ()
    bootstrap_disabled: bool = False
    notes: tuple[str, ...] = ()  # why a ROCM_BOOTSTRAP_* variable was not applied
    raw: dict[str, str] = field(default_factory=dict)

    def problems(self) -> list[Problem]:
        return [Problem(source="overrides", message=n, severity="warning") for n in self.notes]


_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?$")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def parse_overrides(env: Mapping[str, str]) -> Overrides:
    """Read and validate the override variables; a bad value is a UsageError naming it."""
    raw = {k: v for k, v in env.items() if k in _OVERRIDE_VARS or k in BOOTSTRAP_VARS}

    def version(var: str) -> str | None:
        value = raw.get(var, "").strip()
        if not value:
            return None
        if not _VERSION.match(value):
            raise UsageError(f"{var}={value!r} is not a version", ("use a version like 6.2.4", f"unset {var}"))
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
            ("use names like gfx1100 or gfx90a,gfx942 (one per GPU)", "unset ROCMKIT_GFX"),
        )
    cuda_arch = None
    arch_raw = raw.get("ROCMKIT_CUDA_ARCH", "").strip()
    if arch_raw:
        cuda_arch = parse_cc(arch_raw)
        if cuda_arch is None:
            raise UsageError(
                f"ROCMKIT_CUDA_ARCH={arch_raw!r} is not a compute capability", "use 9.0 or sm_90"
            )
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
    no_gpu = no_gpu_raw in _TRUE
    boot_gfx, boot_off, notes = _bootstrap(raw, rocmkit_gfx=tuple(gfx), no_gpu=no_gpu)
    return Overrides(
        gfx=tuple(gfx),
        rocm_version=version("ROCMKIT_ROCM_VERSION"),
        amdgpu_version=version("ROCMKIT_AMDGPU_VERSION"),
        nvidia_driver=version("ROCMKIT_NVIDIA_DRIVER"),
        cuda_version=version("ROCMKIT_CUDA_VERSION"),
        cuda_arch=cuda_arch,
        no_gpu=no_gpu,
        probe_timeout_s=timeout,
        bootstrap_gfx=boot_gfx,
        bootstrap_disabled=boot_off,
        notes=notes,
        raw={k: v for k, v in sorted(raw.items()) if v.strip() and k != "ROCMKIT_PROBE_TIMEOUT"},
    )


def _bootstrap(
    raw: Mapping[str, str], *, rocmkit_gfx: tuple[str, ...], no_gpu: bool
) -> tuple[tuple[str, ...], bool, tuple[str, ...]]:
    """AMD's two variables, read as rocm-bootstrap 0.3.0 reads them (detect.py): DISABLE only
    when exactly "1", FORCE when non-empty, its entries stripped and empty ones skipped, each
    one a target AMD lists (matrices/amd_targets.toml; rocm-bootstrap raises on others)."""
    disabled = raw.get(BOOTSTRAP_DISABLE) == "1"
    forced_raw = raw.get(BOOTSTRAP_FORCE) or ""
    forced: tuple[str, ...] = ()
    if forced_raw and not disabled:
        from rocmkit.matrix.amd_targets import load_amd_targets

        known = load_amd_targets()
        names = [p.strip() for p in forced_raw.split(",") if p.strip()]
        for name in names:
            if name not in known.targets:
                raise UsageError(
                    f"{BOOTSTRAP_FORCE}={forced_raw!r}: {name!r} is not a target AMD's rocm-bootstrap knows",
                    ("use AMD's target names, one per GPU (e.g. gfx942,gfx1100)", f"unset {BOOTSTRAP_FORCE}"),
                )
        forced = tuple(names)
    notes: list[str] = []
    if no_gpu and (disabled or forced):
        notes.append(f"ROCMKIT_NO_GPU=1 wins over {BOOTSTRAP_DISABLE if disabled else BOOTSTRAP_FORCE}")
        return (), False, tuple(notes)
    if rocmkit_gfx and (disabled or forced):
        what = f"{BOOTSTRAP_DISABLE}=1" if disabled else f"{BOOTSTRAP_FORCE}={forced_raw}"
        if forced and tuple(dict.fromkeys(forced)) == tuple(dict.fromkeys(rocmkit_gfx)):
            return (), False, ()
        notes.append(
            f"ROCMKIT_GFX={','.join(rocmkit_gfx)} wins over {what}; AMD's own tools (rocm-bootstrap, its "
            "variant plugin) still see the latter: set both alike"
        )
        return (), False, tuple(notes)
    return forced, disabled, ()


def _forced(gpus: list[Gpu], targets: tuple[str, ...], matrix: MatrixRef) -> list[Gpu]:
    """ROCM_BOOTSTRAP_FORCE_GFX_ARCH replaces the AMD GPUs with the listed targets, one GPU
    each, as rocm-bootstrap does. Where the count matches the detected AMD GPUs, each keeps
    what detection knew of it (name, memory, PCI id) and takes the listed target in order."""
    amd = [g for g in gpus if g.vendor == "amd"]
    others = [g for g in gpus if g.vendor != "amd"]
    tag = "override"
    if len(amd) == len(targets):
        forced = [replace(g, arch=t, sources=(*g.sources, tag)) for g, t in zip(amd, targets, strict=True)]
    else:
        m = matrix.get()
        forced = []
        for i, t in enumerate(targets):
            ga = m.gfx_arch(t) if m else None
            forced.append(
                Gpu(vendor="amd", index=i, arch=t, integrated=ga.integrated if ga else None, sources=(tag,))
            )
    return forced + others


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
    elif ov.bootstrap_disabled:
        # rocm-bootstrap then reports no AMD GPU; it never looks at other vendors.
        gpus = [g for g in gpus if g.vendor != "amd"]
    elif ov.bootstrap_gfx:
        gpus = _forced(gpus, ov.bootstrap_gfx, matrix)
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
        arch = sm_name(ov.cuda_arch)
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
