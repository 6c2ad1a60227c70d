"""Adding a Triton smoke kernel touches one file: drop a module into a copy of rocmkit's
``kernels/`` folder and the doctor lists it, runs it under Triton's interpreter, and fails
a wrong one; nothing else in the copy is edited."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]

# The whole kernel: declaration, Triton kernel, launcher, check body and ahead-of-time build.
# NAME and OP are filled in: a right kernel (a * x + y) and a wrong one (a * x - y).
KERNEL = '''"""saxpy: out = a * x + y over an odd size (the last block is partial)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import triton
import triton.language as tl

from rocmkit.kernels.spec import Build, KernelRun, Report

CHECK = {
    "level": 1,
    "order": 50,
    "description": "NAME: out = a*x + y over an odd size, against torch",
    "timeout_s": 120.0,
    "options": {
        "NAME_n": {
            "help": "elements in NAME",
            "kind": "positive_int",
            "gpu": 16_777_223,
            "interpreter": 10_007,
        },
    },
    "tolerances": {
        "float32": {
            "atol": 1e-6,
            "rtol": 1e-6,
            "source": "a*x + y rounds twice in torch and once if the compiler fuses it (FMA): one fp32 ulp",
        },
    },
}

A = 2.5
BLOCK = 1024


@triton.jit
def _NAME_kernel(x_ptr, y_ptr, out_ptr, a, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, a * x OP y, mask=mask)


def saxpy(a: float, x: Any, y: Any) -> Any:
    import torch

    out = torch.empty_like(x)
    n = out.numel()
    _NAME_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, a, n, BLOCK=BLOCK)
    return out


def run(k: KernelRun) -> Report:
    import torch

    gen = k.generator()
    n = k.size("NAME_n")
    x = torch.randn(n, generator=gen).to(k.torch_device)
    y = torch.randn(n, generator=gen).to(k.torch_device)
    m = k.vs_copy(
        kernel=lambda: saxpy(A, x, y),
        expected=A * x + y,
        dtype="float32",
        label=f"float32 n={n}",
        work=3 * n * x.element_size(),
        copy_n_bytes=n * x.element_size(),
    )
    return Report(what="NAME", runs=[m], details={"n": n})


def aot_builds(backend: str) -> Iterator[Build]:
    yield Build(
        kernel="NAME",
        variant="float32",
        fn=_NAME_kernel,
        signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "a": "fp32", "n": "i32"},
        constexprs={"BLOCK": BLOCK},
    )
'''


def _kernel(name: str, op: str) -> str:
    return KERNEL.replace("NAME", name).replace(" OP ", f" {op} ")


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rocmkit copied as it is, plus two kernel files and nothing else."""
    root = tmp_path_factory.mktemp("one-file")
    shutil.copytree(REPO / "rocmkit", root / "rocmkit", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "rocmkit" / "kernels" / "saxpy.py").write_text(_kernel("saxpy", "+"))
    (root / "rocmkit" / "kernels" / "saxpy_wrong.py").write_text(_kernel("saxpy_wrong", "-"))
    return root


def _doctor(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_CACHE_DIR")}
    env.update(
        PYTHONPATH=str(copy),
        ROCMKIT_CACHE_DIR=str(copy / "cache"),
        ROCMKIT_MATRICES_DIR=str(REPO / "matrices"),
    )
    return subprocess.run(
        [sys.executable, "-m", "rocmkit", "doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=copy,
    )


def test_the_new_kernel_is_listed_with_its_level_and_options(copy: Path) -> None:
    proc = _doctor(copy, "--list")
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(ln for ln in proc.stdout.splitlines() if re.search(r"\btriton\.saxpy\b", ln))
    assert re.match(r"^1\s+triton\.saxpy\s+child\s+torch,triton\s+saxpy: out = a\*x \+ y", line), line
    assert line.endswith("[--set repeats, saxpy_n, warn_fraction]"), line
    # The shipped kernels are still there, unchanged.
    assert "triton.matmul" in proc.stdout and "triton.codegen" in proc.stdout


def test_the_new_kernel_runs_and_passes_and_a_wrong_one_fails(copy: Path) -> None:
    proc = _doctor(
        copy,
        "--backend",
        "cpu",
        "--json",
        "--only",
        "triton.saxpy",
        "--only",
        "triton.saxpy_wrong",
        "--set",
        "saxpy_n=5003",
    )
    report = json.loads(proc.stdout)
    by = {r["name"]: r for r in report["results"]}
    assert set(by) == {"triton.saxpy", "triton.saxpy_wrong"}, proc.stderr[-2000:]
    right, wrong = by["triton.saxpy"], by["triton.saxpy_wrong"]
    assert right["status"] == "pass", right["message"]
    assert right["level"] == 1 and right["backend"] == "cpu-interpreter"
    assert right["details"]["n"] == 5003  # the --set key reached the module's run()
    assert right["details"]["runs"][0]["comparison"]["atol"] == 1e-6  # its declared tolerance
    assert "saxpy correct" in right["message"]
    # a*x - y is off by 2|y|: far outside the declared tolerance.
    assert wrong["status"] == "fail", wrong["message"]
    assert "saxpy_wrong gives wrong results" in wrong["message"] and "elements outside atol 1e-06" in wrong["message"]
    assert proc.returncode == 1  # a check failed


def test_a_bad_declaration_is_one_error_naming_the_file(tmp_path: Path) -> None:
    shutil.copytree(REPO / "rocmkit", tmp_path / "rocmkit", ignore=shutil.ignore_patterns("__pycache__"))
    bad = tmp_path / "rocmkit" / "kernels" / "saxpy.py"
    bad.write_text(_kernel("saxpy", "+").replace('"gpu": 16_777_223', '"gpu": 2**24 + 7'))
    proc = _doctor(tmp_path, "--list")
    # The other checks are still listed; the kernel checks' module reports the file and the fault.
    assert proc.returncode == 0 and "env.device_nodes" in proc.stdout
    assert f"{bad}: CHECK is not a literal: '2 ** 24 + 7' on line" in proc.stderr, proc.stderr
