"""Check results and the report: the data every reporter and ``rocmkit fleet`` reads.

Statuses follow DCGM's split: ``fail`` means a defect was found, ``error``
means the check could not run. The verdict of a report is the worst status,
and its exit code is documented in README.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from rocmkit.errors import DataError

SCHEMA = "rocmkit.report/1"


class Status(str, Enum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


# Verdict precedence: a failure outranks a check that could not run, which
# outranks a warning.
_RANK = {Status.PASS: 0, Status.SKIP: 0, Status.WARN: 1, Status.ERROR: 2, Status.FAIL: 3}
EXIT_CODES = {Status.PASS: 0, Status.SKIP: 0, Status.FAIL: 1, Status.WARN: 2, Status.ERROR: 3}


@dataclass(frozen=True, kw_only=True)
class Figure:
    """A measured number: ``vector_add.bandwidth = 812.4 GB/s``."""

    name: str
    value: float
    unit: str
    # Where a reference was measured in the same run (a device copy, torch.matmul).
    reference: float | None = None
    # Judged against the GPU model's row of matrices/sku.toml (rocmkit/doctor/sku.py), where one
    # applies: its peak (same unit) and the share of it reached, and the floors it was held to.
    peak: float | None = None
    pct_of_peak: float | None = None
    floor: float | None = None  # the figure itself must reach this
    floor_fraction: float | None = None  # value / reference must reach this
    reference_floor: float | None = None  # the reference (torch's own figure) must reach this
    sku: str | None = None
    below_floor: bool = False

    @property
    def fraction(self) -> float | None:
        if self.reference in (None, 0):
            return None
        assert self.reference is not None
        return self.value / self.reference


_FIGURE_BASE = ("name", "value", "unit", "reference")


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    status: Status
    # Filled in by the doctor from the check's @check(name, level) when left out, so a
    # check states them once; a check returning several results names each.
    name: str = ""  # "env.kfd_access", "triton.vector_add"
    level: int = -1
    message: str  # one line
    remedy: str | None = None  # the exact command or setting that fixes it
    figures: tuple[Figure, ...] = ()
    duration_s: float = 0.0
    backend: str | None = None  # "rocm", "cuda", "cpu", "cpu-interpreter"
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # A figure's floor fields appear only where a GPU model's floors applied to it.
        d["figures"] = [
            {k: v for k, v in f.items() if k in _FIGURE_BASE or v not in (None, False)} for f in d["figures"]
        ]
        # Name and level first, as reports have always listed them.
        return {"name": d.pop("name"), "level": d.pop("level"), **d, "status": self.status.value}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckResult:
        return cls(
            name=str(d["name"]),
            level=int(d["level"]),
            status=Status(d["status"]),
            message=str(d.get("message", "")),
            remedy=d.get("remedy"),
            figures=tuple(Figure(**f) for f in d.get("figures", ())),
            duration_s=float(d.get("duration_s", 0.0)),
            backend=d.get("backend"),
            details=dict(d.get("details") or {}),
        )


def verdict(results: list[CheckResult] | tuple[CheckResult, ...]) -> Status:
    worst = Status.PASS
    for r in results:
        if _RANK[r.status] > _RANK[worst]:
            worst = r.status
    return worst


@dataclass(frozen=True, kw_only=True)
class Report:
    """One doctor run on one node (``rocmkit.report/1``)."""

    machine: dict[str, Any]  # rocmkit.machine/1
    plan: dict[str, Any] | None  # rocmkit.plan/1, where one could be made
    results: tuple[CheckResult, ...]
    versions: dict[str, str | None]  # rocmkit, python, torch, triton, hip, cuda
    started_at: str  # ISO 8601 UTC
    finished_at: str
    host_id: str  # stable per node: hostname + machine-id hash
    hostname: str
    level: int
    # Compile caches the checks used: {"triton": {"hits", "misses", "hit_rate"}}.
    caches: dict[str, dict[str, float]] = field(default_factory=dict)
    # Why there is no plan (resolve's error, one line), where ``plan`` is None.
    plan_error: str | None = None

    @property
    def verdict(self) -> Status:
        return verdict(self.results)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "verdict": self.verdict.value,
            "exit_code": self.exit_code,
            "hostname": self.hostname,
            "host_id": self.host_id,
            "level": self.level,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "versions": self.versions,
            "machine": self.machine,
            "plan": self.plan,
            **({"plan_error": self.plan_error} if self.plan_error else {}),
            "caches": self.caches,
            "results": [r.to_dict() for r in self.results],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Report:
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            raise DataError(f"not a {SCHEMA} report", "pass files written by `rocmkit doctor --json`")
        try:
            return cls(
                machine=dict(d.get("machine") or {}),
                plan=d.get("plan"),
                plan_error=str(d["plan_error"]) if d.get("plan_error") else None,
                results=tuple(CheckResult.from_dict(r) for r in d.get("results", ())),
                versions=dict(d.get("versions") or {}),
                started_at=str(d["started_at"]),
                finished_at=str(d["finished_at"]),
                host_id=str(d["host_id"]),
                hostname=str(d.get("hostname", d["host_id"])),
                level=int(d.get("level", 1)),
                caches=dict(d.get("caches") or {}),
            )
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as exc:
            raise DataError(
                f"malformed {SCHEMA} report: {exc}", "regenerate it with `rocmkit doctor --json`"
            ) from exc


def exception_line(exc: BaseException, limit: int = 300) -> str:
    """``ImportError: libamdhip64.so: cannot open ...``: the first line, for a one-line message."""
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:limit]
