"""The human view of a machine (``rocmkit detect`` without --json): GPUs, ROCm, NVIDIA, host,
devices, problems. It is the command's data, so it goes to stdout."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from rocmkit.machine import Machine

NO_GPU_TEXT = (
    "No GPU found. rocmkit will pick CPU-only PyTorch wheels (`rocmkit resolve`), and "
    "`rocmkit doctor` validates on the CPU: Triton kernels run in the interpreter "
    "(TRITON_INTERPRET=1) and torch.compile uses the CPU inductor backend."
)
NONE_VISIBLE_TEXT = (
    "GPUs are present but none is visible under the *_VISIBLE_DEVICES variables: "
    "PyTorch will run on the CPU until they are unset."
)


def _size(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _yn(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


def _health_line(machine: Machine) -> str:
    """One line on the GPUs' hardware facts (docs/hardware.md); the doctor's hw.* checks judge them."""
    hs = machine.health
    sources = sorted({s for h in hs for s in h.sources}) or ["nothing readable"]
    seen = []
    for h in hs:
        short = h.pci_bus_id[-7:]
        if h.link_width is not None and h.link_width_max and h.link_width < h.link_width_max:
            seen.append(f"{short} link x{h.link_width} of x{h.link_width_max}")
        ue = sum(v for k, v in h.ecc_uncorrectable.items() if not k.endswith("_lifetime"))
        if ue:
            seen.append(f"{short} {ue} uncorrectable ECC")
        if h.retired_pages:
            seen.append(f"{short} {h.retired_pages} retired pages")
        if h.throttle:
            seen.append(f"{short} throttling")
    found = "; ".join(seen) if seen else "no degraded link, ECC error or throttling seen"
    return f"{len(hs)} GPU(s) read ({', '.join(sources)}): {found}; `rocmkit doctor --only 'hw.*'` judges them"


def render(machine: Machine, console: Console | None = None) -> None:
    """Print the human view of ``machine`` (to stdout unless ``console`` says otherwise)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    # Piped output gets a fixed width so that it does not depend on who reads it.
    out = console or Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    out.print(f"[bold]rocmkit detect[/bold] (source: {escape(machine.source)})")
    if machine.gpus:
        table = Table(show_edge=False, pad_edge=False)
        for col in ("gpu", "arch", "name", "memory", "pci id", "bus", "igpu", "visible", "seen by"):
            table.add_column(col, overflow="fold", no_wrap=col not in ("name", "seen by"))
        for g in machine.gpus:
            table.add_row(
                f"{g.vendor} {g.index}",
                g.arch or "-",
                escape(g.name or "-"),
                _size(g.memory_bytes),
                g.pci_device_id or "-",
                g.pci_bus_id or "-",
                _yn(g.integrated),
                _yn(g.visible),
                ", ".join(g.sources) or "-",
            )
        out.print(table)
        from rocmkit.detect.amd_names import hierarchy_lines

        for line in hierarchy_lines(machine):
            out.print(f"AMD target / sub-family / family: {escape(line)}")
        if not machine.visible_gpus:
            out.print(f"[yellow]{NONE_VISIBLE_TEXT}[/yellow]")
    else:
        out.print(f"[yellow]{NO_GPU_TEXT}[/yellow]")

    r = machine.rocm
    rows: list[tuple[str, str]] = []
    installs = (
        "; ".join(f"{i.path} ({i.version or '?'}, from {i.source})" for i in r.installs) or "none found"
    )
    rows.append(("ROCm", f"release in use: {r.version or 'unknown'}; installs: {installs}"))
    driver = r.driver_version or ("version unknown" if r.driver_loaded else "-")
    rows.append(("amdgpu driver", f"{driver}, loaded: {_yn(r.driver_loaded)}"))
    if r.hip_version:
        rows.append(("HIP", r.hip_version))
    if machine.nvidia is not None:
        rows.append(
            (
                "NVIDIA driver",
                f"{machine.nvidia.driver_version or 'unknown'} (CUDA {machine.nvidia.cuda_version or 'unknown'})",
            )
        )
    h = machine.host
    rows.append(
        (
            "OS",
            f"{h.os_name or h.os_id or 'unknown'}; kernel {h.kernel or '?'} {h.arch or ''}; "
            f"glibc {h.glibc or '?'}; Python {h.python or '?'}",
        )
    )
    rows.append(("CPU", f"{h.cpu_model or 'unknown'} x {h.cpu_cores or '?'}; memory {_size(h.memory_bytes)}"))
    rows.append(("container", h.container or "none detected"))
    if machine.health:
        rows.append(("hardware", _health_line(machine)))
    pf = machine.platform
    if pf.wsl:
        rows.append(
            (
                "WSL2",
                f"from {', '.join(pf.wsl_signs)}; librocdxg: {', '.join(pf.librocdxg) or 'not found'}; "
                f"HSA_ENABLE_DXG_DETECTION={pf.dxg_detection or 'unset'}; "
                f"Windows driver: {pf.windows_driver or 'not visible (set ROCMKIT_WSL_DRIVER)'}"
                + (f"; shadowing: {', '.join(pf.shadowing_libs)}" if pf.shadowing_libs else ""),
            )
        )
    rows.append(
        (
            "user",
            f"{h.user or '?'} (uid {h.uid if h.uid is not None else '?'}); groups: {', '.join(h.groups) or '-'}",
        )
    )
    for d in h.devices:
        if not d.exists:
            rows.append((d.path, "missing (not used on WSL2)" if pf.wsl and d.path == "/dev/kfd" else "missing"))
            continue
        access = ("r" if d.readable else "-") + ("w" if d.writable else "-")
        rows.append((d.path, f"{d.mode or '?'} group {d.group or d.gid}; this user: {access}"))
    if machine.overrides:
        rows.append(("overrides", ", ".join(f"{k}={v}" for k, v in machine.overrides.items())))
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    for key, value in rows:
        grid.add_row(escape(key), escape(value))
    out.print(grid)
    if machine.problems:
        out.print("[bold]problems[/bold]")
        marks = {"error": ("x", "red"), "warning": ("!", "yellow"), "info": ("i", "blue")}
        for p in machine.problems:
            mark, style = marks.get(p.severity, ("!", "yellow"))
            out.print(Text.assemble(" ", (mark, style), f" [{p.source}] {p.message}"))
            if p.hint:
                out.print(Text(f"     fix: {p.hint}"))
    else:
        out.print("no problems found")
