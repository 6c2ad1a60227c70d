"""``rocmkit bench compare A B``: what changed between two runs, model by model.

For each model in both runs: the speedup ratio B/A, the compiled latency ratio
B/A, and the accuracy verdicts. A change is flagged only when it is beyond the
noise of the repeats: the interquartile ranges of the two runs must not overlap
(for the speedup: the ranges of the paired eager/compiled ratios; for the
latency: the ranges of the compiled timings), and the change must exceed
``min_change`` (5 % by default) so that two very steady runs do not flag a
1 % drift. A model that passed in A and fails or errors in B is broken whatever
the timings, and so is one B's results file was to hold but has no row for (the
run was killed or stopped before it); one that failed in A and passes in B is
fixed. Either kind of flag fails the command (exit 1), the broken ones named
with their status in A and in B.

Published figures (``matrices/bench/references.toml``, or a file of the same
shape given with ``--reference``) are drawn as lines in the HTML and quoted
in the text, where their suite and mode match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Literal

from rocmkit.bench.noise import too_noisy
from rocmkit.bench.results import ModelResult, SuiteResult
from rocmkit.errors import DataError

Verdict = Literal[
    "regression",
    "improvement",
    "same",
    "not judged",
    "fixed",
    "broken",
    "still failing",
    "only in A",
    "only in B",
]
FLAGGED: tuple[Verdict, ...] = ("regression", "broken")
DEFAULT_MIN_CHANGE = 0.05


@dataclass(frozen=True, kw_only=True)
class Reference:
    id: str
    label: str
    suite: str
    mode: str
    dtype: str
    speedup: float
    passed: int | None = None
    total: int | None = None
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class ModelDiff:
    name: str
    a: ModelResult | None
    b: ModelResult | None
    verdict: Verdict
    speedup_ratio: float | None = None  # B speedup / A speedup
    latency_ratio: float | None = None  # B compiled ms / A compiled ms
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class Comparison:
    a: SuiteResult
    b: SuiteResult
    models: tuple[ModelDiff, ...]
    min_change: float
    references: tuple[Reference, ...] = ()
    notes: tuple[str, ...] = ()  # the runs differ in setup (mode, size ...)

    @property
    def flagged(self) -> list[ModelDiff]:
        return [d for d in self.models if d.verdict in FLAGGED]

    @property
    def not_judged(self) -> list[ModelDiff]:
        return [d for d in self.models if d.verdict == "not judged"]

    @property
    def broken(self) -> list[ModelDiff]:
        return [d for d in self.models if d.verdict == "broken"]

    @property
    def slower(self) -> list[ModelDiff]:
        return [d for d in self.models if d.verdict == "regression"]


def _status(m: ModelResult | None) -> str:
    """A model's status in one run, as the verdict lines print it ("pass 1.52x", "error", "no row")."""
    if m is None:
        return "no row"
    return f"pass {m.speedup:.2f}x" if m.passed and m.speedup is not None else m.status


def broken_text(d: ModelDiff) -> str:
    """``mlp (A: pass 0.84x, B: compile_error)``."""
    return f"{d.name} (A: {_status(d.a)}, B: {_status(d.b)})"


def _apart(lo_a: float | None, hi_a: float | None, lo_b: float | None, hi_b: float | None) -> bool:
    """The two interquartile ranges do not overlap (unknown ranges count as overlapping)."""
    if None in (lo_a, hi_a, lo_b, hi_b):
        return False
    assert lo_a is not None and hi_a is not None and lo_b is not None and hi_b is not None
    return hi_b < lo_a or lo_b > hi_a


