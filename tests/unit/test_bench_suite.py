"""Model selection, extra model files, and the suite's orchestration of child processes (faked here)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from rocmkit.bench import models
from rocmkit.bench.results import ModelResult
from rocmkit.bench.suite import SuiteOptions, child_env, run_suite
from rocmkit.errors import DataError, ToolError, UsageError
from rocmkit.proc.runner import CommandResult

EXTRA = """
from rocmkit.bench.models import Built, ModelSpec

def _build(cfg, impl):
    raise AssertionError("never built in the parent")

MODELS = [ModelSpec(name="extra_one", suite="other", description="x", sizes={"tiny": {}}, build=_build)]
"""


def test_builtin_set_has_the_five_models_at_every_size() -> None:
    names = [m.name for m in models.BUILTIN]
    assert names == ["distilgpt2", "t5_small", "camembert", "resnet", "mlp"]
    for spec in models.BUILTIN:
        assert set(spec.sizes) == set(models.SIZES)


def test_select_keeps_order_and_rejects_unknown_names() -> None:
    assert [m.name for m in models.select(["mlp", "resnet", "mlp"], {})] == ["mlp", "resnet"]
    with pytest.raises(UsageError, match="unknown model 'gpt5'") as exc:
        models.select(["gpt5"], {})
    assert exc.value.fix is not None and "distilgpt2" in exc.value.fix


def test_extra_model_files_add_models(tmp_path: Path) -> None:
    extra = tmp_path / "extra.py"
    extra.write_text(EXTRA)
    env = {models.EXTRA_MODELS_ENV: str(extra)}
    assert "extra_one" in models.all_models(env)
    assert [m.name for m in models.select(["extra_one"], env)] == ["extra_one"]


def test_bad_extra_model_files_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a file"):
        models.all_models({models.EXTRA_MODELS_ENV: str(tmp_path / "missing.py")})
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(UsageError, match="does not define MODELS"):
        models.all_models({models.EXTRA_MODELS_ENV: str(empty)})
    broken = tmp_path / "broken.py"
    broken.write_text("MODELS = [\n")
    with pytest.raises(UsageError, match=r"broken.py fails to load \(line 1\): SyntaxError"):
        models.all_models({models.EXTRA_MODELS_ENV: str(broken)})
    raising = tmp_path / "raising.py"
    raising.write_text("import no_such_module_here\n")
    with pytest.raises(UsageError, match="ModuleNotFoundError"):
        models.all_models({models.EXTRA_MODELS_ENV: str(raising)})


def test_child_env_sets_caches_and_hides_gpus_on_cpu(tmp_path: Path) -> None:
    env = child_env({"PATH": "/bin", "TORCHINDUCTOR_CACHE_DIR": "/mine"}, tmp_path, "cpu")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == "/mine"  # the user's own setting wins
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "triton")
    if (os.cpu_count() or 1) <= 4:
        assert env["TORCHINDUCTOR_COMPILE_THREADS"] == "1"
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HIP_VISIBLE_DEVICES"] == ""
    gpu = child_env({"PATH": "/bin"}, tmp_path, "cuda")
    assert "CUDA_VISIBLE_DEVICES" not in gpu and "TORCHINDUCTOR_COMPILE_THREADS" not in gpu


# Result files a broken or hostile child could leave: each must be that model's error row.
DAMAGED = {
    "torn": '{"name": "distilgpt2", "status": "pa',
    "deep": "[" * 100_000,
    "not_a_row": '{"name": "mlp", "status": "pass", "eager_spread": [1, 2]}',
    "a_list": "[1, 2, 3]",
}


class FakeChildren:
    """Stands in for rocmkit.proc.runner.run: answers the probe and each model's child."""

    def __init__(
        self, backend: str = "cpu", behaviour: dict[str, str] | None = None, *, device: str = "fake", speedup: float = 1.25
    ) -> None:
        self.backend = backend
        self.device = device
        self.speedup = speedup
        self.behaviour = behaviour or {}
        self.calls: list[tuple[list[str], float]] = []
        self.jobs: list[dict[str, Any]] = []

    def __call__(self, argv: list[str], *, timeout: float, env: dict[str, str]) -> CommandResult:
        self.calls.append((list(argv), timeout))
        assert argv[1:3] == ["-m", "rocmkit.bench.child"]
        if argv[3] == "probe":
            Path(argv[4]).write_text(
                json.dumps(
                    {
                        "backend": self.backend,
                        "device": self.device,
                        "versions": {"torch": "2.13.0"},
                    }
                )
            )
            return CommandResult(argv=tuple(argv), status="ok", returncode=0)
        job: dict[str, Any] = json.loads(Path(argv[4]).read_text())
        self.jobs.append(job)
        name = job["model"]
        what = self.behaviour.get(name, "pass")
        if what == "timeout":
            return CommandResult(argv=tuple(argv), status="timeout", stderr="compiling...", timeout_s=timeout)
        if what == "crash":
            return CommandResult(
                argv=tuple(argv), status="signal", returncode=-11, stderr="Segmentation fault"
            )
        if what in DAMAGED:
            Path(argv[5]).write_text(DAMAGED[what])
            return CommandResult(argv=tuple(argv), status="ok", returncode=0)
        row = ModelResult(
            name=name,
            status="compile_error" if what == "compile_error" else "pass",
            speedup=None if what == "compile_error" else self.speedup,
            message="",
        )
        Path(argv[5]).write_text(json.dumps(row.to_dict()))
        return CommandResult(argv=tuple(argv), status="ok", returncode=0, stderr="Traceback: boom")


