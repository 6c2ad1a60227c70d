"""The Triton kernel and attention checks for real, on this CPU, under Triton's interpreter.

Each test starts a fresh Python (TRITON_INTERPRET must be set before triton is imported,
as the doctor's child process does) and reads the check results back as JSON.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from rocmkit.doctor.result import CheckResult, Status

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

PRELUDE = """
import json, sys
from pathlib import Path
from rocmkit.doctor.registry import CheckContext
from rocmkit.machine import Machine

def ctx(options=None, backend="cpu"):
    return CheckContext(machine=Machine(), backend=backend, cache_dir=Path(sys.argv[1]), options=options or {})

def emit(results):
    print("RESULTS " + json.dumps([r.to_dict() for r in results]))
"""


def run_child(body: str, cache: Path, *, interpret: bool = True, timeout: float = 180) -> list[CheckResult]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_CACHE_DIR")}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env["PYTHONPATH"] = str(REPO)
    script = PRELUDE + textwrap.dedent(body)
    proc = subprocess.run(
        [sys.executable, "-c", script, str(cache)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS "))
    return [CheckResult.from_dict(d) for d in json.loads(line.removeprefix("RESULTS "))]


@pytest.fixture(scope="module")
def all_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CheckResult]:
    cache = tmp_path_factory.mktemp("kernels-cache")
    results = run_child(
        """
        from rocmkit.doctor.checks import attention, kernels
        c = ctx()
        out = [kernels.vector_add(c), kernels.softmax(c), kernels.matmul(c), kernels.layernorm(c),
               kernels.atomics(c)]
        out += attention.sdpa(c)
        emit(out)
        """,
        cache,
    )
    return {r.name: r for r in results}


KERNELS = ("triton.vector_add", "triton.softmax", "triton.matmul", "triton.layernorm", "triton.atomics")


@pytest.mark.parametrize("name", KERNELS)
def test_every_kernel_passes_under_the_interpreter(all_results: dict[str, CheckResult], name: str) -> None:
    r = all_results[name]
    assert r.status is Status.PASS, r.message
    assert r.backend == "cpu-interpreter"
    assert "no performance threshold applies" in r.message
    short = name.split(".", 1)[1]
    figures = {f.name: f for f in r.figures}
    assert figures[f"{short}.first_call"].value > 0 and figures[f"{short}.time"].value > 0
    assert figures[f"{short}.max_abs_error"].value <= r.details["runs"][0]["comparison"]["atol"] + 1e-3
    # No reference is measured on the CPU, so nothing can be called slow.
    assert all(f.reference is None for f in r.figures)
    assert r.details["interpreter"] is True
    assert r.details["runs"][0]["timing"]["method"] == "wall-clock"
    assert r.details["triton_cache_dir"].endswith("triton")


def test_kernel_specifics(all_results: dict[str, CheckResult]) -> None:
    mm = all_results["triton.matmul"]
    assert mm.details["runs"][0]["label"] == "float32"  # no bf16 in the interpreter
    assert mm.details["shape"] == [192, 160, 208]
    assert all(t["ok"] for t in mm.details["runs"][0]["configs_tried"].values())
    assert all_results["triton.vector_add"].details["n"] % 2 == 1
    assert all_results["triton.atomics"].details["runs"][0]["comparison"]["max_abs_error"] == 0.0
    assert all_results["triton.layernorm"].details["block"] == 512


def test_attention_backends_agree_or_skip_with_a_reason(all_results: dict[str, CheckResult]) -> None:
    math_r = all_results["attention.sdpa.math"]
    assert math_r.status is Status.PASS, math_r.message
    flash = all_results["attention.sdpa.flash"]
    # torch's CPU build has a flash kernel; it must agree with the fp32 math reference.
    assert flash.status is Status.PASS, flash.message
    assert flash.details["comparisons"]["causal"]["ok"] and flash.details["comparisons"]["full"]["ok"]
    tput = next(f for f in flash.figures if f.name == "sdpa.flash.throughput")
    assert tput.unit == "TFLOP/s" and tput.reference is not None and tput.reference > 0
    eff = all_results["attention.sdpa.efficient"]
    # No memory-efficient kernel on the CPU: skip with torch's reason, never fail.
    assert eff.status is Status.SKIP
    assert "not available on cpu" in eff.message and eff.details["reason"]
    assert "attention.sdpa.cudnn" not in all_results  # cuDNN is offered on CUDA only


def test_a_masking_bug_is_caught(tmp_path: Path) -> None:
    """Launch the real vector-add kernel one element short: the unmasked tail stays NaN."""
    (r,) = run_child(
        """
        import torch
        from rocmkit.doctor import harness as k
        from rocmkit.kernels.tolerance import tolerance
        c = ctx()
        device = k.open_device(c)
        mod = k.import_kernel_module("vector_add", device)
        n = 4099
        x, y = torch.randn(n), torch.randn(n)
        def broken():
            out = torch.full_like(x, float("nan"))
            mod._add_kernel[(mod.triton.cdiv(n, mod.BLOCK_SIZE),)](x, y, out, n - 1, BLOCK_SIZE=mod.BLOCK_SIZE)
            return out
        m = k.run_and_measure(kernel=broken, expected=x + y, tolerance=tolerance("vector_add", "float32"),
            device=device, repeats=1, label="float32", work=12 * n, unit="GB/s", reference=None,
            reference_name="a device copy", warn_fraction=0.5)
        from rocmkit.doctor.registry import load_checks, running
        with running(load_checks(("rocmkit.doctor.checks.kernels",))["triton.vector_add"]):
            emit([k.build_result(what="vector add", device=device, runs=[m], started=0.0, details={})])
        """,
        tmp_path,
    )
    assert r.status is Status.FAIL
    assert "1 of 4099 elements outside exact" in r.message
    assert r.remedy


def test_a_wrong_matmul_is_caught(tmp_path: Path) -> None:
    """Multiply by B's transpose (a classic stride bug): the check must fail, not pass."""
    (r,) = run_child(
        """
        import torch
        from rocmkit.doctor import harness as k
        from rocmkit.kernels.tolerance import tolerance
        c = ctx()
        device = k.open_device(c)
        mod = k.import_kernel_module("matmul", device)
        a, b = torch.randn(96, 96), torch.randn(96, 96)
        m = k.run_and_measure(kernel=lambda: mod.matmul(a, b.t()), expected=a @ b,
            tolerance=tolerance("matmul", "float32"), device=device, repeats=1, label="float32",
            work=mod.flops(96, 96, 96), unit="TFLOP/s", reference=None, reference_name="torch.matmul",
            warn_fraction=0.5)
        from rocmkit.doctor.registry import load_checks, running
        with running(load_checks(("rocmkit.doctor.checks.kernels",))["triton.matmul"]):
            emit([k.build_result(what="tl.dot matmul", device=device, runs=[m], started=0.0, details={})])
        """,
        tmp_path,
    )
    assert r.status is Status.FAIL
    assert r.details["runs"][0]["comparison"]["mismatched"] > 0


