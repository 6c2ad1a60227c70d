"""The pure parts of the kernel checks: tolerances, figure arithmetic, sizes, timing, verdicts."""

from __future__ import annotations

import math
import sys
import types
from pathlib import Path

import pytest

from rocmkit.arch import base_arch, override_to_gfx
from rocmkit.doctor import harness, targets
from rocmkit.doctor.checks import kernels as kchecks
from rocmkit.doctor.checks.attention import attention_flops
from rocmkit.doctor.result import Status
from rocmkit.errors import UsageError
from rocmkit.kernels import runtime, timing
from rocmkit.kernels.compare import Comparison
from rocmkit.kernels.metrics import copy_bytes, gb_per_s, median, perf_verdict, tflop_per_s
from rocmkit.kernels.sizes import defaults, kernel_sizes
from rocmkit.kernels.spec import Measurement
from rocmkit.kernels.tolerance import Tolerance, table, tolerance
from rocmkit.proc.result_file import RESULT_ENV

GPU = defaults("rocm")
INTERPRETER = defaults("cpu")
TABLE = table()

# --- tolerances -----------------------------------------------------------------


def test_matmul_fp16_is_the_tutorials_except_on_cdna2() -> None:
    assert tolerance("matmul", "float16", "gfx942:sramecc+:xnack-") == TABLE[("matmul", "float16")]
    assert tolerance("matmul", "float16", "gfx942").rtol == 0.0
    assert tolerance("matmul", "float16", "sm_90").atol == 1e-2
    cdna2 = tolerance("matmul", "float16", "gfx90a:sramecc+:xnack-")
    assert (cdna2.atol, cdna2.rtol) == (1e-2, 1e-2)
    assert "is_hip_cdna2" in cdna2.source


def test_exact_kernels_have_no_slack() -> None:
    assert tolerance("vector_add", "float32").exact
    assert tolerance("atomics", "int32", "gfx90a").exact
    assert not tolerance("softmax", "float32").exact


def test_every_tolerance_names_its_source() -> None:
    for key, tol in TABLE.items():
        assert tol.source.strip(), key
        assert tol.atol >= 0 and tol.rtol >= 0


def test_unknown_dtype_is_a_usage_error_naming_the_known_ones() -> None:
    with pytest.raises(UsageError) as err:
        tolerance("matmul", "float8_e4m3fn")
    assert "bfloat16" in (err.value.fix or "") and "float16" in (err.value.fix or "")


def test_tolerance_rule_is_allclose() -> None:
    tol = Tolerance(atol=1e-2, rtol=1e-2, source="t")
    assert tol.allows(0.03, 2.0)  # 0.01 + 0.02
    assert not tol.allows(0.031, 2.0)
    assert tol.describe() == "atol 0.01, rtol 0.01"
    assert Tolerance(atol=0, rtol=0, source="t").describe() == "exact"


@pytest.mark.parametrize(
    ("raw", "want"), [("gfx90a:sramecc+:xnack-", "gfx90a"), ("GFX1100", "gfx1100"), ("", None), (None, None)]
)
def test_base_arch_drops_feature_flags(raw: str | None, want: str | None) -> None:
    assert base_arch(raw) == want


# --- figure arithmetic ------------------------------------------------------------


def test_bandwidth_matches_the_tutorial_formula() -> None:
    # 01-vector-add: gbps = 12 * size / ms * 1e-6 for fp32 (two reads and a write).
    size, ms = 98432, 0.0123
    assert gb_per_s(12 * size, ms) == pytest.approx(12 * size / ms * 1e-6)
    assert copy_bytes(1000) == 2000


def test_tflops_of_a_4096_matmul() -> None:
    flops = 2 * 4096**3
    assert tflop_per_s(flops, 1.0) == pytest.approx(137.438953472)


@pytest.mark.parametrize("ms", [0.0, -1.0, math.nan, math.inf])
def test_a_duration_must_be_positive_and_finite(ms: float) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        gb_per_s(100, ms)
    with pytest.raises(ValueError):
        tflop_per_s(100, ms)


def test_median() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    with pytest.raises(ValueError):
        median([])


