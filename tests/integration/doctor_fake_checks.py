"""Test-only doctor checks that crash, hang and raise in their child process.

Loaded through ROCMKIT_DOCTOR_MODULES (or RunOptions.modules) as
``tests.integration.doctor_fake_checks``; never part of the shipped checks.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status


@check("fake.ok", level=0, description="passes, in a child", isolated=True, timeout_s=30)
def ok(ctx: CheckContext) -> CheckResult:
    return CheckResult(
        name="fake.ok",
        level=0,
        status=Status.PASS,
        message="child ran",
        figures=(Figure(name="answer", value=42.0, unit="units"),),
        details={
            "pid": os.getpid(),
            "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET"),
            "TRITON_CACHE_DIR": os.environ.get("TRITON_CACHE_DIR"),
            "TORCHINDUCTOR_CACHE_DIR": os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
            "triton_imported_before_check": "triton" in sys.modules,
            "backend": ctx.backend,
            "gpus": len(ctx.machine.gpus),
            "prefix": sys.prefix,
        },
    )


@check("fake.segfault", level=0, description="segfaults", isolated=True, timeout_s=30)
def segfault(ctx: CheckContext) -> CheckResult:
    print("fake.segfault: about to crash", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)
    raise AssertionError("unreachable")


@check("fake.hang", level=0, description="hangs", isolated=True, timeout_s=3)
def hang(ctx: CheckContext) -> CheckResult:
    time.sleep(600)
    raise AssertionError("unreachable")


@check("fake.gpu_hang", level=0, description="hangs on the GPU", needs=("gpu",), isolated=True, timeout_s=2)
def gpu_hang(ctx: CheckContext) -> CheckResult:
    time.sleep(600)
    raise AssertionError("unreachable")


@check("fake.gpu_after", level=0, description="a GPU check after a hang", needs=("gpu",), isolated=True)
def gpu_after(ctx: CheckContext) -> CheckResult:
    return CheckResult(name="fake.gpu_after", level=0, status=Status.PASS, message="ran")


@check("fake.raises", level=0, description="raises in the child", isolated=True, timeout_s=30)
def raises(ctx: CheckContext) -> CheckResult:
    raise RuntimeError("boom in the child")


@check("fake.oom", level=0, description="raises an out-of-memory error", isolated=True, timeout_s=30)
def oom(ctx: CheckContext) -> CheckResult:
    raise RuntimeError("HIP out of memory. Tried to allocate 80.00 GiB")


@check("fake.killed", level=0, description="SIGKILLed, as the OOM killer does", isolated=True, timeout_s=30)
def killed(ctx: CheckContext) -> CheckResult:
    os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(5)
    raise AssertionError("unreachable")


@check("fake.exits", level=0, description="exits without a result", isolated=True, timeout_s=30)
def exits(ctx: CheckContext) -> CheckResult:
    print("fake.exits: giving up", file=sys.stderr, flush=True)
    os._exit(17)


@check("fake.many", level=0, description="returns two results", isolated=True, timeout_s=30)
def many(ctx: CheckContext) -> list[CheckResult]:
    return [
        CheckResult(name="fake.many.a", level=0, status=Status.PASS, message="a"),
        CheckResult(name="fake.many.b", level=0, status=Status.WARN, message="b", remedy="do b"),
    ]


@check("fake.odd_details", level=0, description="details JSON cannot encode", isolated=True, timeout_s=30)
def odd_details(ctx: CheckContext) -> CheckResult:
    from pathlib import Path

    return CheckResult(
        name="fake.odd_details", level=0, status=Status.PASS, message="ok", details={"where": Path("/tmp")}
    )


@check("fake.teardown_hang", level=0, description="hangs in an exit handler", isolated=True, timeout_s=3)
def teardown_hang(ctx: CheckContext) -> CheckResult:
    import atexit

    # As GPU runtimes have done in their exit handlers.
    atexit.register(time.sleep, 600)
    return CheckResult(name="fake.teardown_hang", level=0, status=Status.PASS, message="finished")


@check("fake.fail", level=0, description="finds a defect, in process")
def fail(ctx: CheckContext) -> CheckResult:
    return CheckResult(name="fake.fail", level=0, status=Status.FAIL, message="defect", remedy="fix it")


@check("fake.level2", level=2, description="a level-2 check", timeout_s=30)
def level2(ctx: CheckContext) -> CheckResult:
    return CheckResult(name="fake.level2", level=2, status=Status.PASS, message="level 2")


@check("fake.flood", level=0, description="prints without end", isolated=True, timeout_s=60)
def flood(ctx: CheckContext) -> CheckResult:
    line = "fake.flood: " + "x" * 1000 + "\n"
    while True:
        sys.stdout.write(line)


@check("fake.escape_setsid", level=0, description="leaves a grandchild holding its pipes", isolated=True, timeout_s=30)
def escape_setsid(ctx: CheckContext) -> CheckResult:
    import subprocess

    # setsid: the grandchild leaves the check's process group, and keeps stdout and stderr open.
    grandchild = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
    )
    return CheckResult(
        name="fake.escape_setsid", level=0, status=Status.PASS, message="done", details={"grandchild": grandchild.pid}
    )


@check("fake.escape", level=0, description="leaves a grandchild behind", isolated=True, timeout_s=30)
def escape(ctx: CheckContext) -> CheckResult:
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(str(ctx.options["fake_marker"]), "w", encoding="utf-8") as f:
        f.write(str(child.pid))
    return CheckResult(name="fake.escape", level=0, status=Status.PASS, message="left a grandchild")


def _state(name: str) -> CheckResult:
    """What a check sees of the process state an earlier check might have left behind."""
    preloaded = "torch" in sys.modules  # before this check imports it
    import torch

    return CheckResult(
        name=name,
        level=0,
        status=Status.PASS,
        message="state read",
        details={
            "worker_pid": os.getppid(),
            "torch_preloaded": preloaded,
            "leak_env": os.environ.get("ROCMKIT_FAKE_LEAK"),
            "cwd": os.getcwd(),
            "default_dtype": str(torch.get_default_dtype()),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
        },
    )


@check("fake.state_before", level=0, description="reads process state", needs=("torch",), isolated=True)
def state_before(ctx: CheckContext) -> CheckResult:
    return _state("fake.state_before")


@check("fake.set_state", level=0, description="changes process state", needs=("torch",), isolated=True)
def set_state(ctx: CheckContext) -> CheckResult:
    import torch

    os.environ["ROCMKIT_FAKE_LEAK"] = "1"
    os.chdir("/")
    torch.set_default_dtype(torch.float64)
    torch.use_deterministic_algorithms(True)
    return _state("fake.set_state")


@check("fake.kill_worker", level=0, description="kills its parent", needs=("torch",), isolated=True)
def kill_worker(ctx: CheckContext) -> CheckResult:
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(60)
    raise AssertionError("unreachable")


@check("fake.term_worker", level=0, description="ends its parent with SIGTERM", isolated=True)
def term_worker(ctx: CheckContext) -> CheckResult:
    os.kill(os.getppid(), signal.SIGTERM)
    time.sleep(60)
    raise AssertionError("unreachable")


@check("fake.state_after", level=0, description="reads process state", needs=("torch",), isolated=True)
def state_after(ctx: CheckContext) -> CheckResult:
    return _state("fake.state_after")


def _jax_side(name: str) -> CheckResult:
    return CheckResult(
        name=name,
        level=0,
        status=Status.PASS,
        message="apart",
        details={
            "jax_preloaded": "jax" in sys.modules,
            "torch_preloaded": "torch" in sys.modules,
            "jax_platforms": os.environ.get("JAX_PLATFORMS"),
            "parent": os.getppid(),
        },
    )


@check("fake.jax_a", level=0, description="forks from the jax worker", needs=("jax",), worker="jax")
def jax_a(ctx: CheckContext) -> CheckResult:
    return _jax_side("fake.jax_a")


@check("fake.jax_b", level=0, description="forks from the jax worker", needs=("jax",), worker="jax")
def jax_b(ctx: CheckContext) -> CheckResult:
    return _jax_side("fake.jax_b")


@check("fake.pristine", level=0, description="needs a fresh process", needs=("torch",), pristine=True)
def pristine(ctx: CheckContext) -> CheckResult:
    return CheckResult(
        name="fake.pristine",
        level=0,
        status=Status.PASS,
        message="fresh",
        details={"torch_preloaded": "torch" in sys.modules, "parent": os.getppid()},
    )
