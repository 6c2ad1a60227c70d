"""Bounded loading of the JSON and TOML files other people send rocmkit.

Plans, locks, reports, bench results, a capture's ``env.json``: each comes
from another node or another person. Python's parsers recurse once per level
of nesting (a ``[[[[...`` file gives a RecursionError, or worse, a stack
overflow in the C scanner), accept ``NaN`` and ``Infinity`` (which later turn
into OverflowErrors and silently wrong comparisons), and read a file of any
size into memory. Every such load goes through here instead:

- a size cap, checked before the text is parsed;
- a nesting depth cap, checked by a linear scan before the recursive parser
  ever sees the text;
- no ``NaN`` / ``Infinity`` (JSON) and no non-finite float (TOML);
- one :class:`rocmkit.errors.DataError` (exit 5) that names the file and the
  fault, whatever went wrong, never a traceback.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

from rocmkit.errors import DataError, UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

# A plan is ~2 KiB and a doctor report ~100 KiB; 16 MiB leaves room for big fleets.
MAX_BYTES = 16 * 1024 * 1024
# The deepest file rocmkit writes nests 6 levels; 64 is generous and far from recursion limits.
MAX_DEPTH = 64


def _depth(text: str, *, quotes: str = '"', comments: bool = False) -> int:
    """Greatest nesting of ``[`` / ``{`` outside strings (linear, no recursion): one scanner for
    JSON (double-quoted strings only) and TOML (also single-quoted literal strings, which have no
    escapes, and ``#`` comments to the end of the line)."""
    depth = deepest = 0
    quote = ""
    escape = comment = False
    for ch in text:
        if comment:
            comment = ch != "\n"
        elif quote:
            if escape:
                escape = False
            elif ch == "\\" and quote == '"':
                escape = True
            elif ch == quote:
                quote = ""
        elif ch in quotes:
            quote = ch
        elif ch == "#" and comments:
            comment = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number rocmkit accepts (only finite numbers)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} is out of range for a number")
    return value


def _finite_toml_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _none_if_not_finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def tool_output_decoder() -> json.JSONDecoder:
    """A decoder for JSON that a tool printed (amd-smi, rocm-smi), found by ``raw_decode``
    among warnings: ``NaN``, ``Infinity``, floats out of range (``1e400``) and integers
    of absurd length become ``None`` (a missing value), so no caller ever meets a number
    it cannot convert."""
    return json.JSONDecoder(
        parse_constant=lambda _name: None, parse_float=_none_if_not_finite, parse_int=_none_if_huge
    )


def _none_if_huge(text: str) -> int | None:
    # Past 40 digits no tool prints a real quantity; past 4300, int() itself refuses.
    return int(text) if len(text) <= 40 else None


def _check_size(size: int, what: str, max_bytes: int) -> None:
    if size > max_bytes:
        raise DataError(
            f"{what} is {size} bytes, over rocmkit's limit of {max_bytes} bytes",
            "pass the file rocmkit wrote, not another one",
        )


def loads_json(text: str, what: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON ``text`` (from ``what``, named in errors) within the limits."""
    _check_size(len(text), what, max_bytes)
    if _depth(text) > max_depth:
        raise DataError(
            f"{what} nests deeper than {max_depth} levels", "pass the file rocmkit wrote, not another one"
        )
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{what} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            "pass the file rocmkit wrote, not another one",
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{what}: {exc}", "pass the file rocmkit wrote, not another one") from exc


def loads_toml(
    text: str, what: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> dict[str, Any]:
    """Parse TOML ``text`` within the limits."""
    _check_size(len(text), what, max_bytes)
    if _depth(text, quotes="\"'", comments=True) > max_depth:
        raise DataError(f"{what} nests deeper than {max_depth} levels", "fix the file")
    try:
        data: dict[str, Any] = tomllib.loads(text, parse_float=_finite_toml_float)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{what} is not valid TOML: {exc}", "fix the file") from exc
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{what}: {exc}", "fix the file") from exc


def read_text(path: Path, what: str | None = None, *, max_bytes: int = MAX_BYTES) -> str:
    """A user file's text: regular files only, at most ``max_bytes``, UTF-8.

    Raises :class:`DataError` for a file too big or not UTF-8, and
    :class:`rocmkit.errors.UsageError` for one that cannot be opened.
    """
    from rocmkit.util.boundedio import BoundedReadError, read_bounded

    label = what or str(path)
    try:
        data = read_bounded(Path(path), max_bytes=max_bytes)
    except BoundedReadError as exc:
        cls = DataError if exc.kind == "too-big" else UsageError
        raise cls(f"cannot read {label}: {exc}", exc.fix) from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{label} is not UTF-8 text (byte {exc.start})", "pass the file rocmkit wrote, not another one"
        ) from exc


def load_json_file(path: Path, what: str | None = None, *, max_bytes: int = MAX_BYTES) -> Any:
    label = what or str(path)
    return loads_json(read_text(path, label, max_bytes=max_bytes), label, max_bytes=max_bytes)


def load_toml_file(path: Path, what: str | None = None, *, max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    label = what or str(path)
    return loads_toml(read_text(path, label, max_bytes=max_bytes), label, max_bytes=max_bytes)