def test_option_sizes_reach_the_kernels(tmp_path: Path) -> None:
    (r,) = run_child(
        """
        from rocmkit.doctor.checks import kernels
        emit([kernels.softmax(ctx({"softmax_shape": "17x1823"}))])
        """,
        tmp_path,
    )
    assert r.status is Status.PASS, r.message
    assert r.details["shape"] == [17, 1823]


def test_a_compiled_kernel_on_the_cpu_backend_is_an_error_with_a_remedy(tmp_path: Path) -> None:
    """triton imported (and the kernel decorated) without TRITON_INTERPRET: refuse, do not crash."""
    (r,) = run_child(
        """
        import rocmkit.kernels.softmax  # decorated for a GPU: no TRITON_INTERPRET yet
        from rocmkit.doctor.checks import kernels
        emit([kernels.softmax(ctx())])
        """,
        tmp_path,
        interpret=False,
    )
    assert r.status is Status.ERROR
    assert "TRITON_INTERPRET=1" in r.message and r.remedy and "rocmkit doctor" in r.remedy


def test_no_gpu_on_a_gpu_backend_is_an_error_not_a_crash(tmp_path: Path) -> None:
    results = run_child(
        """
        from rocmkit.doctor.checks import attention, kernels
        emit([kernels.matmul(ctx(backend="rocm"))] + attention.sdpa(ctx(backend="cuda")))
        """,
        tmp_path,
    )
    assert [r.status for r in results] == [Status.ERROR, Status.ERROR]
    assert all("sees no GPU" in r.message and r.remedy for r in results)


