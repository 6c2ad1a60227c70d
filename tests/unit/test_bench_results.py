"""Results, summary (both geomeans), JSON round trip, CSV and text output."""

from __future__ import annotations

import csv
import io
import math

import pytest

from rocmkit.bench.results import (
    CSV_COLUMNS,
    Accuracy,
    ModelResult,
    Spread,
    SuiteResult,
    Summary,
    geomean,
    to_csv,
    to_markdown,
    to_text,
)
from rocmkit.errors import DataError


def row(name: str, status: str = "pass", speedup: float | None = 1.0, **kw: object) -> ModelResult:
    return ModelResult(name=name, status=status, speedup=speedup, **kw)  # type: ignore[arg-type]


def suite(*models: ModelResult) -> SuiteResult:
    return SuiteResult(
        backend="cpu",
        device="x86_64 (2 threads)",
        mode="infer",
        dtype="fp32",
        size="tiny",
        repeat=5,
        models=models,
        versions={"torch": "2.13.0"},
    )


def test_geomean_over_passing_models_clipped_and_not() -> None:
    s = Summary.of(
        [
            row("a", speedup=2.0),
            row("b", speedup=0.5),
            row("c", speedup=1.5),
            row("d", "fail_accuracy", None),
            row("e", "compile_error", None),
        ]
    )
    assert (s.passed, s.total) == (3, 5)
    assert s.pass_rate == "60%, 3/5"
    assert s.geomean_speedup == pytest.approx((2.0 * 0.5 * 1.5) ** (1 / 3))
    # PyTorch's dashboard clips each speedup at 1.0: the slowdown counts as parity.
    assert s.geomean_speedup_clipped == pytest.approx((2.0 * 1.0 * 1.5) ** (1 / 3))


def test_no_passing_model_has_no_geomean() -> None:
    s = Summary.of([row("a", "timeout", None)])
    assert s.geomean_speedup is None and s.geomean_speedup_clipped is None
    assert s.pass_rate == "0%, 0/1"
    assert geomean([]) is None
    assert geomean([4.0, 1.0]) == pytest.approx(2.0)


def test_noise_flag_follows_the_paired_ratio_quartiles() -> None:
    assert row("a", speedup=1.02, speedup_q1=0.97, speedup_q3=1.06).noisy
    assert not row("a", speedup=1.4, speedup_q1=1.3, speedup_q3=1.5).noisy
    assert not row("a", speedup=1.4).noisy


def test_json_round_trip_keeps_nested_records() -> None:
    full = row(
        "gpt",
        speedup=1.3,
        speedup_q1=1.2,
        speedup_q3=1.4,
        eager_ms=2.0,
        compiled_ms=1.5,
        eager_spread=Spread(q1=1.9, q3=2.1, min=1.8, max=2.5),
        compiled_spread=Spread(q1=1.4, q3=1.6, min=1.3, max=1.9),
        accuracy=Accuracy(ok=True, method="allclose", tolerance=1e-3, max_abs_diff=1e-6, worst="output"),
        compile_s=12.5,
        eager_peak_mb=10.0,
        compiled_peak_mb=40.0,
        memory_kind="rss_growth",
    )
    original = suite(full, row("bad", "compile_error", None, message="boom"))
    data = original.to_dict()
    assert data["schema"] == "rocmkit.bench/1"
    assert data["summary"]["pass_rate"] == "50%, 1/2"
    again = SuiteResult.from_dict(data)
    assert again == original


def test_from_dict_rejects_other_documents() -> None:
    with pytest.raises(DataError):
        SuiteResult.from_dict({"schema": "rocmkit.report/1"})
    data = suite(row("a")).to_dict()
    data["models"][0]["status"] = "great"
    with pytest.raises(DataError, match="status"):
        SuiteResult.from_dict(data)
    with pytest.raises(DataError, match="field 'backend' is missing") as caught:
        SuiteResult.from_dict({"schema": "rocmkit.bench/1"})
    assert "rocmkit bench models --json" in (caught.value.fix or "")


def test_csv_has_one_row_per_model_with_dynamo_leading_columns() -> None:
    text = to_csv(
        suite(
            row(
                "a",
                speedup=1.5,
                eager_ms=3.0,
                compiled_ms=2.0,
                batch_size=8,
                eager_spread=Spread(q1=2.9, q3=3.2, min=2.8, max=3.5),
            ),
            row("b", "fail_accuracy", None, message="differs, badly"),
        )
    )
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert rows[0][:5] == ["dev", "name", "batch_size", "status", "speedup"]
    assert rows[1][:5] == ["cpu", "a", "8", "pass", "1.5"]
    assert math.isclose(float(rows[1][CSV_COLUMNS.index("eager_iqr_rel")]), 0.1)
    assert rows[2][3] == "fail_accuracy" and rows[2][-1] == "differs, badly"


def test_text_table_names_both_geomeans_and_failures() -> None:
    text = to_text(
        suite(row("a", speedup=2.0), row("b", speedup=0.5), row("c", "timeout", None, message="killed"))
    )
    assert "pass rate 67%, 2/3" in text
    assert "geomean speedup 1.00x (slowdowns included)" in text
    assert "1.41x clipped at 1.0" in text
    assert "c: timeout: killed" in text


def test_markdown_table_has_a_row_per_model_and_the_summary() -> None:
    text = to_markdown(
        suite(
            row(
                "a",
                speedup=2.0,
                speedup_q1=1.9,
                speedup_q3=2.1,
                eager_ms=4.0,
                compiled_ms=2.0,
                eager_spread=Spread(q1=3.8, q3=4.2, min=3.5, max=5.0),
            ),
            row("b", "compile_error", None),
        )
    )
    lines = text.splitlines()
    assert lines[2].startswith("| model | status | speedup")
    assert "| a | pass | 2.00x | 1.90–2.10 | 4 (10%) | 2 |" in text
    assert "| b | compile_error | - |" in text
    assert "Pass rate 50%, 1/2; geomean speedup 2.00x" in text
