"""rocmkit keeps its lead in benchmarks/bench_resolve_peers.py: on every capture its pick is judged
right on the facts in matrices/ (the peers' side of the table needs uv, torchruntime, rocm-bootstrap
and light-the-torch, so it runs in the benchmark, not here; their pieces that need no download are
tested here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
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
    # WSL2 with ROCm 6.3's runtime: torch runs on /opt/rocm's, so the newest torch of another line
    # does not run there, and the newest of the installed line is right.
    wsl = load_machine(CAPTURES / "rx7900gre-gfx1100-wsl2-ubuntu24.04-rocm6.3.0-legacy-runtime")
    pick = BENCH.Pick("rocm7.2", torch="2.15.0")
    BENCH.grade(m, wsl, pick)
    assert pick.grade == "wrong" and "ROCm 6.3 here" in pick.why
    pick = BENCH.Pick("rocm6.3", torch="2.9.1")
    BENCH.grade(m, wsl, pick)
    assert pick.grade == "right", pick.cell()
    # aarch64: judged on the builds published for it; 2.13 is older than the 2.15 cu132 build.
    gh200 = load_machine(CAPTURES / "gh200-aarch64-nvidia-smi-580.105.08")
    pick = BENCH.Pick("cu132", torch="2.13.0")
    BENCH.grade(m, gh200, pick)
    assert pick.grade == "old" and "2.15.0" in pick.why


def test_rocm_bootstrap_is_asked_through_kfd_or_its_override() -> None:
    # A capture that recorded KFD topology: rocm-bootstrap reads those nodes itself.
    kfd = CAPTURES / "synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4"
    nodes, told = BENCH.rocm_bootstrap_told(kfd, load_machine(kfd))
    assert Path(nodes) == kfd / "root/sys/class/kfd/kfd/topology/nodes" and told == {}
    # One without: its own override, every visible AMD GPU in order (the iGPU too, as KFD lists it).
    two = CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"
    assert BENCH.rocm_bootstrap_told(two, load_machine(two)) == ("", {"ROCM_BOOTSTRAP_FORCE_GFX_ARCH": "gfx1031,gfx90c"})


def test_rocm_bootstrap_picks_are_judged_on_amds_channel() -> None:
    m = load_matrix()
    # The iGPU's target has no device package on AMD's stable whl-next, and nothing hides it.
    pick = BENCH.rocm_bootstrap_judgeable(["gfx1031", "gfx90c"])
    BENCH.grade(m, load_machine(CAPTURES / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"), pick)
    assert pick.grade == "wrong" and "gfx90c has no device package" in pick.why
    # gfx942 has one: it runs, but matrices/ has no torch version for AMD's index to call it newest.
    pick = BENCH.rocm_bootstrap_judgeable(["gfx942"])
    BENCH.grade(m, load_machine(CAPTURES / "mi300x8-rocm-smi-stas00"), pick)
    assert pick.grade == "runs" and "device-gfx942" in pick.cell()
    # The channel's ROCm outside the node's amdgpu-dkms window does not run.
    pick = BENCH.rocm_bootstrap_judgeable(["gfx1100"])
    BENCH.grade(m, load_machine(CAPTURES / "synthetic-rx7900xtx-kfd-amdsmi-rocm6.2.4"), pick)
    assert pick.grade == "wrong" and "outside the window" in pick.why
    # No target reported: torch's host code only, judged as CPU wheels.
    pick = BENCH.rocm_bootstrap_judgeable([])
    BENCH.grade(m, load_machine(CAPTURES / "synthetic-h100x2-nvidia-550"), pick)
    assert pick.grade == "wrong" and "host code only" in pick.cell()


def test_light_the_torch_takes_its_highest_backend(tmp_path: Path) -> None:
    m = load_matrix()
    h100 = load_machine(CAPTURES / "synthetic-h100x2-nvidia-550")
    # The stub answers light-the-torch's query as nvidia-smi does (a header, one row a GPU; it
    # reads the last line); with no NVIDIA driver, PATH holds no nvidia-smi at all.
    folder, driver = BENCH.nvidia_smi_stub(tmp_path, h100)
    smi = folder / "nvidia-smi"
    assert driver == "550.54.15" and smi.stat().st_mode & 0o111
    assert smi.read_text() == "#!/bin/sh\nprintf 'driver_version\\n550.54.15\n550.54.15\\n'\n"
    assert not (BENCH.nvidia_smi_stub(tmp_path, load_machine(CAPTURES / "mi300x8-rocm-smi-stas00"))[0] / "nvidia-smi").exists()
    # Its candidates sort by backend before version: cu129 (torch 2.11) over cu126 (torch 2.15),
    # and a backend with no torch for Python 3.12 in matrices/ (cu80) is never taken.
    assert BENCH.ltt_backend(m, ["cpu", "cu80", "cu118", "cu126", "cu129"]) == "cu129"
    assert BENCH.ltt_backend(m, ["cpu", "cu80"]) == "cpu"
    pick = BENCH.Pick("cu129", torch=BENCH.newest_on(m, "cu129"))
    BENCH.grade(m, h100, pick)
    assert pick.grade == "old"


def test_a_peer_not_installed_skips_its_column() -> None:
    m = load_matrix()
    capture = CAPTURES / "mi300x8-rocm-smi-stas00"
    machine = load_machine(capture)
    picks = [
        BENCH.rocm_bootstrap_pick(m, capture, machine, None)[0],
        BENCH.ltt_pick(m, machine, None, capture)[0],
        BENCH.torchruntime_pick(m, capture, machine, None)[0],
    ]
    for pick in picks:
        BENCH.grade(m, machine, pick)
        assert pick.grade == "skipped" and pick.cell().startswith("skipped: ") and "not installed" in pick.cell()
    ours = BENCH.rocmkit_pick(m, machine)
    BENCH.grade(m, machine, ours)
    line = BENCH.summary({"rocmkit": [ours], "rocm-bootstrap": picks[:1], "light-the-torch": picks[1:2]})
    assert line == "right: rocmkit 1/1, rocm-bootstrap skipped (not installed), light-the-torch skipped (not installed)"
