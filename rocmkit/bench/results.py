"""Results of a model benchmark: one row per model, the suite summary, JSON and CSV.

The JSON is the ``rocmkit.bench/1`` schema (documented in docs/bench.md).
Two geometric means are reported and named apart, because they answer
different questions: ``geomean_speedup_clipped`` is PyTorch's dashboard
number (each passing model's speedup clipped at 1.0, so slowdowns count as
parity), ``geomean_speedup`` is the plain geometric mean, slowdowns included.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from rocmkit.errors import DataError

SCHEMA = "rocmkit.bench/1"

ModelStatus = Literal["pass", "fail_accuracy", "compile_error", "timeout", "error"]
STATUSES: tuple[ModelStatus, ...] = ("pass", "fail_accuracy", "compile_error", "timeout", "error")


@dataclass(frozen=True, kw_only=True)
class Spread:
    """How much the repeats of one timing moved, relative to their median."""

    q1: float  # 25th percentile, ms
    q3: float  # 75th percentile, ms
    min: float
    max: float

    def iqr_rel(self, median: float) -> float:
        return (self.q3 - self.q1) / median if median > 0 else 0.0


@dataclass(frozen=True, kw_only=True)
class Accuracy:
    """How compiled output compared with eager output, and which rule decided."""

    ok: bool
    method: str  # "allclose", "fp64_rmse", "cosine", "exact", or "failed:<rule>"
    tolerance: float
    max_abs_diff: float | None = None
    res_rmse: float | None = None  # compiled vs fp64 reference
    ref_rmse: float | None = None  # eager vs fp64 reference
    cosine: float | None = None
    worst: str | None = None  # which output/gradient compared worst ("output", "loss", "grad[3]")


@dataclass(frozen=True, kw_only=True)
class ModelResult:
    name: str
    status: ModelStatus
    message: str = ""
    suite: str = ""
    impl: str = ""
    batch_size: int | None = None
    params: int | None = None
    speedup: float | None = None  # median eager / median compiled
    # Quartiles of the per-repeat ratios eager_i / compiled_i (each pair ran back to back):
    # when this range straddles 1.0 the speedup is within the noise.
    speedup_q1: float | None = None
    speedup_q3: float | None = None
    eager_ms: float | None = None  # median, per call
    compiled_ms: float | None = None
    eager_spread: Spread | None = None
    compiled_spread: Spread | None = None
    calls_per_sample: int = 1
    repeat: int = 0
    compile_s: float | None = None  # the first compiled call, tracing and code generation included
    eager_peak_mb: float | None = None
    compiled_peak_mb: float | None = None
    memory_kind: str | None = None  # "cuda_max_allocated" or "rss_growth"
    accuracy: Accuracy | None = None
    duration_s: float = 0.0
    stderr_tail: str = ""
    # The host while the model ran (rocmkit/bench/noise.py): loadavg, cpus, steal fraction.
    host_load: dict[str, float] | None = None

    @property
    def passed(self) -> bool:
        return self.status == "pass" and self.speedup is not None and self.speedup > 0

    @property
    def noisy(self) -> bool:
        """The interquartile range of the paired ratios includes parity."""
        if self.speedup_q1 is None or self.speedup_q3 is None:
            return False
        return self.speedup_q1 <= 1.0 <= self.speedup_q3

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelResult:
        """A row read back from a results or report file (written by another node, perhaps
        edited): every field of the type it has to have, or one :class:`DataError`."""
        if not isinstance(d, dict):
            raise DataError("a bench row is not an object", _ROW_FIX)
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in d.items() if k in known}
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise DataError("a bench row has no model name", _ROW_FIX)
        if data.get("status") not in STATUSES:
            raise DataError(f"bench result for {name!r} has status {data.get('status')!r}", _ROW_FIX)
        for key in _NUMBERS:
            _number(data, key, name)
        for key in _INTS:
            _number(data, key, name, whole=True)
        for key in ("message", "suite", "impl", "memory_kind", "stderr_tail"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise DataError(f"bench result for {name!r}: {key} is not text", _ROW_FIX)
        try:
            for key in ("eager_spread", "compiled_spread"):
                if data.get(key) is not None:
                    spread = data[key]
                    for part in ("q1", "q3", "min", "max"):
                        _number(spread, part, name, required=True)
                    data[key] = Spread(**spread)
            if data.get("accuracy") is not None:
                data["accuracy"] = Accuracy(**data["accuracy"])
            return cls(**data)
        except (TypeError, AttributeError) as exc:
            raise DataError(f"bench result for {name!r} is malformed: {exc}", _ROW_FIX) from None


_ROW_FIX = "pass a file written by `rocmkit bench models`, unedited"
# The row's measured figures: a number (not a bool, not text) or absent.
_NUMBERS = ("speedup", "speedup_q1", "speedup_q3", "eager_ms", "compiled_ms", "compile_s",
            "eager_peak_mb", "compiled_peak_mb", "duration_s")  # fmt: skip
_INTS = ("batch_size", "params", "calls_per_sample", "repeat")


def _number(data: Any, key: str, name: str, *, whole: bool = False, required: bool = False) -> None:
    """``data[key]`` is a finite number (an integer when ``whole``), or absent/None."""
    if not isinstance(data, dict):
        raise DataError(f"bench result for {name!r}: a spread is not an object", _ROW_FIX)
    value = data.get(key)
    if value is None and not required:
        return
    fits = isinstance(value, int) or (isinstance(value, float) and not whole and math.isfinite(value))
    if isinstance(value, bool) or not fits:
        want = "an integer" if whole else "a number"
        raise DataError(f"bench result for {name!r}: {key} {value!r} is not {want}", _ROW_FIX)


def geomean(values: list[float]) -> float | None:
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True, kw_only=True)
class Summary:
    passed: int
    total: int
    geomean_speedup: float | None  # plain geometric mean over passing models
    geomean_speedup_clipped: float | None  # PyTorch dashboard: speedups clipped at 1.0

    @property
    def pass_rate(self) -> str:
        pct = round(100 * self.passed / self.total) if self.total else 0
        return f"{pct}%, {self.passed}/{self.total}"

    @classmethod
    def of(cls, models: tuple[ModelResult, ...] | list[ModelResult]) -> Summary:
        speedups = [m.speedup for m in models if m.passed and m.speedup is not None]
        return cls(
            passed=len(speedups),
            total=len(models),
            geomean_speedup=geomean(speedups),
            geomean_speedup_clipped=geomean([max(1.0, s) for s in speedups]),
        )


@dataclass(frozen=True, kw_only=True)
class SuiteResult:
    backend: str  # "rocm", "cuda", "cpu"
    device: str  # "AMD Instinct MI300X", "cpu (16 threads)"
    mode: str  # "infer" | "train"
    dtype: str  # "fp32" | "bf16" | "fp16"
    size: str
    repeat: int
    models: tuple[ModelResult, ...]
    versions: dict[str, str | None] = field(default_factory=dict)  # torch, triton, transformers, python
    started_at: str = ""
    finished_at: str = ""
    command: str = ""
    compile_mode: str = "default"
    threads: int | None = None  # CPU threads asked for; None: torch's default
    suite: str = "builtin"  # builtin, huggingface, timm
    shard: str = ""  # "I/N" when this is one shard of a run

    @property
    def summary(self) -> Summary:
        return Summary.of(self.models)

    def to_dict(self) -> dict[str, Any]:
        s = self.summary
        return {
            "schema": SCHEMA,
            "suite": self.suite,
            "shard": self.shard,
            "backend": self.backend,
            "device": self.device,
            "mode": self.mode,
            "dtype": self.dtype,
            "size": self.size,
            "repeat": self.repeat,
            "compile_mode": self.compile_mode,
            "threads": self.threads,
            "versions": self.versions,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "command": self.command,
            "summary": {
                "passed": s.passed,
                "total": s.total,
                "pass_rate": s.pass_rate,
                "geomean_speedup": s.geomean_speedup,
                "geomean_speedup_clipped": s.geomean_speedup_clipped,
            },
            "models": [m.to_dict() for m in self.models],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SuiteResult:
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            raise DataError(f"not a {SCHEMA} result", "pass a file written by `rocmkit bench models --json`")
        try:
            return cls(
                backend=str(d["backend"]),
                device=str(d["device"]),
                mode=str(d["mode"]),
                dtype=str(d["dtype"]),
                size=str(d["size"]),
                repeat=int(d["repeat"]),
                models=tuple(ModelResult.from_dict(m) for m in d.get("models", ())),
                versions=dict(d.get("versions") or {}),
                started_at=str(d.get("started_at", "")),
                finished_at=str(d.get("finished_at", "")),
                command=str(d.get("command", "")),
                compile_mode=str(d.get("compile_mode", "default")),
                threads=int(d["threads"]) if d.get("threads") is not None else None,
                suite=str(d.get("suite", "builtin")),
                shard=str(d.get("shard", "")),
            )
        except (AttributeError, KeyError, TypeError, ValueError, OverflowError) as exc:
            what = f"field {exc} is missing" if isinstance(exc, KeyError) else str(exc)
            raise DataError(
                f"malformed {SCHEMA} result: {what}",
                "pass a file written by `rocmkit bench models --json`, unedited",
            ) from exc


CSV_COLUMNS = (
    "dev",
    "name",
    "batch_size",
    "status",
    "speedup",
    "speedup_q1",
    "speedup_q3",
    "abs_latency_ms",
    "eager_ms",
    "eager_iqr_rel",
    "compiled_iqr_rel",
    "compilation_latency_s",
    "eager_peak_mb",
    "compiled_peak_mb",
    "memory_kind",
    "accuracy_method",
    "impl",
    "message",
)


def _fmt(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}g}"


def to_csv(suite: SuiteResult) -> str:
    """One row per model; the first columns follow PyTorch's dynamo CSV (dev,name,batch_size,speedup,abs_latency)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for m in suite.models:
        writer.writerow(
            [
                suite.backend,
                m.name,
                m.batch_size or "",
                m.status,
                _fmt(m.speedup),
                _fmt(m.speedup_q1),
                _fmt(m.speedup_q3),
                _fmt(m.compiled_ms),
                _fmt(m.eager_ms),
                _fmt(m.eager_spread.iqr_rel(m.eager_ms) if m.eager_spread and m.eager_ms else None),
                _fmt(
                    m.compiled_spread.iqr_rel(m.compiled_ms) if m.compiled_spread and m.compiled_ms else None
                ),
                _fmt(m.compile_s),
                _fmt(m.eager_peak_mb),
                _fmt(m.compiled_peak_mb),
                m.memory_kind or "",
                m.accuracy.method if m.accuracy else "",
                m.impl,
                m.message,
            ]
        )
    return buf.getvalue()


