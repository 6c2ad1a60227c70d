"""Which GPU architectures ``triton.codegen`` compiles for, and how to read a compiler crash."""

from __future__ import annotations

from rocmkit.doctor.registry import CheckContext


def crash_line(stderr: str) -> str:
    """The telling line of a compiler crash: LLVM's own error, not its DAG dump."""
    lines = [ln.strip() for ln in (stderr or "").splitlines() if ln.strip()]
    for ln in lines:
        if "LLVM ERROR" in ln or ln.startswith(("error:", "Assertion")):
            return ln[:300]
    return lines[-1][:300] if lines else "no output"


def override_arch(value: str | None) -> str | None:
    """``gfx1030`` for HSA_OVERRIDE_GFX_VERSION=10.3.0, ``gfx90a`` for 9.0.10 (the stepping
    is one hex digit); None when unset or malformed."""
    if not value:
        return None
    parts = value.strip().split(".")
    if len(parts) != 3 or not all((p.isascii() and p.isdigit()) for p in parts):
        return None
    major, minor, step = (int(p) for p in parts)
    if step > 15 or minor > 9:
        return None
    return f"gfx{major}{minor}{step:x}"


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
    override = override_arch(
        ctx.env.get("HSA_OVERRIDE_GFX_VERSION") or ctx.machine.env.get("HSA_OVERRIDE_GFX_VERSION")
    )
    for gpu in ctx.machine.visible_gpus:
        if gpu.vendor == "amd" and (override or gpu.arch):
            found.append(override or (gpu.arch or "").split(":", 1)[0])
        elif gpu.vendor == "nvidia" and gpu.compute_capability:
            found.append(gpu.compute_capability)
        elif gpu.vendor == "nvidia" and gpu.arch:
            found.append(gpu.arch)
    if not found:
        # An image build has no GPU, but often says which archs it is for.
        archs = ctx.env.get("PYTORCH_ROCM_ARCH") or ctx.machine.env.get("PYTORCH_ROCM_ARCH") or ""
        found = [a.split(":", 1)[0].strip() for a in archs.replace(",", ";").split(";") if a.strip()]
    return list(dict.fromkeys(found))