def diff_model(a: ModelResult, b: ModelResult, min_change: float) -> ModelDiff:
    if a.passed and not b.passed:
        return ModelDiff(name=a.name, a=a, b=b, verdict="broken", why=f"{b.status}: {b.message[:160]}")
    if not a.passed and b.passed:
        return ModelDiff(name=a.name, a=a, b=b, verdict="fixed", why=f"was {a.status}")
    if not a.passed and not b.passed:
        return ModelDiff(name=a.name, a=a, b=b, verdict="still failing", why=f"{a.status} -> {b.status}")
    assert a.speedup is not None and b.speedup is not None
    sr = b.speedup / a.speedup
    lr = b.compiled_ms / a.compiled_ms if a.compiled_ms and b.compiled_ms else None
    noisy = [f"{side}: {why}" for side, m in (("A", a), ("B", b)) for why in too_noisy(m)]
    speed_apart = _apart(a.speedup_q1, a.speedup_q3, b.speedup_q1, b.speedup_q3)
    ca, cb = a.compiled_spread, b.compiled_spread
    lat_apart = ca is not None and cb is not None and lr is not None and _apart(ca.q1, ca.q3, cb.q1, cb.q3)
    slower = (speed_apart and sr < 1 - min_change) or (lat_apart and lr is not None and lr > 1 + min_change)
    faster = (speed_apart and sr > 1 + min_change) or (lat_apart and lr is not None and lr < 1 - min_change)
    parts = [f"speedup {a.speedup:.2f}x -> {b.speedup:.2f}x"]
    if lr is not None:
        parts.append(f"compiled {lr:.2f}x the time")
    if noisy:
        parts.append(f"on a noisy run ({'; '.join(noisy)})")
    if slower and not faster:
        # Ranges apart beyond the change asked for: the noise the run had did not hide it.
        verdict: Verdict = "regression"
    elif faster and not slower:
        verdict = "improvement"
    elif noisy:
        # Overlapping ranges on a loaded host say nothing: "same" would be a verdict the run cannot give.
        return ModelDiff(
            name=a.name, a=a, b=b, verdict="not judged", speedup_ratio=sr, latency_ratio=lr,
            why=f"speedup {a.speedup:.2f}x -> {b.speedup:.2f}x; not judged: too noisy ({'; '.join(noisy)})",
        )
    else:
        verdict = "same"
        if not speed_apart and abs(sr - 1) > min_change:
            parts.append("within the noise of the repeats")
    return ModelDiff(
        name=a.name, a=a, b=b, verdict=verdict, speedup_ratio=sr, latency_ratio=lr, why="; ".join(parts)
    )


def compare(
    a: SuiteResult,
    b: SuiteResult,
    *,
    min_change: float = DEFAULT_MIN_CHANGE,
    references: Sequence[Reference] = (),
    notes: Sequence[str] = (),
    b_meant: Sequence[str] = (),
) -> Comparison:
    """Run A against run B, model by model. ``notes`` (what loading them set aside) lead the
    notes; runs of another device, backend or torch/Triton are said to be unlike, since their
    ratios then measure the change of machine or build as much as of the code. ``b_meant`` is
    what B's results file was to hold (its header): a model A passed that B was to run and has
    no row for broke in B, as surely as one that errored."""
    rows_a = {m.name: m for m in a.models}
    rows_b = {m.name: m for m in b.models}
    order = list(rows_a) + [n for n in rows_b if n not in rows_a]
    diffs: list[ModelDiff] = []
    for name in order:
        ma, mb = rows_a.get(name), rows_b.get(name)
        if ma is None:
            diffs.append(ModelDiff(name=name, a=None, b=mb, verdict="only in B"))
        elif mb is None and ma.passed and name in b_meant:
            why = "B's results file has no row for it: the run did not finish it (killed or stopped)"
            diffs.append(ModelDiff(name=name, a=ma, b=None, verdict="broken", why=why))
        elif mb is None:
            diffs.append(ModelDiff(name=name, a=ma, b=None, verdict="only in A"))
        else:
            diffs.append(diff_model(ma, mb, min_change))
    differ = [
        f"{what} {va} vs {vb}"
        for what, va, vb in (
            ("suite", a.suite, b.suite),
            ("mode", a.mode, b.mode),
            ("dtype", a.dtype, b.dtype),
            ("size", a.size, b.size),
            ("compile mode", a.compile_mode, b.compile_mode),
            ("device", a.device, b.device),
            ("backend", a.backend, b.backend),
            ("torch", a.versions.get("torch"), b.versions.get("torch")),
            ("triton", a.versions.get("triton"), b.versions.get("triton")),
        )
        if va != vb
    ]
    unlike = (f"unlike runs: {'; '.join(differ)}",) if differ else ()
    all_notes = (*notes, *unlike)
    matching = tuple(r for r in references if r.suite == b.suite and r.mode == b.mode)
    return Comparison(a=a, b=b, models=tuple(diffs), min_change=min_change, references=matching, notes=all_notes)


# ---------------------------------------------------------------- references