def test_each_model_gets_its_own_child_and_failures_become_rows(tmp_path: Path) -> None:
    fake = FakeChildren(behaviour={"t5_small": "timeout", "camembert": "crash", "resnet": "compile_error"})
    seen: list[str] = []
    suite = run_suite(
        SuiteOptions(repeat=3, cache_dir=tmp_path, timeout_s=42.0),
        environ={"PATH": "/bin"},
        runner=fake,
        on_result=lambda r: seen.append(r.name),
    )
    assert seen == ["distilgpt2", "t5_small", "camembert", "resnet", "mlp"]
    status = {m.name: m.status for m in suite.models}
    assert status == {
        "distilgpt2": "pass",
        "t5_small": "timeout",
        "camembert": "error",
        "resnet": "compile_error",
        "mlp": "pass",
    }
    by_name = {m.name: m for m in suite.models}
    assert "42 s" in by_name["t5_small"].message
    assert "signal 11" in by_name["camembert"].message
    assert by_name["resnet"].stderr_tail == "Traceback: boom"  # kept for rows that did not pass
    assert by_name["mlp"].stderr_tail == ""
    assert suite.size == "tiny" and suite.backend == "cpu"  # CPU default size
    assert all(t == 42.0 for argv, t in fake.calls if argv[3] == "run")
    opts = fake.jobs[0]["options"]
    assert (opts["repeat"], opts["device"], opts["size"], opts["mode"]) == (3, "cpu", "tiny", "infer")
    assert suite.summary.pass_rate == "40%, 2/5"


def test_a_damaged_result_file_is_that_models_error_row(tmp_path: Path) -> None:
    names = ("distilgpt2", "t5_small", "camembert", "resnet")
    fake = FakeChildren(behaviour=dict(zip(names, DAMAGED, strict=True)))
    suite = run_suite(SuiteOptions(cache_dir=tmp_path), environ={}, runner=fake)
    by_name = {m.name: m for m in suite.models}
    assert by_name["mlp"].status == "pass"  # the run went on
    for name in names:
        row = by_name[name]
        assert row.status == "error" and "\n" not in row.message and len(row.message) <= 300, row
        assert f"the result file of {name}" in row.message
    assert "not valid JSON" in by_name["distilgpt2"].message
    assert "nests deeper" in by_name["t5_small"].message
    assert "not a bench row" in by_name["camembert"].message


def test_gpu_backend_defaults_to_full_size(tmp_path: Path) -> None:
    fake = FakeChildren(backend="rocm")
    suite = run_suite(SuiteOptions(models=("mlp",), cache_dir=tmp_path), environ={}, runner=fake)
    assert (suite.backend, suite.size) == ("rocm", "full")


def test_device_cuda_without_a_gpu_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="sees no GPU"):
        run_suite(SuiteOptions(device="cuda", cache_dir=tmp_path), environ={}, runner=FakeChildren())


