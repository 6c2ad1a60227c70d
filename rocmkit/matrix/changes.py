"""What a refresh changed, in words: ``torch 2.16.0 added: rocm7.14, cu132, cpu``.

A person reviewing the weekly pull request reads these lines before the diff; they are
computed from the old and new torch.toml / channels.toml documents (the parsed TOML), so
they say what changed in the facts, not in the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from packaging.version import InvalidVersion, Version


def _rows(doc: Mapping[str, Any], table: str, key: str) -> dict[str, dict[str, Any]]:
    return {str(r[key]): r for r in doc.get(table, []) if isinstance(r, dict) and key in r}


def _variants(row: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(v["index"]): v for v in row.get("variants", []) if isinstance(v, dict) and "index" in v}


def _key(version: str) -> tuple[int, Version | str]:
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def _whole(v: Mapping[str, Any]) -> bool:
    return "*" in v.get("unconfirmed", []) or v.get("confirmed") is False


def _listed(v: Mapping[str, Any]) -> str:
    return str(v["index"]) + (" (not yet confirmed)" if _whole(v) else "")


def torch_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    before, after = _rows(old, "release", "version"), _rows(new, "release", "version")
    for version in sorted(set(after) | set(before), key=_key):
        if version not in before:
            row = after[version]
            listed = ", ".join(_listed(v) for v in _variants(row).values()) or "no variants"
            out.append(f"torch {version} added: {listed}")
            continue
        if version not in after:
            out.append(f"torch {version} removed")
            continue
        was, now = _variants(before[version]), _variants(after[version])
        parts: list[str] = []
        added = [_listed(now[i]) for i in now if i not in was]
        if added:
            parts.append("variants added: " + ", ".join(added))
        gone = [i for i in was if i not in now]
        if gone:
            parts.append("variants removed: " + ", ".join(gone))
        confirmed = [i for i in now if i in was and _whole(was[i]) and not _whole(now[i])]
        if confirmed:
            parts.append("now confirmed: " + ", ".join(confirmed))
        doubted = [i for i in now if i in was and not _whole(was[i]) and _whole(now[i])]
        if doubted:
            parts.append("no longer confirmed: " + ", ".join(doubted))
        for i in now:
            if i in was and was[i].get("triton") != now[i].get("triton"):
                parts.append(f"{i} Triton {was[i].get('triton') or 'none'} -> {now[i].get('triton') or 'none'}")
        for field in ("torchvision", "torchaudio", "python_min", "python_max", "released"):
            a, b = before[version].get(field), after[version].get(field)
            if a != b:
                parts.append(f"{field} {a if a is not None else 'none'} -> {b if b is not None else 'none'}")
        if parts:
            out.append(f"torch {version}: " + "; ".join(parts))
    was_idx, now_idx = _rows(old, "rocm_index", "name"), _rows(new, "rocm_index", "name")
    for name in sorted(set(was_idx) | set(now_idx)):
        if name not in was_idx:
            out.append(f"ROCm index {name} added: {', '.join(now_idx[name].get('archs', []))}")
        elif name not in now_idx:
            out.append(f"ROCm index {name} removed")
        else:
            a, b = list(was_idx[name].get("archs", [])), list(now_idx[name].get("archs", []))
            if a != b:
                plus = [x for x in b if x not in a]
                minus = [x for x in a if x not in b]
                said = ", ".join([*(f"+{x}" for x in plus), *(f"-{x}" for x in minus)]) or "reordered"
                out.append(f"ROCm index {name} archs: {said}")
    return out


def _show(value: object) -> str:
    if value is None:
        return "none"
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def channel_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    was, now = _rows(old, "channel", "name"), _rows(new, "channel", "name")
    for name in sorted(set(was) | set(now)):
        if name not in was or name not in now:
            out.append(f"channel {name} {'added' if name in now else 'removed'}")
            continue
        for field in ("torch_min", "indexes", "archs", "legacy_archs", "python_min", "python_max"):
            a, b = was[name].get(field), now[name].get(field)
            if a != b:
                out.append(f"channel {name} {field}: {_show(a)} -> {_show(b)}")
    return out


def describe(
    old_torch: Mapping[str, Any],
    new_torch: Mapping[str, Any],
    old_channels: Mapping[str, Any],
    new_channels: Mapping[str, Any],
) -> list[str]:
    """Every fact that changed, one line each, releases oldest first."""
    return [*torch_changes(old_torch, new_torch), *channel_changes(old_channels, new_channels)]