def test_perf_verdict_warns_only_below_a_measured_reference() -> None:
    slow = perf_verdict(400.0, 1000.0, 0.5)
    assert slow.slow and slow.fraction == pytest.approx(0.4)
    ok = perf_verdict(600.0, 1000.0, 0.5)
    assert not ok.slow and ok.fraction == pytest.approx(0.6)
    # No threshold (the CPU interpreter): a fraction, never a warning.
    assert not perf_verdict(1.0, 1000.0, None).slow
    # A reference that was not measured (or measured as 0) flags nothing.
    for ref in (None, 0.0, math.nan):
        v = perf_verdict(1.0, ref, 0.5)
        assert v.fraction is None and not v.slow
    text = slow.describe("GB/s", 400.0, 1000.0, "a device copy")
    assert text == "400 GB/s = 0.4 of a device copy (1000 GB/s), below the 0.5 warning threshold"


def test_attention_flops_halve_under_a_causal_mask() -> None:
    full = attention_flops(4, 16, 2048, 64, causal=False)
    assert full == 4 * 4 * 16 * 2048 * 2048 * 64
    assert attention_flops(4, 16, 2048, 64, causal=True) == full / 2


# --- sizes and options --------------------------------------------------------------


def test_interpreter_sizes_are_small_and_irregular() -> None:
    cpu = kernel_sizes("cpu")
    assert cpu is INTERPRETER
    assert cpu["vector_add_n"] % 2 == 1
    assert cpu["softmax_shape"][1] & (cpu["softmax_shape"][1] - 1)  # not a power of two
    assert cpu["matmul_shape"][0] * cpu["matmul_shape"][1] * cpu["matmul_shape"][2] < 10_000_000
    assert kernel_sizes("rocm") is GPU and kernel_sizes("cuda") is GPU
    assert GPU["matmul_shape"] == (4096, 4096, 4096)
    assert GPU["vector_add_n"] > 2**24 and GPU["vector_add_n"] % 2 == 1


def test_options_override_sizes() -> None:
    s = kernel_sizes(
        "rocm",
        {
            "vector_add_n": "1001",
            "softmax_shape": "1823x781",
            "matmul_shape": [512, 256, 128],
            "histogram_bins": 128,
            "warn_fraction": "0.7",
            "repeats": 5,
        },
    )
    assert s["vector_add_n"] == 1001
    assert s["softmax_shape"] == (1823, 781)
    assert s["matmul_shape"] == (512, 256, 128)
    assert s["histogram_bins"] == 128
    assert s.warn_fraction == 0.7
    assert s.repeats == 5
    assert s["layernorm_shape"] == GPU["layernorm_shape"]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"vector_add_n": 0}, "vector_add_n=0"),
        ({"vector_add_n": "many"}, "positive integer"),
        ({"vector_add_n": True}, "positive integer"),
        ({"repeats": 2.5}, "positive integer"),
        ({"matmul_shape": "4096x4096"}, "3 positive integers"),
        ({"matmul_shape": "4096xAx4096"}, "matmul_shape='A' is not a positive integer"),
        ({"histogram_bins": 100}, "power of two"),
        ({"layernorm_block": 3}, "power of two"),
        ({"warn_fraction": 2}, "between 0 and 1"),
        ({"warn_fraction": "fast"}, "between 0 and 1"),
        ({"matmul_dtypes": "float8"}, "one or more of float16, bfloat16, float32"),
        ({"matmul_dtypes": ""}, "one or more of"),
    ],
)
def test_bad_options_are_one_clear_usage_error(options: dict[str, object], fragment: str) -> None:
    with pytest.raises(UsageError) as err:
        kernel_sizes("cpu", options)
    assert fragment in err.value.message
    assert err.value.fix and next(iter(options)) in err.value.fix


# --- runtime and timing -------------------------------------------------------------


