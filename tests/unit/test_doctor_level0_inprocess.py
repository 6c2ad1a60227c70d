"""Level 0 reads the checked Python's facts in this process: no warm worker (which imports
torch), no child. This module runs under the unit guard that refuses any subprocess, so a
worker or a spawned check would fail here loudly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocmkit.doctor import forkserver, isolate, run
from rocmkit.doctor.checks import torch_env
from rocmkit.doctor.registry import CHECK_MODULES, Check, CheckContext
from rocmkit.doctor.result import Status
from rocmkit.machine import Machine
from rocmkit.pyenv import PyEnv, this_python

_ELSEWHERE = Path("/elsewhere")
FOREIGN = PyEnv(
    executable=_ELSEWHERE / "bin/python",
    version="3.12.1",
    prefix=_ELSEWHERE,
    purelib=_ELSEWHERE / "lib/python3.12/site-packages",
    platlib=_ELSEWHERE / "lib/python3.12/site-packages",
    stdlib=Path("/usr/lib/python3.12"),
    include=Path("/usr/include/python3.12"),
    venv=_ELSEWHERE,
    own=False,
    dists={"torch": "2.5.1+rocm6.2", "pytorch-triton-rocm": "3.0.0", "amdsmi": None, "rocm-sdk-core": None},
    torch_requires=('pytorch-triton-rocm==3.1.0; platform_system == "Linux"',),
)


def _level0() -> list[Check]:
    return run.select(run.discover(CHECK_MODULES).checks, level=0)


def test_no_level_0_check_runs_in_a_child_for_any_python() -> None:
    selected = _level0()
    assert {"triton.packages", "torch.amdsmi"} <= {c.name for c in selected}
    ctx = CheckContext(machine=Machine(), cache_dir=Path("/x"))
    for python in (this_python(), FOREIGN):
        assert [c.name for c in selected if run.in_child(c, python)] == []
        assert run.fork_server(selected, ctx, python) is None


def test_level_0_runs_whole_without_a_worker_or_a_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("level 0 started a worker or a child")

    monkeypatch.setattr(forkserver.ForkServer, "__init__", refuse)
    monkeypatch.setattr(isolate, "run_isolated", refuse)
    report = run.doctor(Machine(source="live"), run.RunOptions(level=0), cache_dir=tmp_path, environ={})
    by = {r.name: r for r in report.results}
    assert by["triton.packages"].status is not Status.ERROR, by["triton.packages"]
    assert by["torch.amdsmi"].status is not Status.ERROR, by["torch.amdsmi"]
    assert all(r.status is not Status.ERROR for r in report.results), [r for r in report.results if r.status is Status.ERROR]


def test_the_package_checks_read_another_pythons_facts_not_this_ones() -> None:
    ctx = CheckContext(machine=Machine(source="live"), backend="rocm", cache_dir=Path("/x"), python=FOREIGN)
    got = torch_env.triton_packages(ctx)
    # The facts say 3.0.0 where torch pins 3.1.0: whatever this process has installed.
    assert got.status is Status.FAIL and "pytorch-triton-rocm 3.0.0 is installed" in got.message
    amd = torch_env.amdsmi_package(ctx)
    assert amd.status is Status.PASS and "not installed" in amd.message
