"""`rocmkit bench models` for real on this CPU: real inductor compiles, real timing, real accuracy checks.

Extra models written by the test (through ROCMKIT_BENCH_EXTRA_MODELS) stand for the
failures a user can meet: a graph the compiler gets wrong (its traced code differs
from eager, as a miscompilation would), an op the compiler cannot trace, a model that
hangs. Each is its own row and the other models go on.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rocmkit.bench.models import BUILTIN, EXTRA_MODELS_ENV
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import Status
from rocmkit.machine import Machine

pytestmark = pytest.mark.integration

FAULTY = '''
"""Test models: one the compiler gets wrong, one it cannot compile, one that hangs."""

from rocmkit.bench.models import Built, ModelSpec


def _wrong(cfg, impl):
    import torch

    class WrongWhenCompiled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            y = self.lin(x)
            if torch.compiler.is_compiling():  # only the traced graph computes this
                y = y * 1.5
            return y

    return Built(module=WrongWhenCompiled(), inputs=(torch.randn(4, 16),), impl="test", batch_size=4)


def _broken(cfg, impl):
    import torch

    @torch.library.custom_op("rocmkit_test::no_fake", mutates_args=())
    def no_fake(x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @no_fake.register_fake
    def _(x):
        raise RuntimeError("rocmkit test: this op cannot be traced")

    class FailsToCompile(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x):
            return no_fake(self.lin(x))

    return Built(module=FailsToCompile(), inputs=(torch.randn(4, 16),), impl="test", batch_size=4)


def _hangs(cfg, impl):
    import time

    time.sleep(3600)
    raise AssertionError("unreachable")


SIZES = {"tiny": {}}
MODELS = [
    ModelSpec(name="wrong_when_compiled", suite="other", description="test", sizes=SIZES, build=_wrong),
    ModelSpec(name="fails_to_compile", suite="other", description="test", sizes=SIZES, build=_broken),
    ModelSpec(name="hangs", suite="other", description="test", sizes=SIZES, build=_hangs),
]
'''


@pytest.fixture
def faulty_env(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "faulty_models.py"
    path.write_text(FAULTY)
    return {**os.environ, EXTRA_MODELS_ENV: str(path)}


def bench(env: dict[str, str], *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", "bench", "models", "--device", "cpu", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def rows(proc: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    data = json.loads(proc.stdout)
    assert data["schema"] == "rocmkit.bench/1"
    return {m["name"]: m for m in data["models"]}


def assert_measured(m: dict[str, Any]) -> None:
    assert m["status"] == "pass", m
    assert m["speedup"] > 0 and m["eager_ms"] > 0 and m["compiled_ms"] > 0
    assert m["speedup"] == pytest.approx(m["eager_ms"] / m["compiled_ms"])
    assert m["speedup_q1"] <= m["speedup_q3"]
    assert (
        m["eager_spread"]["min"]
        <= m["eager_spread"]["q1"]
        <= m["eager_spread"]["q3"]
        <= m["eager_spread"]["max"]
    )
    assert m["compile_s"] > 0 and m["compiled_peak_mb"] is not None and m["memory_kind"] == "rss_growth"
    assert m["accuracy"]["ok"] and m["accuracy"]["method"] in ("allclose", "fp64_rmse")
    assert m["params"] > 0


@pytest.mark.slow
def test_whole_set_with_a_wrong_and_a_broken_model(faulty_env: dict[str, str], tmp_path: Path) -> None:
    names = [m.name for m in BUILTIN]
    out_csv, out_html = tmp_path / "r.csv", tmp_path / "r.html"
    proc = bench(
        faulty_env,
        "--models",
        ",".join(["wrong_when_compiled", *names[:2], "fails_to_compile", *names[2:]]),
        "--repeat",
        "5",
        "--json",
        "--csv",
        str(out_csv),
        "--html",
        str(out_html),
    )
    assert proc.returncode == 1, proc.stderr  # not every model passed
    by_name = rows(proc)
    for name in names:
        assert_measured(by_name[name])
    wrong = by_name["wrong_when_compiled"]
    assert wrong["status"] == "fail_accuracy"
    assert wrong["accuracy"]["method"].startswith("failed:") and wrong["speedup"] is None
    broken = by_name["fails_to_compile"]
    assert broken["status"] == "compile_error"
    assert "cannot be traced" in broken["message"] and 'File "' in broken["stderr_tail"]
    summary = json.loads(proc.stdout)["summary"]
    assert summary["pass_rate"] == "71%, 5/7"
    assert summary["geomean_speedup_clipped"] >= 1.0 and summary["geomean_speedup"] > 0
    assert len(list(csv.reader(out_csv.open()))) == 8
    page = out_html.read_text()
    assert "<svg" in page and "fail_accuracy" in page and "distilgpt2" in page
    assert "fails_to_compile: compile_error" in proc.stderr  # progress goes to stderr


@pytest.mark.slow
def test_training_step_is_compiled_and_checked() -> None:
    proc = bench(dict(os.environ), "--models", "mlp", "--mode", "train", "--repeat", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    for m in rows(proc).values():
        assert_measured(m)
        assert m["accuracy"]["tolerance"] == 1e-2  # the harness's training tolerance


@pytest.mark.slow
def test_perturbed_compiled_output_is_caught() -> None:
    proc = bench(dict(os.environ), "--models", "mlp", "--repeat", "2", "--json", "--perturb-compiled", "0.5")
    assert proc.returncode == 1
    m = rows(proc)["mlp"]
    assert m["status"] == "fail_accuracy" and m["accuracy"]["max_abs_diff"] == pytest.approx(0.5, rel=1e-3)


@pytest.mark.slow
def test_a_hanging_model_is_killed_at_its_timeout(faulty_env: dict[str, str]) -> None:
    start = time.monotonic()
    proc = bench(faulty_env, "--models", "hangs", "--timeout", "8", timeout=120)
    assert time.monotonic() - start < 60
    assert proc.returncode == 1
    assert "hangs" in proc.stdout and "timeout" in proc.stdout
    assert "did not finish within 8 s" in proc.stdout


def test_listing_and_bad_names_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from rocmkit.cli import main\n"
        "try:\n"
        "    main(['bench', 'models', '--list'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "try:\n"
        "    main(['bench', 'models', '--suite', 'huggingface', '--list'])\n"
        "finally:\n"
        "    assert 'torch' not in sys.modules, 'torch imported'\n"
        "    assert 'transformers' not in sys.modules, 'transformers imported'\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "distilgpt2" in proc.stdout and "t5_small" in proc.stdout
    assert "meta-llama/Llama-3.2-1B" in proc.stdout
    bad = bench(dict(os.environ), "--models", "gpt5", timeout=60)
    assert bad.returncode == 4
    assert bad.stderr.strip().startswith("error: unknown model 'gpt5'") and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_doctor_level_3_on_the_cpu() -> None:
    from rocmkit.doctor.checks.models import compile_speedup

    ctx = CheckContext(
        machine=Machine(),
        backend="cpu",
        # The session's cache: the mlp compiled by the tests above is a cache hit here.
        cache_dir=Path(os.environ["ROCMKIT_CACHE_DIR"]),
        options={"models.names": ["mlp"], "models.repeat": 3},
    )
    result = compile_speedup(ctx)
    assert not isinstance(result, list)
    assert result.status is Status.PASS, result.message  # report only on the CPU
    assert "report only" in result.message and result.backend == "cpu"
    assert {f.name for f in result.figures} >= {"geomean_speedup", "pass_rate", "mlp.speedup"}
    assert result.details["bench"]["models"][0]["status"] == "pass"


@pytest.mark.slow
def test_transformers_classes_when_installed() -> None:
    # transformers is optional and absent from rocmkit's CI: this runs where it is installed.
    pytest.importorskip("transformers")
    proc = bench(
        dict(os.environ),
        "--models",
        "distilgpt2,t5_small,camembert",
        "--impl",
        "transformers",
        "--repeat",
        "2",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    for m in rows(proc).values():
        assert_measured(m)
        assert m["impl"] == "transformers"
