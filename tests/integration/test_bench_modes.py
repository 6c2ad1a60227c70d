"""`rocmkit bench models` beyond the model set (test_bench_models.py): a training step, a model
that hangs, the listing that imports no torch, and transformers' classes where installed. Their
own file, so xdist (--dist loadfile) runs them beside the set rather than after it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.bench import assert_measured, bench, faulty_environ, rows

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def faulty_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return faulty_environ(tmp_path_factory)


@pytest.mark.slow
def test_training_step_is_compiled_and_checked() -> None:
    proc = bench(dict(os.environ), "--models", "mlp", "--mode", "train", "--repeat", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    for m in rows(proc).values():
        assert_measured(m)
        assert m["accuracy"]["tolerance"] == 1e-2  # the harness's training tolerance


@pytest.mark.slow
def test_a_hanging_model_is_killed_at_its_timeout(faulty_env: dict[str, str]) -> None:
    proc = bench(faulty_env, "--models", "hangs", "--timeout", "8", timeout=120)
    assert proc.returncode == 1
    assert "hangs" in proc.stdout and "timeout" in proc.stdout
    assert "did not finish within 8 s" in proc.stdout


def test_listing_does_not_import_torch() -> None:
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
    # An unknown name is one line and exit 4 before any child: tests/unit/test_bench_cli.py.


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
