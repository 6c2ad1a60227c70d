"""Text views of the matrix for ``rocmkit matrix check|show``."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from rocmkit.errors import UsageError
from rocmkit.matrix.fields import did_you_mean
from rocmkit.matrix.model import Fact, Matrix


def _mark(fact: Fact, field_name: str | None = None) -> str:
    return "" if fact.is_confirmed(field_name) else " (unconfirmed)"


def data_age(m: Matrix) -> str | None:
    """The newest date an index was read for torch.toml (its sources say "read YYYY-MM-DD")."""
    dates = re.findall(r"\bread (\d{4}-\d{2}-\d{2})\b", " ".join(m.sources.get("torch.toml", {}).values()))
    return max(dates) if dates else None


def origin_line(m: Matrix, folder: Path, origin: str, today: dt.date | None = None) -> str:
    """Which data is in use and how old it is."""
    line = f"data: {folder} ({origin})"
    read = data_age(m)
    if read:
        days = ((today or dt.date.today()) - dt.date.fromisoformat(read)).days
        line += f"; its index was read on {read} ({days} day{'s' if days != 1 else ''} ago)"
    if m.torch_releases:
        newest = m.torch_releases[-1]
        line += f"; newest torch {newest.version}" + (f" ({newest.released})" if newest.released else "")
    return line + "; `rocmkit matrix refresh --write` updates it"


def summary_lines(m: Matrix) -> list[str]:
    def weak(facts: list[Fact]) -> int:
        return sum(1 for f in facts if f.unconfirmed)

    variants = [v for r in m.torch_releases for v in r.variants]
    return [
        f"gfx.toml: {len(m.archs)} archs, {len(m.pci)} PCI ids "
        f"({weak([*m.archs.values(), *m.pci.values()])} with unconfirmed facts)",
        f"nvidia.toml: {len(m.nvidia_gpus)} GPU patterns, {len(m.cuda_toolkits)} CUDA driver minimums",
        f"torch.toml: {len(m.torch_releases)} releases "
        f"({m.torch_releases[0].version} to {m.torch_releases[-1].version}), {len(variants)} variants, "
        f"{len(m.rocm_indexes)} ROCm indexes ({weak([*m.torch_releases, *variants])} with unconfirmed facts)"
        if m.torch_releases
        else "torch.toml: no releases",
        f"rocm.toml: {len(m.rocm_releases)} ROCm releases ({weak(list(m.rocm_releases))} with unconfirmed facts)",
        # Each channel once, with its other names ("amd-nightly (therock)").
        "channels.toml: "
        + ", ".join(
            c.name + (f" ({', '.join(c.aliases)})" if c.aliases else "")
            for c in {c.name: c for c in m.channels.values()}.values()
        ),
    ]


def unconfirmed_lines(m: Matrix) -> list[str]:
    out: list[str] = []

    def add(file: str, what: str, fact: Fact) -> None:
        if fact.unconfirmed:
            fields = "whole entry" if "*" in fact.unconfirmed else ", ".join(fact.unconfirmed)
            out.append(f"{file}: {what}: {fields}")

    for arch in m.archs.values():
        add("gfx.toml", f"arch {arch.name}", arch)
    for dev in m.pci.values():
        add("gfx.toml", f"pci {dev.pci_id}", dev)
    for gpu in m.nvidia_gpus:
        add("nvidia.toml", f"gpu {gpu.pattern!r}", gpu)
    for cuda in m.cuda_toolkits:
        add("nvidia.toml", f"cuda {cuda.version}", cuda)
    for index in m.rocm_indexes.values():
        add("torch.toml", f"rocm_index {index.name}", index)
    for rel in m.torch_releases:
        add("torch.toml", f"release {rel.version}", rel)
        for v in rel.variants:
            add("torch.toml", f"release {rel.version} variant {v.index}", v)
    for rocm in m.rocm_releases:
        add("rocm.toml", f"release {rocm.version}", rocm)
    for chan in {c.name: c for c in m.channels.values()}.values():  # aliases name the same row
        add("channels.toml", f"channel {chan.name}", chan)
    return out


def releases_table(m: Matrix) -> list[str]:
    rows = [
        (
            rel.version,
            f"{rel.python_min}-{rel.python_max}",
            " ".join(v.rocm or "" for v in rel.of_kind("rocm")),
            " ".join(v.index for v in rel.of_kind("cuda")),
            "yes" if rel.variant("cpu") else "-",
        )
        for rel in reversed(m.torch_releases)
    ]
    header = ("torch", "python", "rocm", "cuda", "cpu")
    # Widths from the data, so a long variant list cannot push the columns out of line.
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(4)]
    return [
        " ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + " " + row[4]
        for row in (header, *rows)
    ]


def torch_lines(m: Matrix, spec: str) -> list[str]:
    releases = m.torch_series(spec)
    if not releases:
        known = sorted({r.series for r in m.torch_releases})
        raise UsageError(
            f"torch {spec} is not in the matrix{did_you_mean(spec, known)}", "run `rocmkit matrix show`"
        )
    out: list[str] = []
    for rel in releases:
        vision = f"{rel.torchvision}{_mark(rel, 'torchvision')}" if rel.torchvision else "unknown"
        audio = f"{rel.torchaudio}{_mark(rel, 'torchaudio')}" if rel.torchaudio else "unknown"
        out.append(
            f"torch {rel.version}: torchvision {vision}, torchaudio {audio}, Python {rel.python_min}-{rel.python_max}"
        )
        for v in rel.variants:
            line = f"  {v.index:<10}{_mark(v)}" + (" (Linux only)" if v.linux_only else "")
            if v.triton:
                line += f" triton: {v.triton}{_mark(v, 'triton')}"
            if v.archs:
                line += f" archs: {' '.join(v.archs)}"
            out.append(line.rstrip())
    return out


def gfx_lines(m: Matrix, name: str) -> list[str]:
    arch = m.gfx_arch(name)
    if arch is None:
        raise UsageError(
            f"{name} is not in gfx.toml{did_you_mean(name, m.archs)}", "run `rocmkit matrix show`"
        )
    kind = {True: "integrated", False: "discrete", None: "integrated or discrete"}[arch.integrated]
    out = [
        f"{arch.name}: {arch.generation}, family {arch.family}, {kind}{_mark(arch)}",
        f"  products: {', '.join(arch.products)}",
    ]
    ids = [f"{d.pci_id} {d.product}{_mark(d)}" for d in m.pci.values() if d.arch == arch.name]
    if ids:
        out.append("  PCI ids: " + "; ".join(ids))
    if arch.hsa_override:
        out.append(
            f"  runs {arch.override_arch} code with HSA_OVERRIDE_GFX_VERSION={arch.hsa_override}"
            f"{_mark(arch, 'hsa_override')}"
        )
    native, override = [], []
    for rel in reversed(m.torch_releases):
        for v in rel.of_kind("rocm"):
            tag = f"{rel.version}+{v.index}"
            if arch.name in v.archs:
                native.append(tag)
            elif arch.override_arch in v.archs:
                override.append(tag)
    out.append(f"  torch wheels with {arch.name} code: {', '.join(native) or 'none'}")
    if arch.hsa_override:
        out.append(f"  torch wheels usable through the override: {', '.join(override) or 'none'}")
    supported = [r.version + _mark(r, "supported") for r in m.rocm_releases if arch.name in r.supported]
    out.append(f"  ROCm releases that list it as supported: {', '.join(supported) or 'none in rocm.toml'}")
    for chan in {c.name: c for c in m.channels.values() if c.kind == "amd"}.values():
        said = "yes" if arch.name in chan.archs else "no"
        if chan.legacy_archs and (arch.name in chan.legacy_archs) != (arch.name in chan.archs):
            said += f" ({'yes' if arch.name in chan.legacy_archs else 'no'} on its older index {chan.legacy_url})"
        out.append(f"  AMD {chan.name} device-{arch.name} extra{_mark(chan, 'archs')}: {said}")
    for fam in m.family_indexes:
        if arch.name in fam.archs:
            out.append(f"  older TheRock per-family index (no new releases): {fam.name} {fam.url}")
    return out
