"""Which GPUs the runtimes will use under ROCR_/HIP_/CUDA_VISIBLE_DEVICES."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from rocmkit.machine import Gpu, Problem


def _select(gpus: list[Gpu], spec: str) -> list[Gpu]:
    """CUDA/HIP semantics: indices or UUIDs, comma-separated; the list ends at the first invalid entry."""
    chosen: list[Gpu] = []
    for raw in spec.split(","):
        item = raw.strip()
        if re.fullmatch(r"[0-9]{1,9}", item):  # ASCII and short: int() of 5000 digits raises
            idx = int(item)
            if idx >= len(gpus):
                break
            chosen.append(gpus[idx])
            continue
        hit = next(
            (
                g
                for g in gpus
                if g.uuid and item and (g.uuid.lower() == item.lower() or g.uuid.startswith(item))
            ),
            None,
        )
        if hit is None:
            break
        chosen.append(hit)
    return chosen


def apply_visibility(gpus: Sequence[Gpu], env: Mapping[str, str], problems: list[Problem]) -> tuple[Gpu, ...]:
    """Mark GPUs hidden by ROCR_VISIBLE_DEVICES, then HIP_VISIBLE_DEVICES (or CUDA_VISIBLE_DEVICES),
    for AMD; CUDA_VISIBLE_DEVICES for NVIDIA."""
    visible: set[tuple[str, int]] = set()
    for vendor in ("amd", "nvidia"):
        mine = [g for g in gpus if g.vendor == vendor]
        current = mine
        used: list[str] = []
        chain = (
            ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES") if vendor == "amd" else ("CUDA_VISIBLE_DEVICES",)
        )
        for name in chain:
            var = name
            if var == "HIP_VISIBLE_DEVICES" and var not in env:
                var = "CUDA_VISIBLE_DEVICES"  # HIP honours it when HIP_VISIBLE_DEVICES is unset
            spec = env.get(var)
            if spec is None:
                continue
            current = _select(current, spec)
            used.append(f"{var}={spec}")
        visible.update((g.vendor, g.index) for g in current)
        if mine and not current:
            problems.append(
                Problem(
                    source="environment",
                    message=f"{' '.join(used)} hides every {vendor.upper()} GPU",
                    hint=f"unset {' and '.join(u.split('=')[0] for u in used)} to use them",
                    severity="warning",
                )
            )
    return tuple(replace(g, visible=(g.vendor, g.index) in visible) for g in gpus)
