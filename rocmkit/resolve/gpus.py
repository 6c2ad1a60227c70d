"""Which of the machine's AMD GPUs a given set of compiled archs can drive, and how.

A wheel carries device code for a fixed list of gfx targets. A GPU runs it
natively when its arch is listed, or through HSA_OVERRIDE_GFX_VERSION when a
sibling of the same family is listed. The override is process-wide: every GPU
in the process is then treated as the override's arch, so GPUs of another arch
must be hidden (HIP_VISIBLE_DEVICES). :func:`assess` makes that choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rocmkit.arch import override_to_gfx
from rocmkit.machine import Gpu, Machine
from rocmkit.matrix import GfxArch, Matrix
from rocmkit.resolve.explain import Notes


@dataclass(frozen=True, kw_only=True)
class AmdGpu:
    """One AMD GPU as the resolver sees it."""

    ordinal: int  # HIP device number among the machine's AMD GPUs
    gpu: Gpu
    arch: str | None
    arch_from: str  # "detected" or "PCI id 0x7550"
    info: GfxArch | None
    integrated: bool

    @property
    def label(self) -> str:
        name = self.gpu.name or (self.info.products[0] if self.info and self.info.products else None)
        parts = [p for p in (self.arch, name) if p]
        return f"GPU {self.ordinal} ({', '.join(parts) or 'unknown'})"


@dataclass(frozen=True, kw_only=True)
class Use:
    gpu: AmdGpu
    how: Literal["native", "override"]
    code_arch: str  # the arch whose code runs ("gfx1030" for a gfx1031)


@dataclass(frozen=True, kw_only=True)
class Assessment:
    usable: tuple[Use, ...]
    unusable: tuple[tuple[AmdGpu, str], ...]  # (gpu, why)
    override: str | None  # HSA_OVERRIDE_GFX_VERSION to set

    @property
    def primary_usable(self) -> int:
        return sum(1 for u in self.usable if not u.gpu.integrated)

    @property
    def native(self) -> int:
        return sum(1 for u in self.usable if u.how == "native")

    def score(self) -> tuple[int, int, int]:
        return (self.primary_usable, len(self.usable), self.native)


def amd_gpus(machine: Machine, matrix: Matrix) -> tuple[AmdGpu, ...]:
    """The visible AMD GPUs, with their arch filled in from the PCI id where detection lacked it.

    ``ordinal`` is the number HIP_VISIBLE_DEVICES uses. HIP numbers the GPUs that
    ROCR_VISIBLE_DEVICES leaves (Slurm sets it for each job), so under
    ROCR_VISIBLE_DEVICES alone the ordinals count visible GPUs only. A plan's
    HIP_VISIBLE_DEVICES replaces any existing one, so that one does not renumber.
    """
    renumbered = "ROCR_VISIBLE_DEVICES" in machine.env and "HIP_VISIBLE_DEVICES" not in machine.env
    out: list[AmdGpu] = []
    visible_seen = 0
    for position, gpu in enumerate(machine.amd_gpus):
        if not gpu.visible:
            continue
        ordinal = visible_seen if renumbered else position
        visible_seen += 1
        arch, arch_from = gpu.arch, "detected"
        if arch is None and gpu.pci_device_id:
            dev = matrix.pci_device(gpu.pci_device_id)
            if dev is not None:
                arch, arch_from = dev.arch, f"PCI id {dev.pci_id} ({dev.product})"
        info = matrix.gfx_arch(arch) if arch else None
        integrated = gpu.integrated
        if integrated is None and gpu.pci_device_id:
            dev = matrix.pci_device(gpu.pci_device_id)
            integrated = dev.integrated if dev is not None else None
        if integrated is None and info is not None:
            integrated = info.integrated
        out.append(
            AmdGpu(
                ordinal=ordinal,
                gpu=gpu,
                arch=arch.lower() if arch else None,
                arch_from=arch_from,
                info=info,
                integrated=bool(integrated),
            )
        )
    return tuple(out)


def assess(gpus: Sequence[AmdGpu], archs: Sequence[str], *, allow_override: bool = True) -> Assessment:
    """The best way to run ``archs`` code on ``gpus``: with no override, or with one override value."""
    listed = set(archs)

    def why_not(g: AmdGpu) -> str:
        if g.arch is None:
            return "its gfx arch is unknown (set ROCMKIT_GFX if you know it)"
        return f"{g.arch} is not among the wheel's archs and has no same-family override that is"

    # Option 1: no override; only natively listed archs run.
    options: list[Assessment] = [
        Assessment(
            usable=tuple(
                Use(gpu=g, how="native", code_arch=g.arch) for g in gpus if g.arch in listed and g.arch
            ),
            unusable=tuple((g, why_not(g)) for g in gpus if g.arch not in listed),
            override=None,
        )
    ]
    # Option 2: one override value; its arch must be listed, and every GPU that
    # is neither that arch nor overridable to it must be hidden.
    if allow_override:
        values = {
            g.info.hsa_override
            for g in gpus
            if g.info and g.info.hsa_override and g.arch not in listed and g.info.override_arch in listed
        }
        for value in sorted(values):
            usable: list[Use] = []
            unusable: list[tuple[AmdGpu, str]] = []
            for g in gpus:
                target = g.info.override_arch if g.info else None
                if g.info and g.info.hsa_override == value:
                    usable.append(Use(gpu=g, how="override", code_arch=target or ""))
                elif g.arch and target is None and g.arch == override_to_gfx(value):
                    usable.append(Use(gpu=g, how="native", code_arch=g.arch))
                elif g.arch in listed:
                    unusable.append(
                        (
                            g,
                            f"HSA_OVERRIDE_GFX_VERSION={value} applies to every GPU and would misdescribe its {g.arch}",
                        )
                    )
                else:
                    unusable.append((g, why_not(g)))
            options.append(Assessment(usable=tuple(usable), unusable=tuple(unusable), override=value))
    # Most discrete GPUs, then most GPUs, then the fewest overrides.
    return max(options, key=lambda a: (*a.score()[:2], a.override is None))


def describe(gpus: Sequence[AmdGpu]) -> str:
    """ "GPU 0 (gfx1031, AMD Radeon RX 6800M)"; identical GPUs are grouped: "8 x gfx942 (GPUs 0-7, ...)"."""
    groups: dict[tuple[str | None, str | None], list[AmdGpu]] = {}
    for g in gpus:
        groups.setdefault((g.arch, g.gpu.name), []).append(g)
    parts: list[str] = []
    for (arch, name), members in groups.items():
        if len(members) == 1:
            parts.append(members[0].label)
        else:
            ids = ",".join(str(g.ordinal) for g in members)
            parts.append(f"{len(members)} x {arch or 'unknown'} (GPUs {ids}{', ' + name if name else ''})")
    return ", ".join(parts)


def hide_unusable(
    fit: Assessment, machine: Machine, notes: Notes, what: str, *, build: str = "wheel"
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The GPUs ``what`` ("torch 2.5.1+rocm6.2", "jax-rocm7-plugin 0.9.1") cannot run, hidden behind
    HIP_VISIBLE_DEVICES when others can, so that they cannot break those: the variable to set (none
    when nothing is hidden) and the plan's ``unsupported_gpus`` lines, each GPU warned about.
    ``build`` names what the reasons call the wheel ("plugin")."""
    lacking = [(gpu, why.replace("wheel", build)) for gpu, why in fit.unusable]
    if not fit.usable:
        for gpu, why in lacking:
            notes.warn(f"{gpu.label} will not work with {what}: {why}")
        return {}, tuple(f"{gpu.label}: {why}" for gpu, why in lacking)
    visible = ",".join(str(u.gpu.ordinal) for u in sorted(fit.usable, key=lambda u: u.gpu.ordinal))
    for gpu, why in lacking:
        notes.warn(
            f"{gpu.label} will not work with {what}: {why}; HIP_VISIBLE_DEVICES={visible} "
            "hides it so that it cannot break the others"
        )
    if not lacking:
        return {}, ()
    if "HIP_VISIBLE_DEVICES" in machine.env:
        notes.warn(f"HIP_VISIBLE_DEVICES={machine.env['HIP_VISIBLE_DEVICES']} is set here; the plan replaces it")
    hidden = f"hidden with HIP_VISIBLE_DEVICES={visible}"
    return {"HIP_VISIBLE_DEVICES": visible}, tuple(f"{gpu.label}: {why}; {hidden}" for gpu, why in lacking)