def test_probe_failures(tmp_path: Path) -> None:
    def no_torch(argv: list[str], **_: Any) -> CommandResult:
        return CommandResult(
            argv=tuple(argv),
            status="failed",
            returncode=1,
            stderr="ModuleNotFoundError: No module named 'torch'",
        )

    with pytest.raises(UsageError, match="torch is not importable"):
        run_suite(SuiteOptions(cache_dir=tmp_path), environ={}, runner=no_torch)

    def hangs(argv: list[str], **_: Any) -> CommandResult:
        return CommandResult(argv=tuple(argv), status="timeout", timeout_s=120)

    with pytest.raises(ToolError, match="probing torch failed"):
        run_suite(SuiteOptions(cache_dir=tmp_path), environ={}, runner=hangs)

    def damaged(text: str) -> Any:
        def child(argv: list[str], **_: Any) -> CommandResult:
            Path(argv[4]).write_text(text)
            return CommandResult(argv=tuple(argv), status="ok", returncode=0)

        return child

    with pytest.raises(DataError, match="the torch probe's result file nests deeper"):
        run_suite(SuiteOptions(cache_dir=tmp_path), environ={}, runner=damaged("{" * 100_000))
    with pytest.raises(ToolError, match="holds no probe answer"):
        run_suite(SuiteOptions(cache_dir=tmp_path), environ={}, runner=damaged('["cpu"]'))


def test_bad_repeat_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        run_suite(SuiteOptions(repeat=0, cache_dir=tmp_path), environ={}, runner=FakeChildren())


def test_impl_transformers_needs_transformers_in_the_child(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="transformers is not importable"):
        run_suite(SuiteOptions(impl="transformers", cache_dir=tmp_path), environ={}, runner=FakeChildren())


def test_the_eta_learns_from_the_models_done_leaving_out_the_cold_first() -> None:
    from rocmkit.bench.suite import eta_s

    assert eta_s([], 5) is None and eta_s([30.0], 4) is None  # the first pays for cold caches
    assert eta_s([30.0, 10.0], 3) == 30.0
    assert eta_s([30.0, 10.0, 12.0, 200.0], 2) == 24.0  # the median: one slow model does not swing it


def test_the_live_eta_counts_down_while_a_model_runs_and_never_grows() -> None:
    import time

    from rocmkit.bench.suite import eta_s, eta_text

    done = [30.0, 10.0, 12.0]  # typical: 11 s
    assert eta_s(done, 3, elapsed=4.0) == 7.0 + 22.0
    assert eta_s(done, 3, elapsed=50.0) == 22.0  # past the typical time: about to end, not -39 s
    assert eta_s(done, 0) == 0.0
    now = time.monotonic()
    assert eta_text(done, 3, now) == "ETA 33 s"
    assert eta_text(done, 3, now - 4.0) == "ETA 29 s"
    # Past the typical time: what is known, not a made-up countdown.
    assert eta_text(done, 3, now - 50.0) == "over the typical 11 s, then about 22 s"
    assert eta_text(done, 1, now - 50.0) == "over the typical 11 s"
    assert eta_text([30.0], 3, now) is None  # nothing learnt yet: no ETA rather than a bad one


def test_the_eta_starts_from_each_models_own_earlier_time_scaled_to_this_run() -> None:
    """Models differ (42 s beside 73 s): their own earlier times, scaled by how this run compares
    with that one on the models done (here 10 % slower), not one typical time for all."""
    from rocmkit.bench.suite import eta_s

    earlier = [80.0, 70.0, 40.0, 60.0, 40.0]
    # Before any model: the earlier times as they were.
    assert eta_s([], 5, ahead=earlier) == sum(earlier)
    # Two done: 88 s and 77 s against 80 s and 70 s earlier, so 1.1 times.
    got = eta_s([88.0, 77.0], 3, seen=earlier[:2], ahead=earlier[2:])
    assert got is not None and abs(got - 1.1 * 140.0) < 1e-9
    # A model with no earlier time takes the typical one of this run (the first left out).
    got = eta_s([88.0, 77.0], 2, seen=earlier[:2], ahead=[40.0, None])
    assert got is not None and abs(got - (1.1 * 40.0 + 77.0)) < 1e-9


def test_the_history_keeps_times_per_setting_and_refuses_an_untrusted_file(tmp_path: Path) -> None:
    from rocmkit.bench import history

    history.save(tmp_path, {history.key("builtin|cpu", "mlp"): 41.234})
    history.save(tmp_path, {history.key("builtin|cpu", "t5_small"): 73.0})
    assert history.load(tmp_path) == {"builtin|cpu|mlp": 41.23, "builtin|cpu|t5_small": 73.0}
    path = history.path_in(tmp_path)
    path.chmod(0o666)  # writable by others: not read back (util/trust.py)
    assert history.load(tmp_path) == {}