def to_text(suite: SuiteResult) -> str:
    """The table a person reads in a terminal."""
    s = suite.summary
    head = (
        f"torch.compile vs eager, suite {suite.suite}: {suite.mode}, {suite.dtype}, size {suite.size}, "
        f"{suite.repeat} repeats, compile mode {suite.compile_mode}, on {suite.device} ({suite.backend})"
    )
    rows = [
        ("model", "status", "speedup", "IQR of ratios", "eager ms", "compiled ms", "compile s", "peak MB e/c")
    ]
    for m in suite.models:
        iqr = f"{m.speedup_q1:.2f}-{m.speedup_q3:.2f}" if m.speedup_q1 and m.speedup_q3 else ""
        if m.noisy:
            iqr += " (noise)"
        peak = (
            f"{m.eager_peak_mb:.0f}/{m.compiled_peak_mb:.0f}"
            if m.eager_peak_mb is not None and (m.compiled_peak_mb is not None)
            else ""
        )
        rows.append(
            (
                m.name,
                m.status,
                f"{m.speedup:.2f}x" if m.speedup else "-",
                iqr,
                _fmt(m.eager_ms, 3),
                _fmt(m.compiled_ms, 3),
                _fmt(m.compile_s, 3),
                peak,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [head, ""]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    gm = f"{s.geomean_speedup:.2f}x" if s.geomean_speedup else "n/a"
    gmc = f"{s.geomean_speedup_clipped:.2f}x" if s.geomean_speedup_clipped else "n/a"
    lines += [
        "",
        f"pass rate {s.pass_rate}; geomean speedup {gm} (slowdowns included), "
        f"{gmc} clipped at 1.0 (PyTorch dashboard)",
    ]
    for m in suite.models:
        if m.status != "pass" and m.message:
            lines.append(f"{m.name}: {m.status}: {m.message}")
    return "\n".join(lines) + "\n"


def to_markdown(suite: SuiteResult) -> str:
    """A Markdown table for a benchmark record or a bug report."""
    s = suite.summary
    versions = ", ".join(f"{k} {v}" for k, v in suite.versions.items() if v)
    lines = [
        f"suite {suite.suite}{f' (shard {suite.shard})' if suite.shard else ''}: "
        f"{suite.mode}, {suite.dtype}, size {suite.size}, {suite.repeat} repeats, compile mode "
        f"{suite.compile_mode}, on {suite.device} ({suite.backend}); {versions}",
        "",
        "| model | status | speedup | IQR of paired ratios | eager ms (IQR/median) | compiled ms (IQR/median) "
        "| compile s | peak MB eager / compiled | accuracy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in suite.models:
        iqr = f"{m.speedup_q1:.2f}–{m.speedup_q3:.2f}" if m.speedup_q1 and m.speedup_q3 else ""
        if m.noisy:
            iqr += " (noise)"

        def timing(ms: float | None, spread: Spread | None) -> str:
            if ms is None:
                return ""
            return f"{ms:.3g} ({spread.iqr_rel(ms):.0%})" if spread else f"{ms:.3g}"

        peak = (
            f"{m.eager_peak_mb:.0f} / {m.compiled_peak_mb:.0f}"
            if m.eager_peak_mb is not None and m.compiled_peak_mb is not None
            else ""
        )
        acc = m.accuracy.method if m.accuracy else ""
        lines.append(
            f"| {m.name} | {m.status} | {f'{m.speedup:.2f}x' if m.speedup else '-'} | {iqr} "
            f"| {timing(m.eager_ms, m.eager_spread)} | {timing(m.compiled_ms, m.compiled_spread)} "
            f"| {_fmt(m.compile_s, 3)} | {peak} | {acc} |"
        )
    gm = f"{s.geomean_speedup:.2f}x" if s.geomean_speedup else "n/a"
    gmc = f"{s.geomean_speedup_clipped:.2f}x" if s.geomean_speedup_clipped else "n/a"
    lines += [
        "",
        f"Pass rate {s.pass_rate}; geomean speedup {gm} (slowdowns included), {gmc} clipped at 1.0 "
        "(PyTorch dashboard).",
    ]
    return "\n".join(lines) + "\n"
