"""`rocmkit bench models` beyond the model set (test_bench_models.py): a training step, a model
that hangs, the listing that imports no torch (transformers' classes: the set's rows). Their own
file, so xdist (--dist loadfile) runs them beside the set rather than after it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bench import assert_measured, bench, faulty_environ, rows

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def faulty_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return faulty_environ(tmp_path_factory)


def _whoami(env: dict[str, str], tmp_path: Path, *models: str, isolation: str = "fork") -> tuple[
    subprocess.CompletedProcess[str], list[tuple[int, int, str]]
]:
    log = tmp_path / f"whoami-{isolation}.txt"
    proc = bench(
        {**env, "ROCMKIT_TEST_WHOAMI": str(log)},
        "--models",
        ",".join(models),
        "--repeat",
        "1",
        "--warmup",
        "1",
        "--isolation",
        isolation,
        "--json",
    )
    lines = log.read_text().splitlines() if log.is_file() else []
    seen = [(int(pid), int(ppid), parent) for pid, ppid, parent in (ln.split(" ", 2) for ln in lines)]
    return proc, seen


def test_models_are_forks_of_one_worker_and_a_crash_or_a_dead_worker_is_one_row(
    faulty_env: dict[str, str], tmp_path: Path
) -> None:
    proc, seen = _whoami(faulty_env, tmp_path, "whoami", "crashes", "whoami2", "kills_its_parent", "whoami")
    assert proc.returncode == 1, proc.stderr
    by_name = rows(proc)
    assert [by_name[n]["status"] for n in ("whoami", "whoami2")] == ["pass", "pass"]
    # A segfault is that model's row; the worker lives on and the next model is its fork.
    assert by_name["crashes"]["status"] == "error"
    assert "signal 11" in by_name["crashes"]["message"]
    # The worker itself killed (as the OOM killer may): that model's row, and a new worker.
    assert by_name["kills_its_parent"]["status"] == "error"
    assert "bench worker died while it ran (killed by SIGKILL)" in by_name["kills_its_parent"]["message"]
    # The three whoami rows ran (the last name twice on the command line counts once).
    assert len(seen) == 2
    (_, first_parent, cmdline), (_, second_parent, _) = seen
    assert "rocmkit.proc.prefork_worker" in cmdline  # forked by the worker, not spawned by the CLI
    assert first_parent == second_parent  # one worker: torch, dynamo and inductor imported once


def test_the_spawn_baseline_runs_each_model_in_a_fresh_interpreter(faulty_env: dict[str, str], tmp_path: Path) -> None:
    proc, seen = _whoami(faulty_env, tmp_path, "whoami", isolation="spawn")
    assert proc.returncode == 0, proc.stderr
    [(_, _, parent)] = seen
    # Its parent is the bench command itself: a fresh interpreter, as before the worker.
    assert "rocmkit.proc.prefork_worker" not in parent and "rocmkit bench models" in parent


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


def test_the_command_recorded_is_the_one_run_not_sys_argv(
    faulty_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # In-process (the API, a test) the command line is what main() was given: bench used to read
    # sys.argv (here pytest's) and recorded a bare "rocmkit bench models". A real run of one model
    # whose child crashes: the quickest real row there is.
    import json

    from rocmkit.bench.models import EXTRA_MODELS_ENV
    from rocmkit.cli import main

    monkeypatch.setenv(EXTRA_MODELS_ENV, faulty_env[EXTRA_MODELS_ENV])
    argv = ["bench", "models", "--device", "cpu", "--models", "crashes", "--repeat", "1", "--json"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    data = json.loads(capsys.readouterr().out)
    assert exc.value.code == 1 and data["models"][0]["status"] != "pass"
    assert data["command"] == "rocmkit " + " ".join(argv)