def test_prepare_puts_the_compile_cache_under_rocmkit_and_keeps_a_users_choice(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    assert runtime.prepare("cpu", tmp_path, env) == tmp_path / "triton"
    assert env == {"TRITON_CACHE_DIR": str(tmp_path / "triton"), "TRITON_INTERPRET": "1"}
    mine = {"TRITON_CACHE_DIR": "/scratch/triton"}
    assert runtime.prepare("rocm", tmp_path, mine) == Path("/scratch/triton")
    assert "TRITON_INTERPRET" not in mine
    assert runtime.torch_device("rocm") == "cuda" and runtime.torch_device("cpu") == "cpu"


def test_a_compiled_kernel_is_refused_on_the_cpu_backend() -> None:
    class JITFunction:
        pass

    class InterpretedFunction:
        pass

    runtime.require_interpreted(InterpretedFunction())
    with pytest.raises(runtime.InterpreterNotActive, match="TRITON_INTERPRET=1"):
        runtime.require_interpreted(JITFunction())


def test_cpu_timing_is_a_median_of_fixed_calls() -> None:
    calls: list[int] = []
    ms, method, iterations = timing.measure_ms(lambda: calls.append(1), device="cpu", repeats=4)
    assert method == "wall-clock" and iterations == 4 and len(calls) == 4
    assert ms >= 0
    t = timing.Timing(first_call_ms=120.0, median_ms=2.0, method="wall-clock", iterations=3)
    assert t.compile_ms == 118.0
    assert timing.Timing(first_call_ms=1.0, median_ms=2.0, method="x").compile_ms == 0.0


def _fake_triton(monkeypatch: pytest.MonkeyPatch, do_bench: object) -> None:
    testing = types.ModuleType("triton.testing")
    testing.do_bench = do_bench  # type: ignore[attr-defined]
    pkg = types.ModuleType("triton")
    pkg.testing = testing  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "triton", pkg)
    monkeypatch.setitem(sys.modules, "triton.testing", testing)
    monkeypatch.setattr(timing, "synchronize", lambda device: None)


def test_gpu_timing_uses_do_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_triton(monkeypatch, lambda fn, **kw: 0.25)
    assert timing.measure_ms(lambda: None, device="cuda", repeats=3) == (0.25, "do_bench", None)


@pytest.mark.parametrize("answer", [0.0, math.nan, RuntimeError("hipEventElapsedTime")])
def test_gpu_timing_falls_back_to_fixed_iterations(monkeypatch: pytest.MonkeyPatch, answer: object) -> None:
    def do_bench(fn: object, **kw: object) -> object:
        if isinstance(answer, Exception):
            raise answer
        return answer

    _fake_triton(monkeypatch, do_bench)
    calls: list[int] = []
    ms, method, iterations = timing.measure_ms(lambda: calls.append(1), device="cuda", repeats=3)
    assert method == "fixed-iterations" and iterations == 10
    assert len(calls) == 11  # one warm call, then the timed ones
    assert ms >= 0


# --- verdicts from measurements ----------------------------------------------------------


def _measurement(*, ok: bool, throughput: float, reference: float | None, threshold: float | None):  # type: ignore[no-untyped-def]
    tol = Tolerance(atol=1e-2, rtol=0.0, source="t")
    return Measurement(
        label="float16",
        comparison=Comparison(
            ok=ok, max_abs_error=0.001 if ok else 0.5, mismatched=0 if ok else 7, total=100, tolerance=tol
        ),
        timing=timing.Timing(first_call_ms=900.0, median_ms=1.5, method="do_bench"),
        throughput=throughput,
        unit="TFLOP/s",
        reference=reference,
        reference_name="torch.matmul",
        verdict=perf_verdict(throughput, reference, threshold),
    )


def _device(backend: str) -> harness.Device:
    return harness.Device(
        backend=backend,
        torch_device="cpu" if backend == "cpu" else "cuda",
        arch=None if backend == "cpu" else "gfx942:sramecc+:xnack-",
        name=None,
        cache_dir=Path("/c/triton"),
    )


def _result(backend: str, *runs: Measurement):  # type: ignore[no-untyped-def]
    from rocmkit.doctor.registry import load_checks, running

    # As inside the triton.matmul check, whose name and level the result takes.
    with running(load_checks(("rocmkit.doctor.checks.kernels",))["triton.matmul"]):
        return harness.build_result(
            what="tl.dot matmul",
            device=_device(backend),
            runs=list(runs),
            started=0.0,
            details={"shape": [1, 2, 3]},
        )


def test_fast_and_correct_passes_with_figures_against_the_reference() -> None:
    r = _result("rocm", _measurement(ok=True, throughput=600.0, reference=800.0, threshold=0.5))
    assert r.status is Status.PASS and r.remedy is None
    assert r.backend == "rocm"
    tput = next(f for f in r.figures if f.name == "matmul.throughput")
    assert tput.unit == "TFLOP/s" and tput.reference == 800.0 and tput.fraction == pytest.approx(0.75)
    assert {f.name for f in r.figures} >= {"matmul.first_call", "matmul.time", "matmul.max_abs_error"}
    assert next(f for f in r.figures if f.name == "matmul.compile").value == 898.5  # 900 - 1.5 ms
    assert "0.75 of torch.matmul" in r.message
    assert r.details["arch"] == "gfx942:sramecc+:xnack-" and r.details["runs"][0]["fraction"] == 0.75


