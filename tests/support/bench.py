"""Shared by the `rocmkit bench models` tests: the stand-in models for the failures a user can
meet, the command as a user runs it, and what a measured row must hold."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from rocmkit.bench.models import EXTRA_MODELS_ENV
from tests.conftest import isolated_environ

FAULTY = '''
"""Test models: one the compiler gets wrong, one it cannot compile, one that hangs, one that
crashes, one that kills the bench worker, and two that say which process ran them."""

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


def _crashes(cfg, impl):
    import os
    import signal

    os.kill(os.getpid(), signal.SIGSEGV)


def _kills_its_parent(cfg, impl):
    import os
    import signal

    import time

    os.kill(os.getppid(), signal.SIGKILL)  # in a fork: the bench worker, as an OOM kill would
    time.sleep(60)  # still running when its worker is found dead: stopped with it


def _whoami(cfg, impl):
    """A small model that leaves (its pid, its parent's command line) in $ROCMKIT_TEST_WHOAMI."""
    import os
    from pathlib import Path

    import torch

    parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().replace(b"\\0", b" ").decode()
    with open(os.environ["ROCMKIT_TEST_WHOAMI"], "a") as f:
        f.write(f"{os.getpid()} {os.getppid()} {parent}\\n")
    return Built(module=torch.nn.Linear(8, 8), inputs=(torch.randn(2, 8),), impl="test", batch_size=2)


SIZES = {"tiny": {}}
MODELS = [
    ModelSpec(name="crashes", suite="other", description="test", sizes=SIZES, build=_crashes),
    ModelSpec(name="kills_its_parent", suite="other", description="test", sizes=SIZES, build=_kills_its_parent),
    ModelSpec(name="whoami", suite="other", description="test", sizes=SIZES, build=_whoami),
    ModelSpec(name="whoami2", suite="other", description="test", sizes=SIZES, build=_whoami),
    ModelSpec(name="wrong_when_compiled", suite="other", description="test", sizes=SIZES, build=_wrong),
    ModelSpec(name="fails_to_compile", suite="other", description="test", sizes=SIZES, build=_broken),
    ModelSpec(name="hangs", suite="other", description="test", sizes=SIZES, build=_hangs),
]
'''


def faulty_environ(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment with FAULTY as extra models. Made in a session fixture, before any test's own
    set-up, so the isolation every test gets is applied here by hand."""
    path = tmp_path_factory.mktemp("faulty") / "faulty_models.py"
    path.write_text(FAULTY)
    return {**isolated_environ(tmp_path_factory), EXTRA_MODELS_ENV: str(path)}


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
