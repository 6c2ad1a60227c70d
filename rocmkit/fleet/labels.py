"""Kubernetes node labels from a doctor report: ``rocmkit.io/gfx=gfx942``, ``rocmkit.io/doctor=pass``.

Label values allow only ``[A-Za-z0-9._-]`` (63 characters at most, starting and
ending with an alphanumeric), so versions like ``2.5.1+rocm6.2`` and lists of
archs are rewritten to fit; a value that cannot be made to fit is left out.
"""

from __future__ import annotations

import re

from rocmkit.doctor.result import Report

DEFAULT_PREFIX = "rocmkit.io"
_BAD = re.compile(r"[^A-Za-z0-9._-]+")
_VALID = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")


def label_value(text: str) -> str | None:
    value = _BAD.sub("-", text.strip()).strip("-._")[:63].rstrip("-._")
    return value if value and _VALID.match(value) else None


# Every label rocmkit sets (under its prefix): a label update removes those a report does not give.
KEYS = ("doctor", "doctor-level", "gfx", "gpus", "rocm", "torch")


def all_keys(prefix: str = DEFAULT_PREFIX) -> tuple[str, ...]:
    return tuple(f"{prefix}/{key}" for key in KEYS)


def node_labels(report: Report, prefix: str = DEFAULT_PREFIX) -> dict[str, str]:
    gpus = [g for g in report.machine.get("gpus", ()) if isinstance(g, dict) and g.get("visible", True)]
    archs = sorted({str(g["arch"]) for g in gpus if g.get("arch")})
    rocm = (report.machine.get("rocm") or {}).get("version")
    raw = {
        "doctor": report.verdict.value,
        "doctor-level": str(report.level),
        "gfx": "_".join(archs) if archs else None,
        "gpus": str(len(gpus)),
        "rocm": rocm,
        "torch": report.versions.get("torch"),
    }
    assert tuple(raw) == KEYS
    out = {}
    for key, text in raw.items():
        value = label_value(text) if text else None
        if value:
            out[f"{prefix}/{key}"] = value
    return out
