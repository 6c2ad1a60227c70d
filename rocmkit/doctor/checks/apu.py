"""``env.apu_memory`` (level 0): what an integrated AMD GPU can use, and whether the kernel is AMD's.

On Strix Halo (gfx1151), Strix (gfx1150) and the Radeon 7x0M (gfx1103), the GPU computes on
system RAM mapped through GTT: the usable memory is the GTT/TTM limit (by default about half
the RAM), not the BIOS carve-out. This check gives the carve-out, the GTT limit and the RAM
with where each number came from, the settings found (``ttm.pages_limit``, the deprecated
``amdgpu.gttsize``, and ones that have no effect), and, where AMD documents one, whether the
kernel is at least the minimum for the arch (``matrices/apu.toml``). Nodes whose compute GPU
is discrete are left alone (``env.igpu`` covers an iGPU beside a dGPU).
"""

from __future__ import annotations

from typing import Any

from rocmkit.arch import base_arch
from rocmkit.doctor.checks import archs
from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status

GIB = 1024**3


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GIB:.1f} GiB"


RAISE = (
    "raise the TTM limit: `sudo amd-ttm --set <GB>` (pipx install amd-debug-tools), or "
    "`options ttm pages_limit=<GB x 262144>` in /etc/modprobe.d/ttm.conf, then reboot; keep the BIOS "
    "carve-out small (0.5 GB): AMD's RDNA3.5 system optimization guide (`amdgpu.gttsize` is deprecated "
    "in favour of ttm.pages_limit)"
)


@check(
    "env.apu_memory",
    level=0,
    description="Integrated AMD GPU (APU): usable GPU memory is the GTT/TTM limit, not the BIOS carve-out; "
    "the kernel meets AMD's minimum for the arch; settings that raise the limit take effect (#31)",
    options={"apu_min_gpu_bytes": "GPU memory an APU must be able to use (e.g. 100e9 for a 70B model in bf16)"},
)
def apu_memory(ctx: CheckContext) -> CheckResult:
    from rocmkit.doctor.apu import kernel_verdict, load_apu, memory, setting_findings

    m = ctx.machine
    amd = list(m.amd_gpus)
    kinds = [(g, archs.is_integrated(g)) for g in amd]
    apus = [g for g, k in kinds if k and g.visible]
    discrete = [g for g, k in kinds if k is False and g.visible]
    if not amd:
        return result(Status.SKIP, "no AMD GPU detected")
    if m.platform.wsl:
        # No amdgpu, TTM or WSL kernel limit applies: the Windows driver maps the memory.
        return result(Status.SKIP, "WSL2: the Windows driver manages the GPU's memory (env.wsl_memory)",
                      not_applicable="wsl")
    if not apus:
        return result(Status.SKIP, "no integrated AMD GPU does the compute here (a discrete GPU's memory is its VRAM)")
    if discrete:
        return result(Status.SKIP, f"discrete GPU(s) {', '.join(str(g.index) for g in discrete)} do the compute; "
                      "env.igpu covers the integrated one beside them")
    data = load_apu()
    need = ctx.options.get("apu_min_gpu_bytes")
    need_bytes = int(float(need)) if need is not None else None
    failures: list[str] = []
    warnings: list[str] = []
    remedies: list[str] = []
    parts: list[str] = []
    figures: list[Figure] = []
    per_gpu: list[dict[str, Any]] = []
    problems, notes = setting_findings(m)
    for g in apus:
        gfx = base_arch(g.arch) or "?"
        mem = memory(m, g, data)
        label = f"GPU {g.index} {gfx}{f' ({g.name})' if g.name else ''}"
        if mem.gtt is None:
            carve = f", not the {_gib(mem.carveout)} carve-out ({mem.carveout_from})" if mem.carveout else ""
            parts.append(
                f"{label}: usable memory is the GTT limit, not recorded here (by default about half the RAM){carve}"
            )
        else:
            parts.append(
                f"{label}: usable {_gib(mem.usable)} (GTT {_gib(mem.gtt)} from {mem.gtt_from}"
                + (f"; carve-out {_gib(mem.carveout)} from {mem.carveout_from}" if mem.carveout else "")
                + (f"; RAM {_gib(mem.ram)}" if mem.ram else "") + ")"
            )
        if mem.usable is not None:
            figures.append(Figure(name=f"gpu{g.index}.usable_memory", value=round(mem.usable / GIB, 2), unit="GiB",
                                  reference=None if mem.ram is None else round(mem.ram / GIB, 2)))
        ok, row = kernel_verdict(data, gfx, m.host.kernel, m.host.os_id)
        info: dict[str, Any] = {"gpu": g.index, "gfx": gfx, "usable_bytes": mem.usable, "gtt_bytes": mem.gtt,
                                "gtt_from": mem.gtt_from, "carveout_bytes": mem.carveout,
                                "carveout_from": mem.carveout_from, "ram_bytes": mem.ram}
        if row is not None:
            info["kernel_min"] = {"flavour": row.flavour, "version": row.version,
                                  "source": "; ".join(data.sources[s] for s in row.sources)}
        if ok is False and row is not None:
            failures.append(
                f"kernel {m.host.kernel} is older than {row.version}, the minimum AMD documents for {gfx} "
                f"({row.flavour} kernels): compute may fail to start or misbehave (KFD queue and memory limits)"
            )
            remedies.append(
                "install a kernel AMD supports for it: Ubuntu 24.04 OEM 6.14.0-1018 or later (linux-oem-24.04), "
                "HWE 6.17.0-19 or later, or 6.18.4 or later elsewhere (Fedora 43, Ubuntu 26.04 and Arch 2026.02 "
                "ship the fixes)"
            )
        elif ok is None and row is None and m.host.kernel:
            info["kernel_min"] = None  # AMD documents no minimum for this arch
        if need_bytes is not None and mem.usable is not None and mem.usable < need_bytes:
            warnings.append(f"{label} can use {_gib(mem.usable)}, less than the {_gib(need_bytes)} asked for "
                            "(--set apu_min_gpu_bytes)")
            remedies.append(RAISE)
        per_gpu.append(info)
    if problems:
        warnings.append("a GPU memory setting has no effect: " + "; ".join(problems))
        remedies.append("use ttm.pages_limit (pages of 4 KiB) on the kernel command line or in /etc/modprobe.d; "
                        "the amdgpu parameter is spelt gttsize and is deprecated. " + RAISE)
    details: dict[str, Any] = {"gpus": per_gpu, "settings": notes, "ignored_settings": problems,
                               "kernel": m.host.kernel}
    head = "; ".join(parts)
    remedy = " | ".join(dict.fromkeys(remedies)) or None
    if failures:
        return result(Status.FAIL, "; ".join(failures + warnings) + f" ({head})", remedy,
                      figures=tuple(figures), **details)
    if warnings:
        return result(Status.WARN, "; ".join(warnings) + f" ({head})", remedy, figures=tuple(figures), **details)
    tail = f"; settings: {', '.join(notes)}" if notes else ""
    return result(Status.PASS, head + tail, figures=tuple(figures), **details)
