"""The ``--set`` options of the kernel checks: what kind of value each takes, and how a
value from the command line, the environment or a declaration is read and refused.

A refusal is one :class:`~rocmkit.errors.UsageError`: ``kernel option KEY=VALUE is not
WANT`` and the fix. No torch, no triton.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rocmkit.errors import UsageError

# How an option's value is read: a positive integer, one that is also a power of two, a
# shape ("4096x4096x4096" or a list of ``rank`` positive integers), dtype names out of
# ``choices`` (comma-separated), or a fraction in [0, 1].
KINDS = ("positive_int", "power_of_two", "shape", "dtypes", "fraction")


@dataclass(frozen=True, kw_only=True)
class Option:
    """A ``--set`` key (and ``ROCMKIT_KERNEL_<KEY>`` variable) a check reads."""

    key: str
    help: str
    kind: str  # one of KINDS
    gpu: Any  # the default on a GPU backend, already parsed; None: the kernel's own choice
    interpreter: Any  # the default under the Triton interpreter (backend "cpu")
    rank: int = 0  # shape: how many integers
    choices: tuple[str, ...] = ()  # dtypes: the names allowed
    interpreter_choices: tuple[str, ...] = ()  # dtypes: those the interpreter can compute in

    def default(self, backend: str) -> Any:
        return self.interpreter if backend == "cpu" else self.gpu

    def parse(self, value: Any, backend: str) -> Any:
        """``value`` (from ``--set``, the environment or a declaration) as this option's type;
        a bad one is a :class:`UsageError` saying what it should be."""
        if self.kind == "positive_int":
            return self._positive_int(value)
        if self.kind == "power_of_two":
            number = self._positive_int(value)
            if number & (number - 1):
                raise self._bad(value, "a power of two")
            return number
        if self.kind == "shape":
            parts: Any = value
            if isinstance(value, str):
                parts = [p for p in value.replace("x", ",").split(",") if p.strip()]
            if not isinstance(parts, (list, tuple)) or len(parts) != self.rank:
                raise self._bad(value, f"{self.rank} positive integers")
            return tuple(self._positive_int(p) for p in parts)
        if self.kind == "dtypes":
            return self._dtypes(value, backend)
        return self._fraction(value)

    def _bad(self, value: Any, want: str) -> UsageError:
        return UsageError(
            f"kernel option {self.key}={value!r} is not {want}",
            f"pass {self.key} as {want} ({self.help})",
        )

    def _positive_int(self, value: Any) -> int:
        if isinstance(value, bool):
            raise self._bad(value, "a positive integer")
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise self._bad(value, "a positive integer") from None
        if number <= 0 or (isinstance(value, float) and value != number):
            raise self._bad(value, "a positive integer")
        return number

    def _dtypes(self, raw: Any, backend: str) -> tuple[str, ...]:
        names = raw.split(",") if isinstance(raw, str) else list(raw) if isinstance(raw, (list, tuple)) else []
        dtypes = tuple(dict.fromkeys(str(n).strip() for n in names if str(n).strip()))
        if not dtypes or any(d not in self.choices for d in dtypes):
            raise self._bad(raw, "one or more of " + ", ".join(self.choices))
        lacking = [d for d in dtypes if d not in self.interpreter_choices]
        if backend == "cpu" and lacking:
            raise UsageError(
                f"kernel option {self.key} asks for {lacking[0]} under the Triton interpreter, "
                f"which has no {lacking[0]}",
                f"use {self.key}={' or '.join(self.interpreter_choices)} on the CPU backend",
            )
        return dtypes

    def _fraction(self, value: Any) -> float:
        want = "a number between 0 and 1"
        if isinstance(value, bool):
            raise self._bad(value, want)
        try:
            fraction = float(value)
        except (TypeError, ValueError):
            raise self._bad(value, want) from None
        if not math.isfinite(fraction) or not 0 <= fraction <= 1:
            raise self._bad(value, want)
        return fraction