def parse_references(doc: dict[str, Any], where: str) -> list[Reference]:
    sources = doc.get("sources") or {}
    out: list[Reference] = []
    for raw in doc.get("reference") or []:
        try:
            srcs = list(raw.get("sources") or [])
            if not srcs or any(s not in sources for s in srcs):
                raise DataError(f"{where}: reference {raw.get('id')!r} needs sources named in [sources]")
            speedup = float(raw["speedup"])
            if speedup <= 0:
                raise ValueError("speedup must be positive")
            out.append(
                Reference(
                    id=str(raw["id"]),
                    label=str(raw.get("label") or raw["id"]),
                    suite=str(raw["suite"]),
                    mode=str(raw["mode"]),
                    dtype=str(raw.get("dtype", "")),
                    speedup=speedup,
                    passed=int(raw["passed"]) if raw.get("passed") is not None else None,
                    total=int(raw["total"]) if raw.get("total") is not None else None,
                    source="; ".join(str(sources[s]) for s in srcs),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{where}: malformed reference {raw.get('id')!r}: {exc}") from exc
    return out


def load_references(path: Path | None = None) -> list[Reference]:
    from rocmkit.bench.catalog import data_dir
    from rocmkit.matrix.fields import read_toml

    path = path or data_dir() / "references.toml"
    return parse_references(read_toml(path), path.name)


# ---------------------------------------------------------------- output


def _x(v: float | None, fmt: str = "{:.2f}x") -> str:
    return "-" if v is None else fmt.format(v)


def to_dict(c: Comparison) -> dict[str, object]:
    """The verdicts as ``rocmkit.bench.compare/1`` JSON (``rocmkit bench compare --json``)."""
    return {
        "schema": "rocmkit.bench.compare/1",
        "flagged": [d.name for d in c.flagged],
        "broken": [{"name": d.name, "status_a": _status(d.a), "status_b": _status(d.b)} for d in c.broken],
        "not_judged": [d.name for d in c.not_judged],
        "notes": list(c.notes),
        "models": [
            {
                "name": d.name,
                "verdict": d.verdict,
                "speedup_a": d.a.speedup if d.a else None,
                "speedup_b": d.b.speedup if d.b else None,
                "speedup_ratio": d.speedup_ratio,
                "latency_ratio": d.latency_ratio,
                "why": d.why,
            }
            for d in c.models
        ],
    }


def to_text(c: Comparison) -> str:
    sa, sb = c.a.summary, c.b.summary
    lines = [
        f"A: {c.a.device}, {c.a.suite} {c.a.mode} {c.a.dtype} {c.a.size}, torch {c.a.versions.get('torch')}: "
        f"pass rate {sa.pass_rate}, geomean {_x(sa.geomean_speedup)}",
        f"B: {c.b.device}, {c.b.suite} {c.b.mode} {c.b.dtype} {c.b.size}, torch {c.b.versions.get('torch')}: "
        f"pass rate {sb.pass_rate}, geomean {_x(sb.geomean_speedup)}",
    ]
    lines += [f"note: {n}" for n in c.notes]
    for r in c.references:
        tally = f", {r.passed}/{r.total} passing" if r.passed is not None else ""
        lines.append(f"reference: {r.label} ({r.speedup:.2f}x{tally})")
    lines.append("")
    rows = [("model", "verdict", "speedup A", "speedup B", "B/A", "why")]
    for d in c.models:
        rows.append(
            (
                d.name,
                d.verdict,
                _x(d.a.speedup if d.a else None),
                _x(d.b.speedup if d.b else None),
                _x(d.speedup_ratio, "{:.2f}"),
                d.why,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        cols = [col.ljust(w) for col, w in zip(row[:5], widths, strict=True)]
        lines.append("  ".join([*cols, row[5]]).rstrip())
    lines.append("")
    if c.broken:
        lines.append(
            f"{len(c.broken)} model(s) passed in A and fail in B: {', '.join(broken_text(d) for d in c.broken)}"
        )
    if c.slower:
        lines.append(
            f"{len(c.slower)} regression(s) beyond the noise of the repeats: {', '.join(d.name for d in c.slower)}"
        )
    both = [d for d in c.models if d.verdict == "still failing"]
    if both:
        # Not a change, but never to be read as "all is well": these models work in neither run.
        lines.append(f"{len(both)} model(s) fail in A and in B: {', '.join(broken_text(d) for d in both)}")
    if not c.flagged and not c.not_judged and not both:
        lines.append(f"no regression beyond the noise of the repeats (and {c.min_change:.0%})")
    if c.not_judged:
        lines.append(
            f"{len(c.not_judged)} model(s) not judged, too noisy to tell: {', '.join(d.name for d in c.not_judged)} "
            "(rerun on an idle node)"
        )
    return "\n".join(lines) + "\n"


COLORS = {"a": "#90a4ae", "b": "#1565c0", "ref": "#c62828"}


def render_svg(c: Comparison) -> str:
    names = [d.name for d in c.models]
    label_w, bar_w, row_h, top = 260, 420, 34, 60
    height = top + row_h * max(1, len(names)) + 50
    values = [m.speedup or 0.0 for s in (c.a, c.b) for m in s.models] + [r.speedup for r in c.references]
    xmax = max(2.0, max(values, default=1.0) * 1.1)

    def x(v: float) -> float:
        return label_w + bar_w * min(v, xmax) / xmax

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 200}" height="{height}" '
        f'font-family="sans-serif" font-size="12" role="img">',
        '<text x="8" y="18" font-size="14" font-weight="bold">speedup over eager: A (grey) and B (blue)</text>',
    ]
    for i, d in enumerate(c.models):
        y = top + i * row_h
        out.append(f'<text x="{label_w - 6}" y="{y + 20}" text-anchor="end">{escape(d.name)}</text>')
        for j, (key, m) in enumerate((("a", d.a), ("b", d.b))):
            if m is not None and m.passed and m.speedup is not None:
                out.append(
                    f'<rect x="{label_w}" y="{y + 4 + j * 13}" width="{x(m.speedup) - label_w:.1f}" height="12" '
                    f'fill="{COLORS[key]}"><title>{key.upper()} {m.speedup:.3f}x</title></rect>'
                )
        mark = "#c62828" if d.verdict in FLAGGED else "#424242"
        out.append(f'<text x="{label_w + bar_w + 8}" y="{y + 20}" fill="{mark}">{escape(d.verdict)}</text>')
    bottom = top + row_h * max(1, len(names))
    one = x(1.0)
    out.append(f'<line x1="{one:.1f}" y1="{top - 8}" x2="{one:.1f}" y2="{bottom}" stroke="#424242"/>')
    out.append(f'<text x="{one:.1f}" y="{top - 12}" text-anchor="middle">parity</text>')
    for k, r in enumerate(c.references):
        rx = x(r.speedup)
        out.append(
            f'<line x1="{rx:.1f}" y1="{top - 8}" x2="{rx:.1f}" y2="{bottom}" stroke="{COLORS["ref"]}" '
            f'stroke-width="2" stroke-dasharray="6 4"><title>{escape(r.label)}</title></line>'
        )
        out.append(
            f'<text x="8" y="{bottom + 20 + 14 * k}" fill="{COLORS["ref"]}">reference (dashed): '
            f"{escape(r.label)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_page(c: Comparison) -> str:
    rows = []
    for d in c.models:
        cells = (
            d.name,
            d.verdict,
            d.a.status if d.a else "",
            _x(d.a.speedup if d.a else None),
            d.b.status if d.b else "",
            _x(d.b.speedup if d.b else None),
            _x(d.speedup_ratio, "{:.2f}"),
            _x(d.latency_ratio, "{:.2f}"),
            d.why,
        )
        style = ' style="background:#ffebee"' if d.verdict in FLAGGED else ""
        rows.append(f"<tr{style}>" + "".join(f"<td>{escape(v)}</td>" for v in cells) + "</tr>")
    sa, sb = c.a.summary, c.b.summary

    def run(tag: str, s: SuiteResult) -> str:
        versions = ", ".join(f"{k} {v}" for k, v in s.versions.items() if v)
        return (
            f"<p><b>{tag}</b>: {escape(s.device)} ({escape(s.backend)}) · suite {escape(s.suite)} · "
            f"{escape(s.mode)} · {escape(s.dtype)} · size {escape(s.size)} · {escape(versions)} · pass rate "
            f"{escape(s.summary.pass_rate)} · geomean {escape(_x(s.summary.geomean_speedup))}</p>"
        )

    refs = "".join(f"<li>{escape(r.label)}: {escape(r.source)}</li>" for r in c.references)
    notes = "".join(f"<li>{escape(n)}</li>" for n in c.notes)
    said = [
        f"{len(c.broken)} model(s) passed in A and fail in B" if c.broken else "",
        f"{len(c.slower)} regression(s) beyond the noise" if c.slower else "",
    ]
    verdict = "; ".join(x for x in said if x) or "no regression beyond the noise"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rocmkit bench compare</title>
<style>body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ddd; padding: 4px 8px; font-size: 13px; text-align: left; }}</style>
</head><body><h1>torch.compile: A against B</h1>
{run("A", c.a)}{run("B", c.b)}
<ul>{notes}</ul>
{render_svg(c)}
<p><b>{escape(verdict)}</b> (IQRs apart and a change over {c.min_change:.0%}); geomean
{escape(_x(sa.geomean_speedup))} &rarr; {escape(_x(sb.geomean_speedup))}.</p>
<table><tr><th>model</th><th>verdict</th><th>A status</th><th>A speedup</th><th>B status</th>
<th>B speedup</th><th>speedup B/A</th><th>compiled time B/A</th><th>why</th></tr>
{"".join(rows)}</table>
<p>References:</p><ul>{refs or "<li>none for this suite and mode</li>"}</ul>
</body></html>
"""