def test_slow_node_warns_with_a_remedy() -> None:
    r = _result("rocm", _measurement(ok=True, throughput=300.0, reference=800.0, threshold=0.5))
    assert r.status is Status.WARN
    assert "below the 0.5 warning threshold" in r.message
    assert r.remedy and "amd-smi" in r.remedy
    cuda = _result("cuda", _measurement(ok=True, throughput=300.0, reference=800.0, threshold=0.5))
    assert cuda.remedy and "nvidia-smi" in cuda.remedy


def test_wrong_results_fail_even_when_fast() -> None:
    r = _result(
        "rocm",
        _measurement(ok=True, throughput=700.0, reference=800.0, threshold=0.5),
        _measurement(ok=False, throughput=700.0, reference=800.0, threshold=0.5),
    )
    assert r.status is Status.FAIL
    assert "7 of 100 elements outside atol 0.01, rtol 0" in r.message
    assert r.remedy and "HSA_OVERRIDE_GFX_VERSION" in r.remedy
    # Two runs (fp16 and bf16) get figures of their own.
    assert sum(1 for f in r.figures if f.name.endswith(".throughput")) == 2


def test_interpreter_reports_figures_but_never_warns() -> None:
    r = _result("cpu", _measurement(ok=True, throughput=0.0001, reference=None, threshold=None))
    assert r.status is Status.PASS
    assert r.backend == "cpu-interpreter"
    assert "no performance threshold applies" in r.message
    assert all(f.reference is None for f in r.figures)


# --- options from the environment, codegen targets ---------------------------------------


def test_environment_fills_options_the_context_lacks() -> None:
    from rocmkit.kernels.sizes import merged_options

    env = {"ROCMKIT_KERNEL_MATMUL_SHAPE": "64x64x64", "ROCMKIT_KERNEL_REPEATS": "7", "HOME": "/root"}
    merged = merged_options({"repeats": 2}, env)
    assert merged == {"repeats": 2, "matmul_shape": "64x64x64"}
    assert kernel_sizes("cpu", merged)["matmul_shape"] == (64, 64, 64)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("gfx942", ("rocm", "gfx942", 64)),
        ("gfx90a:sramecc+:xnack-", ("rocm", "gfx90a", 64)),
        ("gfx1100", ("rocm", "gfx1100", 32)),
        ("GFX1151", ("rocm", "gfx1151", 32)),
        ("sm_90", ("cuda", 90, 32)),
        ("sm_90a", ("cuda", 90, 32)),
        ("9.0", ("cuda", 90, 32)),
        ("10.0", ("cuda", 100, 32)),
    ],
)
def test_parse_target(text: str, want: tuple[str, object, int]) -> None:
    from rocmkit.kernels.aot import parse_target

    assert parse_target(text) == want


@pytest.mark.parametrize("text", ["banana", "gfx", "sm_x", "9", ""])
def test_parse_target_refuses_what_is_not_an_arch(text: str) -> None:
    from rocmkit.kernels.aot import parse_target

    with pytest.raises(ValueError, match="not a GPU target"):
        parse_target(text)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ("10.3.0", "gfx1030"),
        ("11.0.0", "gfx1100"),
        ("9.0.10", "gfx90a"),
        ("9.4.2", "gfx942"),
        ("x", None),
        (None, None),
    ],
)
def test_override_arch(value: str | None, want: str | None) -> None:
    assert override_to_gfx(value) == want


def _ctx(**kw: object):  # type: ignore[no-untyped-def]
    from rocmkit.doctor.registry import CheckContext
    from rocmkit.machine import Gpu, Machine

    gpus = kw.pop("gpus", ())
    machine = Machine(gpus=tuple(Gpu(**g) for g in gpus))  # type: ignore[attr-defined]
    return CheckContext(machine=machine, backend="cpu", cache_dir=Path("/nonexistent"), **kw)  # type: ignore[arg-type]


