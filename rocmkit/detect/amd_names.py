"""Each AMD GPU's target, sub-family and family as AMD names them (rocm-bootstrap's
hierarchy, ``matrices/amd_targets.toml``): for ``rocmkit detect`` and its JSON."""

from __future__ import annotations

from typing import Any

from rocmkit.machine import Machine


def amd_names(machine: Machine) -> list[dict[str, Any]]:
    """One row per AMD GPU: ``{"gpu": 0, "target": "gfx1151", "sub_family": "gfx115x", ...}``;
    the levels are None for a target AMD's table does not list (or an unknown arch)."""
    if not machine.amd_gpus:
        # No row to name: `detect --json` on an NVIDIA or CPU host does not import and parse
        # the table (not in the compiled matrix: a TOML parse, 10-20 ms, on every run).
        return []
    from rocmkit.errors import DataError
    from rocmkit.matrix.amd_targets import load_amd_targets

    try:
        table = load_amd_targets()
    except DataError:
        table = None
    out: list[dict[str, Any]] = []
    for g in machine.amd_gpus:
        chain = table.lookup(g.arch) if table is not None and g.arch else None
        row: dict[str, Any] = {"gpu": g.index, "target": g.arch, "sub_family": None, "family": None}
        if chain is not None:
            row.update(chain.to_dict())
        out.append(row)
    return out


def hierarchy_lines(machine: Machine) -> list[str]:
    """ "GPU 0: gfx1031 gfx10_3 gfx10 (RDNA2)": as ``rocm-bootstrap-detect --hierarchy`` prints
    the chain, per GPU."""
    lines = []
    for row in amd_names(machine):
        if row["sub_family"] is None:
            lines.append(f"GPU {row['gpu']}: {row['target'] or 'unknown'} (not in AMD's target table)")
        else:
            lines.append(
                f"GPU {row['gpu']}: {row['target']} {row['sub_family']} {row['family']} ({row['sub_family_name']})"
            )
    return lines
