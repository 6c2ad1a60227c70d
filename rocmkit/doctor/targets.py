"""Which GPU architectures ``triton.codegen`` compiles for, and how to read a compiler crash."""

from __future__ import annotations

from rocmkit.arch import override_to_gfx, strip_features
from rocmkit.doctor.registry import CheckContext


def crash_line(stderr: str) -> str:
    """The telling line of a compiler crash: LLVM's own error, not its DAG dump."""
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    for ln in lines:
        if "LLVM ERROR" in ln or ln.startswith(("error:", "Assertion")):
            return ln[:300]
    return lines[-1][:300] if lines else "no output"


def codegen_targets(ctx: CheckContext) -> list[str]:
    """``codegen_targets`` from the options (image builds: "gfx942,sm_90"), else every
    distinct architecture of this node's visible GPUs."""
    from rocmkit.kernels.sizes import merged_options

    raw = merged_options(ctx.options, ctx.env).get("codegen_targets")
    if raw:
        items = raw.split(",") if isinstance(raw, str) else [str(x) for x in raw]
        return list(dict.fromkeys(i.strip() for i in items if i.strip()))
    found: list[str] = []
    # With HSA_OVERRIDE_GFX_VERSION the runtime reports (and Triton compiles for) the
    # override's ISA, not the chip's own.
    override = override_to_gfx(
        ctx.env.get("HSA_OVERRIDE_GFX_VERSION") or ctx.machine.env.get("HSA_OVERRIDE_GFX_VERSION")
    )
    for gpu in ctx.machine.visible_gpus:
        if gpu.vendor == "amd" and (override or gpu.arch):
            found.append(override or strip_features(gpu.arch or ""))
        elif gpu.vendor == "nvidia" and gpu.compute_capability:
            found.append(gpu.compute_capability)
        elif gpu.vendor == "nvidia" and gpu.arch:
            found.append(gpu.arch)
    if not found:
        # An image build has no GPU, but often says which archs it is for.
        archs = ctx.env.get("PYTORCH_ROCM_ARCH") or ctx.machine.env.get("PYTORCH_ROCM_ARCH") or ""
        found = [strip_features(a) for a in archs.replace(",", ";").split(";") if a.strip()]
    return list(dict.fromkeys(found))