def test_importing_the_check_modules_imports_neither_torch_nor_triton(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = (
        "import sys, rocmkit.doctor.checks.kernels, rocmkit.doctor.checks.attention, rocmkit.kernels.sizes;"
        "import rocmkit.kernels.tolerance as t; t.table(); rocmkit.kernels.sizes.kernel_sizes('rocm');"
        "heavy = sorted(m for m in ('torch', 'triton') if m in sys.modules); print(heavy); sys.exit(bool(heavy))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_through_the_doctors_child_process(tmp_path: Path) -> None:
    """The doctor's isolation: a fresh child sets the interpreter and the cache folder itself."""
    from rocmkit.doctor import isolate
    from rocmkit.doctor.registry import CheckContext, load_checks
    from rocmkit.machine import Machine

    checks = load_checks(("rocmkit.doctor.checks.kernels", "rocmkit.doctor.checks.attention"))
    assert {c for c in checks if c.startswith(("triton.", "attention."))} == {
        *KERNELS,
        "triton.codegen",
        "attention.sdpa",
    }
    # codegen starts its own compiler processes through the runner, one per target.
    assert not checks["triton.codegen"].isolated and checks["triton.codegen"].level == 1
    assert all(checks[c].isolated for c in (*KERNELS, "attention.sdpa"))
    assert checks["triton.vector_add"].level == 1 and checks["triton.softmax"].level == 1
    assert {
        checks[c].level for c in ("triton.matmul", "triton.layernorm", "triton.atomics", "attention.sdpa")
    } == {2}
    ctx = CheckContext(machine=Machine(), backend="cpu", cache_dir=tmp_path / "cache")
    (r,) = isolate.run_isolated(checks["triton.atomics"], ctx)
    assert r.status is Status.PASS, r.message + json.dumps(r.details)[-2000:]
    assert r.backend == "cpu-interpreter"
    assert r.details["triton_cache_dir"] == str(tmp_path / "cache" / "triton")


# --- ahead-of-time compilation for GPUs this machine does not have --------------------------

# AMD LDS per workgroup on CDNA2/CDNA3 and RDNA3; the most shared memory one block may
# opt into on Hopper (227 KiB).
LDS_BYTES = 65536
HOPPER_SHARED_BYTES = 227 * 1024


@pytest.mark.slow
def test_codegen_compiles_every_kernel_for_amd_and_nvidia_targets(tmp_path: Path) -> None:
    from rocmkit.doctor.checks import kernels
    from rocmkit.doctor.registry import CheckContext
    from rocmkit.machine import Machine

    ctx = CheckContext(
        machine=Machine(), backend="cpu", cache_dir=tmp_path, options={"codegen_targets": "gfx942,sm_90"}
    )
    r = kernels.codegen(ctx)
    assert r.status is Status.PASS, r.message
    amd, nvidia = r.details["per_target"]["gfx942"], r.details["per_target"]["sm_90"]
    # Found by their modules' CHECK (rocmkit/kernels/catalog.py), in the checks' report order.
    kinds = list(dict.fromkeys(b["kernel"] for b in amd["builds"]))
    assert kinds == ["vector_add", "softmax", "matmul", "layernorm", "atomics"]
    assert {b["binary"] for b in amd["builds"]} == {"hsaco"}
    assert {b["binary"] for b in nvidia["builds"]} == {"cubin"}
    # Every tile the ROCm matmul check may launch fits in the LDS.
    assert max(b["shared_bytes"] for b in amd["builds"]) <= LDS_BYTES
    # Compiled as launched (16-byte alignment, unit strides), so the Hopper tiles pipeline:
    # their shared memory is the multi-stage figure, and it still fits.
    assert 65536 < max(b["shared_bytes"] for b in nvidia["builds"]) <= HOPPER_SHARED_BYTES
    # fp16 and bf16, four tiles each.
    assert sum(1 for b in nvidia["builds"] if b["kernel"] == "matmul") == 8
    assert {f.name for f in r.figures} >= {"codegen.gfx942.compile", "codegen.sm_90.max_shared"}
    assert (tmp_path / "triton").is_dir()  # the compile cache lives under rocmkit's cache folder
    cold = r.details["compile_cache"]["triton"]
    assert cold["misses"] > 0
    # A rerun finds every kernel in that cache; --fresh compiles them all again.
    warm = kernels.codegen(ctx).details["compile_cache"]["triton"]
    assert warm == {"hits": cold["hits"] + cold["misses"], "misses": 0}
    again = kernels.codegen(replace(ctx, fresh=True)).details["compile_cache"]["triton"]
    assert again == {"hits": 0, "misses": cold["hits"] + cold["misses"]}


def test_codegen_for_an_isa_that_does_not_exist_fails_with_the_compilers_reason(tmp_path: Path) -> None:
    from rocmkit.doctor.checks import kernels
    from rocmkit.doctor.registry import CheckContext
    from rocmkit.machine import Machine

    ctx = CheckContext(
        machine=Machine(), backend="cpu", cache_dir=tmp_path, options={"codegen_targets": "gfx9999"}
    )
    r = kernels.codegen(ctx)
    assert r.status is Status.FAIL
    assert "cannot generate code for gfx9999" in r.message
    assert r.remedy and "rocmkit plan" in r.remedy


# --- end to end through the CLI ---------------------------------------------------------------


@pytest.mark.slow
def test_rocmkit_doctor_level_2_runs_the_kernels_under_the_interpreter(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_CACHE_DIR")}
    env["ROCMKIT_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rocmkit",
            "doctor",
            "--level",
            "2",
            "--backend",
            "cpu",
            "--json",
            "--only",
            "triton.vector_add",
            "--only",
            "triton.matmul",
            "--only",
            "attention",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=tmp_path,
    )
    report = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    by_name = {r["name"]: r for r in report["results"]}
    assert by_name["triton.vector_add"]["status"] == "pass"
    assert by_name["triton.matmul"]["status"] == "pass"
    assert by_name["triton.matmul"]["backend"] == "cpu-interpreter"
    assert by_name["attention.sdpa.flash"]["status"] == "pass"
    assert by_name["triton.vector_add"]["details"]["triton_cache_dir"] == str(tmp_path / "cache" / "triton")


# --- the GPU code paths, driven on the CPU ---------------------------------------------------


def test_gpu_paths_measure_a_reference_and_flag_a_slow_node(tmp_path: Path) -> None:
    """Pretend the CPU is a ROCm device: the checks then time a torch reference in the same run
    and apply the warning threshold. The interpreted kernels are far slower than torch's CPU
    copy, which is exactly what a slow node looks like."""
    results = run_child(
        """
        from rocmkit.doctor import harness
        from rocmkit.doctor.checks import attention, kernels

        def fake_device(ctx):
            harness.open_device.__wrapped__(ctx)  # sets up the cache and interpreter as usual
            return harness.Device(backend="rocm", torch_device="cpu", arch="gfx90a:sramecc+:xnack-",
                                  name="CPU pretending", cache_dir=Path(sys.argv[1]) / "triton")

        fake_device.__wrapped__ = harness.open_device
        harness.open_device = fake_device
        attention.open_device = fake_device
        small = {"matmul_shape": "64x48x80", "matmul_dtypes": "float16", "vector_add_n": 4099, "softmax_shape": "33x781", "layernorm_shape": "9x1531",
                 "layernorm_block": 512, "histogram_n": 5000, "histogram_bins": 64,
                 "attention_shape": "1x2x64x32", "repeats": 2}
        c = ctx(small)
        emit([kernels.matmul(c), kernels.vector_add(c), kernels.softmax(c), kernels.layernorm(c),
              kernels.atomics(c)]
             + attention.sdpa(c))
        """,
        tmp_path,
    )
    by = {r.name: r for r in results}
    for name in ("triton.vector_add", "triton.softmax", "triton.layernorm"):
        r = by[name]
        assert r.status is Status.WARN, r.message
        assert "below the 0.5 warning threshold" in r.message and "of a device copy" in r.message
        assert r.remedy and "amd-smi" in r.remedy
        bw = next(f for f in r.figures if f.name.endswith(".bandwidth"))
        assert bw.reference is not None and bw.reference > 0 and bw.fraction is not None and bw.fraction < 0.5
        assert r.backend == "rocm" and r.details["arch"] == "gfx90a:sramecc+:xnack-"
    mm = by["triton.matmul"]
    assert "of torch.matmul" in mm.message
    # At this tiny fp16 size torch's CPU matmul is slow too, so the fraction lands near the
    # threshold on either side from run to run: the verdict must follow the measured fraction.
    said = re.search(r"= ([0-9.e+-]+) of torch\.matmul", mm.message)
    assert said, mm.message
    fraction = float(said.group(1))
    assert fraction > 0
    if fraction < 0.5:
        assert mm.status is Status.WARN and "below the 0.5 warning threshold" in mm.message, mm.message
    else:
        assert mm.status is Status.PASS, mm.message
    run = mm.details["runs"][0]
    # Every ROCm tile was tried and correct; gfx90a's CDNA2 tolerance was applied.
    assert len(run["configs_tried"]) == 4 and all(t["ok"] for t in run["configs_tried"].values())
    assert run["comparison"]["rtol"] == 1e-2
    # fp16 on a "GPU": the tutorial's layer-norm tolerance.
    assert by["triton.layernorm"].details["runs"][0]["comparison"]["atol"] == 1e-2
    atomics = by["triton.atomics"]
    assert atomics.status is Status.PASS, atomics.message  # informative reference, no threshold
    assert "of torch.bincount" in atomics.message
    math_r = by["attention.sdpa.math"]
    assert math_r.status is Status.PASS and math_r.details["dtype"] == "float16"
    for name in ("attention.sdpa.flash", "attention.sdpa.efficient"):
        assert by[name].status in (Status.PASS, Status.WARN, Status.SKIP), by[name].message


def test_attention_variants_refused_and_backend_crashes_stay_local(tmp_path: Path) -> None:
    """A backend that refuses causal attention still reports its full-attention agreement, and
    one that raises is that backend's error while the others still run."""
    results = run_child(
        """
        import torch
        import rocmkit.doctor.checks.attention as attention
        real = torch.nn.functional.scaled_dot_product_attention
        cuda = torch.backends.cuda
        state = {"references_done": False}

        def picky(q, k, v, *args, is_causal=False, **kw):
            if state["references_done"]:
                if cuda.flash_sdp_enabled() and not cuda.math_sdp_enabled():
                    raise ValueError("boom in the flash kernel")
                if cuda.math_sdp_enabled() and not cuda.flash_sdp_enabled() and is_causal:
                    raise RuntimeError("No available kernel. Aborting execution.")
            return real(q, k, v, *args, is_causal=is_causal, **kw)

        torch.nn.functional.scaled_dot_product_attention = picky
        check_backend = attention._check_backend

        def after_references(*args, **kw):  # the fp32 references are computed before this
            state["references_done"] = True
            return check_backend(*args, **kw)

        attention._check_backend = after_references
        emit(attention.sdpa(ctx()))
        """,
        tmp_path,
    )
    by = {r.name: r for r in results}
    math_r = by["attention.sdpa.math"]
    assert math_r.status is Status.PASS, math_r.message
    assert "causal attention not offered" in math_r.message
    assert list(math_r.details["comparisons"]) == ["full"] and "causal" in math_r.details["refused"]
    flash = by["attention.sdpa.flash"]
    assert flash.status is Status.ERROR
    assert "boom in the flash kernel" in flash.message and flash.remedy
    assert by["attention.sdpa.efficient"].status is Status.SKIP
