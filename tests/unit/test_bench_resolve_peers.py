"""rocmkit keeps its lead in benchmarks/bench_resolve_peers.py: on every capture its pick is judged
right on the facts in matrices/ (the peers' side of the table needs uv and torchruntime, so it runs
in the benchmark, not here)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from rocmkit.detect import load_machine
from rocmkit.matrix import load_matrix
from tests.conftest import CAPTURES, REPO


def _bench() -> ModuleType:
    path = REPO / "benchmarks" / "bench_resolve_peers.py"
    spec = importlib.util.spec_from_file_location("bench_resolve_peers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_resolve_peers", module)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


@pytest.mark.parametrize("capture", sorted(p.name for p in CAPTURES.iterdir() if p.is_dir()))
def test_rocmkit_is_right_on_every_capture(capture: str) -> None:
    m = load_matrix()
    machine = load_machine(CAPTURES / capture)
    pick = BENCH.rocmkit_pick(m, machine)
    BENCH.grade(m, machine, pick)
    assert pick.grade == "right", pick.cell()


def test_the_judge_fails_what_does_not_run() -> None:
    m = load_matrix()
    two = load_machine(CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3")
    # rocm7.2 without the override and with the iGPU visible: nothing runs.
    pick = BENCH.Pick("rocm7.2", torch="2.14.0")
    BENCH.grade(m, two, pick)
    assert pick.grade == "wrong" and "not hidden" in pick.why
    # torchruntime's rocm6.2 with the right variables runs, but an older torch than the node can have.
    pick = BENCH.Pick("rocm6.2", torch="2.5.1", env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0", "HIP_VISIBLE_DEVICES": "0"})
    BENCH.grade(m, two, pick)
    assert pick.grade == "old"
    window = load_machine(CAPTURES / "synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4")  # amdgpu-dkms 6.8.5
    pick = BENCH.Pick("rocm7.2", torch="2.14.0")
    BENCH.grade(m, window, pick)
    assert pick.grade == "wrong" and "outside the window" in pick.why