def test_codegen_targets_come_from_options_then_gpus_then_pytorch_rocm_arch() -> None:
    assert targets.codegen_targets(_ctx(options={"codegen_targets": "gfx942, sm_90,gfx942"})) == [
        "gfx942",
        "sm_90",
    ]
    assert targets.codegen_targets(_ctx(options={"codegen_targets": ["gfx90a"]})) == ["gfx90a"]
    assert targets.codegen_targets(_ctx(env={"ROCMKIT_KERNEL_CODEGEN_TARGETS": "gfx1100"})) == ["gfx1100"]
    gpus = [
        {"vendor": "amd", "index": 0, "arch": "gfx90a:sramecc+:xnack-"},
        {"vendor": "amd", "index": 1, "arch": "gfx90a:sramecc+:xnack-"},
        {"vendor": "nvidia", "index": 2, "compute_capability": "9.0"},
        {"vendor": "amd", "index": 3, "arch": "gfx1036", "visible": False},
    ]
    assert targets.codegen_targets(_ctx(gpus=gpus)) == ["gfx90a", "9.0"]
    # The runtime compiles for the override's ISA, so that is the one to prove.
    apu = [{"vendor": "amd", "index": 0, "arch": "gfx1103"}]
    assert targets.codegen_targets(_ctx(gpus=apu, env={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})) == ["gfx1100"]
    assert targets.codegen_targets(_ctx(env={"PYTORCH_ROCM_ARCH": "gfx90a;gfx942"})) == ["gfx90a", "gfx942"]
    assert targets.codegen_targets(_ctx()) == []


def test_codegen_without_targets_skips_with_how_to_name_them() -> None:
    r = kchecks.codegen(_ctx())
    assert r.status is Status.SKIP
    assert r.remedy and "ROCMKIT_KERNEL_CODEGEN_TARGETS" in r.remedy


def test_codegen_with_a_bad_target_name_is_an_error_before_anything_starts() -> None:
    r = kchecks.codegen(_ctx(options={"codegen_targets": "gfx942,banana"}))
    assert r.status is Status.ERROR
    assert "banana" in r.message and r.remedy and "sm_90" in r.remedy


def test_a_bad_size_option_is_the_checks_error_with_the_fix() -> None:
    r = kchecks.vector_add(_ctx(options={"vector_add_n": -3}))
    assert r.status is Status.ERROR and r.name == "triton.vector_add"
    assert "vector_add_n=-3" in r.message and r.remedy and "positive integer" in r.remedy


def test_crash_line_picks_llvms_error_out_of_the_dag_dump() -> None:
    stderr = "  t1: f32 = foo\nLLVM ERROR: Cannot select: t4546: f32 = AMDGPUISD::FDOT2\n  t2: i1 = bar\n"
    assert targets.crash_line(stderr) == "LLVM ERROR: Cannot select: t4546: f32 = AMDGPUISD::FDOT2"
    assert targets.crash_line("only this\n") == "only this"
    assert targets.crash_line("") == "no output"


def _fake_compiler(monkeypatch: pytest.MonkeyPatch, answers: dict[str, object]) -> list[list[str]]:
    """Replace the command runner: each target's compiler process answers from ``answers``."""
    import json as _json

    import rocmkit.pyenv
    from rocmkit.proc.runner import CommandResult

    calls: list[list[str]] = []

    def run(argv: list[str], **kw: object) -> CommandResult:
        calls.append(list(argv))
        env: dict[str, str] = kw["env"]  # type: ignore[assignment]
        assert "TRITON_INTERPRET" not in env
        target = argv[-1]
        answer = answers[target]
        if isinstance(answer, CommandResult):
            return answer
        if isinstance(answer, str):  # a damaged result file
            Path(env[RESULT_ENV]).write_text(answer)
            return CommandResult(argv=tuple(argv), status="ok", returncode=0)
        # The child's side of run_json: the result in its file, stdout free for noise.
        out = {"triton": "3.8.0", "targets": {target: answer}}
        Path(env[RESULT_ENV]).write_text(_json.dumps(out))
        return CommandResult(argv=tuple(argv), status="ok", returncode=0, stdout='{"targets": {}}\n')

    monkeypatch.setattr(rocmkit.pyenv, "run", run)
    return calls


