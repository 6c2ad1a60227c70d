"""`rocmkit bench models` for real on this CPU: real inductor compiles, real timing, real accuracy checks.

Extra models (tests.support.bench.FAULTY, through ROCMKIT_BENCH_EXTRA_MODELS) stand for the
failures a user can meet: a graph the compiler gets wrong (its traced code differs from eager,
as a miscompilation would), an op the compiler cannot trace. Each is its own row and the other
models go on. The whole set runs once (model_set); the mlp runs after it in this file reuse its
compiles. Its three transformer models are transformers' own classes where transformers is
installed (--impl transformers). Other modes, a hang and the listing are in test_bench_modes.py
(another xdist worker).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rocmkit.bench.models import BUILTIN
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import Status
from rocmkit.machine import Machine
from tests.support.bench import assert_measured, bench, faulty_environ, rows
from tests.support.engines import skip_or_fail

pytestmark = pytest.mark.integration

TRANSFORMER_MODELS = ("distilgpt2", "t5_small", "camembert")


def _have_transformers() -> bool:
    return importlib.util.find_spec("transformers") is not None


@pytest.fixture(scope="session")
def faulty_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return faulty_environ(tmp_path_factory)


@dataclass(frozen=True)
class SetRun:
    """One run of the whole built-in set with a wrong and a broken model mixed in."""

    proc: subprocess.CompletedProcess[str]
    rows: dict[str, dict[str, Any]]
    csv: Path
    html: Path


@pytest.fixture(scope="session")
def model_set(faulty_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> SetRun:
    # Seven real compiles: run once per session, and every test below reads its rows. It also
    # warms the session's inductor cache, so the mlp runs after it are cache hits.
    out = tmp_path_factory.mktemp("model-set")
    names = [m.name for m in BUILTIN]
    out_csv, out_html = out / "r.csv", out / "r.html"
    proc = bench(
        faulty_env,
        "--models",
        ",".join(["wrong_when_compiled", *names[:2], "fails_to_compile", *names[2:]]),
        # transformers is in the test extra, so in CI these are its classes, asked for by name.
        "--impl",
        "transformers" if _have_transformers() else "auto",
        "--repeat",
        "5",
        "--json",
        "--csv",
        str(out_csv),
        "--html",
        str(out_html),
    )
    return SetRun(proc=proc, rows=rows(proc), csv=out_csv, html=out_html)


@pytest.mark.slow
def test_the_set_exits_1_when_a_model_fails_and_reports_progress_on_stderr(model_set: SetRun) -> None:
    assert model_set.proc.returncode == 1, model_set.proc.stderr  # not every model passed
    assert "fails_to_compile: compile_error" in model_set.proc.stderr  # progress goes to stderr
    assert list(model_set.rows)[:4] == ["wrong_when_compiled", *[m.name for m in BUILTIN][:2], "fails_to_compile"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [m.name for m in BUILTIN])
def test_every_builtin_model_is_measured(model_set: SetRun, name: str) -> None:
    assert_measured(model_set.rows[name])


@pytest.mark.slow
def test_transformers_classes_when_installed(model_set: SetRun) -> None:
    # transformers is in the test extra: CI runs this (a missing one fails there, skips elsewhere).
    # The set's rows (it ran them with --impl transformers): a run of their own compiled the same
    # three models again.
    if not _have_transformers():
        skip_or_fail("transformers is not importable here")
    for name in TRANSFORMER_MODELS:
        m = model_set.rows[name]
        assert_measured(m)
        assert m["impl"] == "transformers"


@pytest.mark.slow
def test_a_model_the_compiler_gets_wrong_fails_accuracy(model_set: SetRun) -> None:
    wrong = model_set.rows["wrong_when_compiled"]
    assert wrong["status"] == "fail_accuracy"
    assert wrong["accuracy"]["method"].startswith("failed:") and wrong["speedup"] is None


@pytest.mark.slow
def test_a_model_the_compiler_cannot_trace_is_a_compile_error(model_set: SetRun) -> None:
    broken = model_set.rows["fails_to_compile"]
    assert broken["status"] == "compile_error"
    assert "cannot be traced" in broken["message"] and 'File "' in broken["stderr_tail"]


@pytest.mark.slow
def test_summary_csv_and_html_of_the_set(model_set: SetRun) -> None:
    summary = json.loads(model_set.proc.stdout)["summary"]
    assert summary["pass_rate"] == "71%, 5/7"
    assert summary["geomean_speedup_clipped"] >= 1.0 and summary["geomean_speedup"] > 0
    with model_set.csv.open() as f:
        assert len(list(csv.reader(f))) == 8
    page = model_set.html.read_text()
    assert "<svg" in page and "fail_accuracy" in page and "distilgpt2" in page


@pytest.mark.slow
def test_perturbed_compiled_output_is_caught() -> None:
    # After the set (same file, so the same xdist worker): the mlp it compiled is a cache hit here.
    proc = bench(dict(os.environ), "--models", "mlp", "--repeat", "2", "--json", "--perturb-compiled", "0.5")
    assert proc.returncode == 1
    m = rows(proc)["mlp"]
    assert m["status"] == "fail_accuracy" and m["accuracy"]["max_abs_diff"] == pytest.approx(0.5, rel=1e-3)


@pytest.mark.slow
def test_doctor_level_3_on_the_cpu() -> None:
    from rocmkit.doctor.checks.models import compile_speedup

    ctx = CheckContext(
        machine=Machine(),
        backend="cpu",
        # The session's cache (this xdist worker's): the mlp the set compiled is a cache hit here.
        cache_dir=Path(os.environ["ROCMKIT_CACHE_DIR"]),
        options={"models.names": ["mlp"], "models.repeat": 3},
    )
    result = compile_speedup(ctx)
    assert not isinstance(result, list)
    assert result.status is Status.PASS, result.message  # report only on the CPU
    assert "report only" in result.message and result.backend == "cpu"
    assert {f.name for f in result.figures} >= {"geomean_speedup", "pass_rate", "mlp.speedup"}
    assert result.details["bench"]["models"][0]["status"] == "pass"
