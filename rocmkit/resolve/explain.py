"""The why of a plan: reasons and warnings, collected while resolving."""

from __future__ import annotations

from dataclasses import dataclass, field

from rocmkit.matrix import Fact, Matrix


@dataclass
class Notes:
    """Reasons (why each choice) and warnings (what may go wrong), in order, without repeats."""

    matrix: Matrix
    reasons: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def why(self, text: str) -> None:
        if text not in self.reasons:
            self.reasons.append(text)

    def warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)

    def relies_on(self, fact: Fact, file: str, what: str, *fields: str) -> None:
        """Warn when a fact the plan uses is marked unconfirmed in the matrix."""
        weak = [f for f in (fields or (None,)) if not fact.is_confirmed(f)]
        if not weak:
            return
        where = ", ".join(short_source(self.matrix.source_text(file, s)) for s in fact.sources) or "no source"
        self.warn(f"relies on an unconfirmed fact: {what} (matrices/{file}; best source: {where})")


def short_source(text: str) -> str:
    """A URL or repository path as is; a description cut to its first clause."""
    first = text.split(" ", maxsplit=1)[0]
    if "://" in first or "/" in first:
        return first
    return text.split(":", maxsplit=1)[0].split("(", maxsplit=1)[0].strip()[:80]


def join(items: list[str] | tuple[str, ...]) -> str:
    return ", ".join(items) if items else "none"
