"""An install that pip or uv cannot resolve against the guard, said plainly.

uv ends with "... your requirements are unsatisfiable", pip with ``ResolutionImpossible`` and a
list of what conflicted; neither says that a pin came from rocmkit's guard, nor what to do. The
message here names the guard's pin the installer met, the packages that wanted another build,
the installer's own reason, and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

from rocmkit.errors import ToolError
from rocmkit.packages import parse_pin, requirement_name

UNSOLVABLE = (
    "No solution found",
    "unsatisfiable",
    "ResolutionImpossible",
    "conflicting dependencies",
    "Cannot install",
)


def _pins(files: tuple[Path, ...]) -> list[str]:
    pins: list[str] = []
    for path in files:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        pins += [str(pin) for line in lines if (pin := parse_pin(line.split("#", 1)[0].strip()))]
    return list(dict.fromkeys(pins))


def _reason(text: str) -> str:
    """The installer's one line that explains the conflict."""
    lines = [re.sub(r"^[\s│╰─▶×|]+", "", line).strip() for line in text.splitlines()]
    for key in ("Because", "The conflict is caused by", "requires", "depends on"):
        found = [line for line in lines if key in line]
        if found:
            return " ".join(found)[:400]
    return next((line for line in lines if line), "")[:400]


def guard_conflict(
    step: str, text: str, requested: tuple[str, ...], guard_files: tuple[Path, ...]
) -> ToolError | None:
    """The error for an install that cannot be resolved against the guard's pins, or None when
    ``text`` is another failure (or no guard pin is involved)."""
    if not any(needle in text for needle in UNSOLVABLE):
        return None
    pins = _pins(guard_files)
    named = [p for p in pins if p in text] or [
        p for p in pins if (pin := parse_pin(p)) and re.search(rf"\b{re.escape(pin.name)}\b", text)
    ]
    if not named:
        return None
    guarded = {parse_pin(p).project for p in pins if parse_pin(p)}  # type: ignore[union-attr]
    asked = [
        r
        for r in requested
        if (name := requirement_name(r)) and name not in guarded and re.search(rf"\b{re.escape(name)}\b", text)
    ]
    requested_pins = {str(pin) for r in requested if (pin := parse_pin(r))}
    if not asked and all(p in requested_pins for p in named):
        # The install asks for exactly the guarded builds and nothing else is named: the plan's
        # own closure does not resolve (a dependency the index lacks), and the guard, which
        # pins the same builds, is not why. The installer's own words say more.
        return None
    what = ", ".join(asked) or "the requested packages"
    where = ", ".join(str(f) for f in guard_files)
    return ToolError(
        f"{step}: {what} cannot be installed beside the guard's {', '.join(named)} ({where}): {_reason(text)}",
        (
            f"ask for a version of {what} that works with {named[0]}: --with '{asked[0] if asked else 'PKG'}<X'",
            "rocmkit install --torch X.Y   # move this environment to the torch it needs (and its guard)",
        ),
    )


def unresolvable(step: str, text: str) -> ToolError | None:
    """The error for an install whose own packages do not resolve (a dependency the index lacks,
    at any version that fits), or None when ``text`` is another failure: the installer's
    explanation, not only its last line ("... your requirements are unsatisfiable")."""
    if not any(needle in text for needle in UNSOLVABLE):
        return None
    return ToolError(
        f"{step} could not resolve the planned packages: {_reason(text)}",
        "the index lacks a package (or a version) they require: check the index (--index-base), "
        "or point --fallback-index / a wheelhouse at a source that holds it",
    )
