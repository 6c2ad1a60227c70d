"""Write a matrix document back as TOML, in the layout the shipped files use.

The generator edits the parsed document (dicts and lists) and this renders it:
the file's leading comment block is kept verbatim, ``[sources]`` and scalar
tables come first, arrays of tables follow as ``[[name]]`` blocks, and a list
of tables inside a row (a release's ``variants``) is written one inline table
per line. Same document in, same bytes out, so a refresh over unchanged
sources changes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

# Per array-of-tables name, the order keys are written in (others follow, sorted).
KEY_ORDER: dict[str, tuple[str, ...]] = {
    "release": (
        "version",
        "torchvision",
        "torchaudio",
        "python_min",
        "python_max",
        "released",
        "sources",
        "confirmed",
        "unconfirmed",
        "note",
        "not_built",
        "not_built_sources",
        "variants",
    ),
    "rocm_index": (
        "name",
        "archs",
        "incomplete_archs",
        "incomplete_sources",
        "sources",
        "unconfirmed",
        "note",
    ),
    "channel": (
        "name",
        "aliases",
        "kind",
        "stream",
        "url",
        "all_arch_url",
        "legacy_url",
        "layout_from",
        "rocm",
        "description",
        "indexes",
        "torch_min",
        "archs",
        "legacy_archs",
        "python_min",
        "python_max",
        "packages",
        "sources",
        "confirmed",
        "unconfirmed",
        "note",
    ),
    "family_index": ("name", "url", "archs", "sources", "unconfirmed", "note"),
    # jax.toml
    "plugin": ("family", "backend", "major", "min_driver", "min_jaxlib", "plugin", "pjrt", "module",
               "entry_point", "platform", "extra", "sources", "confirmed", "unconfirmed", "note"),
    "plugin_archs": ("family", "version", "archs", "sources", "unconfirmed", "note"),
    "route": ("name", "backend", "index", "first", "needs_local_rocm", "description", "sources", "confirmed",
              "unconfirmed", "note"),
    "fix": ("name", "backend", "variable", "value", "libraries", "problem", "remedy", "sources", "confirmed",
            "unconfirmed", "note"),
    "torch_xla": ("version", "python_min", "python_max", "sources"),
}
VARIANT_ORDER = (
    "index",
    "triton",
    "interpreter_triton",
    "archs",
    "linux_only",
    "sources",
    "confirmed",
    "unconfirmed",
    "note",
)


def header_of(text: str) -> str:
    """The leading comment block (comments and blank lines before the first statement)."""
    lines = []
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            break
        lines.append(line)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n\n" if lines else ""


def scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        # JSON string escaping is valid TOML basic-string escaping for the text we hold.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {scalar(v)}" for k, v in _ordered(value, VARIANT_ORDER)) + " }"
    raise TypeError(f"cannot render {type(value).__name__}")


def _ordered(table: Mapping[str, Any], order: Sequence[str]) -> list[tuple[str, Any]]:
    keys = [k for k in order if k in table] + sorted(k for k in table if k not in order)
    return [(k, table[k]) for k in keys]


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def render(doc: Mapping[str, Any], *, header: str = "", top_order: Sequence[str] = ()) -> str:
    out: list[str] = [header] if header else []
    scalars = [(k, v) for k, v in doc.items() if not isinstance(v, dict) and not _is_table_array(v)]
    for key, value in scalars:
        out.append(f"{key} = {scalar(value)}\n")
    order = list(top_order) + [k for k in doc if k not in top_order]
    for key in order:
        value = doc.get(key)
        if isinstance(value, dict):
            out.append(f"\n[{key}]\n")
            for k, v in value.items():
                out.append(f"{k} = {scalar(v)}\n")
        elif isinstance(value, list) and _is_table_array(value):
            for row in value:
                out.append(f"\n[[{key}]]\n")
                for k, v in _ordered(row, KEY_ORDER.get(key, ())):
                    if _is_table_array(v):
                        out.append(f"{k} = [\n" + "".join(f"  {scalar(item)},\n" for item in v) + "]\n")
                    else:
                        out.append(f"{k} = {scalar(v)}\n")
    return "".join(out)