def test_codegen_reports_each_target_and_a_crash_as_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmkit.proc.runner import CommandResult

    builds = [{"kernel": "matmul", "variant": "float16", "shared_bytes": 16384, "binary": "hsaco"}]
    crash = CommandResult(
        argv=("python",),
        status="signal",
        returncode=-6,
        stderr="t1: x\nLLVM ERROR: Cannot select: AMDGPUISD::FDOT2\nt2: y\n",
    )
    calls = _fake_compiler(monkeypatch, {"gfx942": {"seconds": 3.5, "builds": builds}, "gfx1010": crash})
    r = kchecks.codegen(_ctx(options={"codegen_targets": "gfx942,gfx1010"}))
    assert len(calls) == 2  # one compiler process per target
    assert r.status is Status.FAIL
    assert "cannot generate code for gfx1010" in r.message and "LLVM ERROR: Cannot select" in r.message
    assert r.details["per_target"]["gfx942"]["builds"] == builds
    assert {f.name: f.value for f in r.figures}["codegen.gfx942.max_shared"] == 16384.0


def test_codegen_passes_when_every_target_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = [{"kernel": "vector_add", "variant": "float32", "shared_bytes": 0, "binary": "cubin"}]
    _fake_compiler(monkeypatch, {"sm_90": {"seconds": 1.25, "builds": builds}})
    r = kchecks.codegen(_ctx(options={"codegen_targets": "sm_90"}))
    assert r.status is Status.PASS
    assert r.message == "triton 3.8.0 compiles every smoke kernel for sm_90 (1 kernels, 1.2 s)"


def test_a_damaged_compiler_result_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_compiler(monkeypatch, {"gfx942": "[" * 100_000})
    r = kchecks.codegen(_ctx(options={"codegen_targets": "gfx942"}))
    assert r.status is Status.ERROR and "\n" not in r.message
    assert "did not report: the child's result file nests deeper than 64 levels" in r.message


def test_a_compiler_that_hangs_is_an_error_not_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from rocmkit.proc.runner import CommandResult

    hung = CommandResult(
        argv=("python", "-m", "rocmkit.kernels.aot", "gfx942"), status="timeout", timeout_s=240
    )
    _fake_compiler(monkeypatch, {"gfx942": hung})
    r = kchecks.codegen(_ctx(options={"codegen_targets": "gfx942"}))
    assert r.status is Status.ERROR
    assert "did not finish within 240 s" in r.message
    assert r.remedy and "python -m rocmkit.kernels.aot gfx942" in r.remedy


def test_matmul_dtypes() -> None:
    assert kernel_sizes("rocm")["matmul_dtypes"] == ("float16", "bfloat16")
    assert kernel_sizes("cpu")["matmul_dtypes"] == ("float32",)
    assert kernel_sizes("cuda", {"matmul_dtypes": "bfloat16, float16"})["matmul_dtypes"] == (
        "bfloat16",
        "float16",
    )
    assert kernel_sizes("cpu", {"matmul_dtypes": ["float16"]})["matmul_dtypes"] == ("float16",)
    with pytest.raises(UsageError, match="no bfloat16") as err:
        kernel_sizes("cpu", {"matmul_dtypes": "bfloat16"})
    assert err.value.fix and "float32" in err.value.fix


def test_a_triton_whose_compile_api_differs_is_an_error_not_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_compiler(
        monkeypatch, {"gfx942": {"error": "TypeError: ASTSource() got an unexpected keyword", "api": True}}
    )
    r = kchecks.codegen(_ctx(options={"codegen_targets": "gfx942"}))
    assert r.status is Status.ERROR
    assert "cannot drive the ahead-of-time compiler" in r.message and r.remedy


def test_every_triton_kernel_module_declares_a_check_that_the_catalog_finds() -> None:
    """A kernel module without ``CHECK`` would be left out of the doctor and triton.codegen
    without a word; read from the source, so this test imports no triton."""
    import ast

    import rocmkit.kernels as package
    from rocmkit.kernels.catalog import kernels

    with_jit: list[str] = []
    for path in sorted(Path(package.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        if any(
            ast.unparse(d).startswith("triton.jit")
            for f in tree.body
            if isinstance(f, ast.FunctionDef)
            for d in f.decorator_list
        ):
            with_jit.append(path.stem)
    assert sorted(with_jit) == ["atomics", "layernorm", "matmul", "softmax", "vector_add"]
    assert sorted(k.name for k in kernels()) == with_jit
