"""Level-0 facts cached per boot and driver state; compile cache counts merged for the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.cache import detect_cache as cached
from rocmkit.doctor.cachestats import merge
from rocmkit.doctor.reporters.text import cache_line
from rocmkit.machine import Host, Machine

needs_boot_id = pytest.mark.skipif(
    not Path("/proc/sys/kernel/random/boot_id").exists(), reason="no boot id on this system"
)


class Detector:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> Machine:
        self.calls += 1
        return Machine(host=Host(hostname=f"node{self.calls}"))


@needs_boot_id
def test_a_rerun_with_nothing_changed_reads_the_cache(tmp_path: Path) -> None:
    detect, env = Detector(), {"PATH": "/usr/bin"}
    first, hit1 = cached.cached_machine(tmp_path, environ=env, detect=detect)
    second, hit2 = cached.cached_machine(tmp_path, environ=env, detect=detect)
    assert (hit1, hit2, detect.calls) == (False, True, 1)
    assert second == first
    # --fresh detects again (and stores what it found for the next run).
    third, hit3 = cached.cached_machine(tmp_path, environ=env, detect=detect, fresh=True)
    assert (hit3, detect.calls, third.host.hostname) == (False, 2, "node2")
    assert cached.cached_machine(tmp_path, environ=env, detect=detect)[0].host.hostname == "node2"


@needs_boot_id
def test_a_damaged_entry_means_detecting_again(tmp_path: Path) -> None:
    detect, env = Detector(), {"PATH": "/usr/bin"}
    cached.cached_machine(tmp_path, environ=env, detect=detect)
    (entry,) = (tmp_path / "detect").glob("*.json")
    for text in ("", "{", "[" * 100_000, '{"schema": "x", "stored_at": "soon"}'):
        entry.write_text(text)
        _, hit = cached.cached_machine(tmp_path, environ=env, detect=detect)
        assert not hit
    assert detect.calls == 5


@needs_boot_id
def test_a_changed_variable_or_an_old_entry_means_detecting_again(tmp_path: Path) -> None:
    detect = Detector()
    cached.cached_machine(tmp_path, environ={"PATH": "/usr/bin"}, detect=detect)
    _, hit = cached.cached_machine(
        tmp_path, environ={"PATH": "/usr/bin", "HIP_VISIBLE_DEVICES": "1"}, detect=detect
    )
    assert not hit and detect.calls == 2
    later = lambda: 10**12  # noqa: E731  # far past MAX_AGE_S
    _, hit = cached.cached_machine(tmp_path, environ={"PATH": "/usr/bin"}, detect=detect, now=later)
    assert not hit and detect.calls == 3


@needs_boot_id
def test_a_corrupt_entry_is_detected_over(tmp_path: Path) -> None:
    detect, env = Detector(), {"PATH": "/usr/bin"}
    cached.cached_machine(tmp_path, environ=env, detect=detect)
    (entry,) = (tmp_path / "detect").iterdir()
    entry.write_text("{not json", encoding="utf-8")
    assert cached.cached_machine(tmp_path, environ=env, detect=detect)[1] is False
    assert json.loads(entry.read_text(encoding="utf-8"))["schema"] == cached.SCHEMA


def test_a_capture_is_never_cached(tmp_path: Path) -> None:
    machine = Machine(source="capture:/x")
    cached.cached_machine(tmp_path, environ={}, detect=lambda: machine)
    assert not (tmp_path / "detect").exists()


def test_compile_cache_counts_merge_into_a_hit_rate() -> None:
    caches = merge(
        [
            {"triton": {"hits": 3, "misses": 1}},
            {"triton": {"hits": 5, "misses": 0}, "inductor": {"hits": 0, "misses": 2}},
            {"junk": "not counts"},
        ]
    )
    assert caches == {
        "triton": {"hits": 8, "misses": 1, "hit_rate": 0.889},
        "inductor": {"hits": 0, "misses": 2, "hit_rate": 0.0},
    }
    assert cache_line(caches) == "compile caches: inductor 0/2 hits (0 %), triton 8/9 hits (89 %)"


def test_the_worker_sees_a_gpu_runtime_by_its_open_device_files(tmp_path: Path) -> None:
    from rocmkit.proc.prefork_worker import device_files_open

    fds = tmp_path / "fd"
    fds.mkdir()
    (fds / "0").symlink_to("/dev/null")
    (fds / "1").symlink_to("pipe:[1234]")
    assert device_files_open(str(fds)) == []
    (fds / "7").symlink_to("/dev/kfd")
    (fds / "8").symlink_to("/dev/nvidiactl")
    assert device_files_open(str(fds)) == ["/dev/kfd", "/dev/nvidiactl"]
    assert device_files_open(str(tmp_path / "absent")) == []


@needs_boot_id
def test_the_plan_is_cached_beside_the_machine(tmp_path: Path) -> None:
    from rocmkit.plan import Plan

    calls: list[Machine] = []
    plan = Plan(backend="cpu", torch_version="2.13.0+cpu", requirements=("torch==2.13.0+cpu",))

    def make(m: Machine) -> Plan | None:
        calls.append(m)
        return plan if m.host.hostname == "a" else None

    env = {"PATH": "/usr/bin"}
    a, b = Machine(host=Host(hostname="a")), Machine(host=Host(hostname="b"))
    assert cached.cached_plan(tmp_path, a, make, environ=env) == plan
    assert cached.cached_plan(tmp_path, a, make, environ=env) == plan
    assert len(calls) == 1
    # Another machine (facts changed without a key change) resolves again; so does --fresh.
    assert cached.cached_plan(tmp_path, b, make, environ=env) is None
    assert cached.cached_plan(tmp_path, b, make, environ=env) is None
    assert cached.cached_plan(tmp_path, a, make, environ=env, fresh=True) == plan
    assert len(calls) == 3


@needs_boot_id
def test_another_node_sharing_the_cache_folder_and_the_kernel_detects_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two Slurm nodes on one kernel (namespaces) or a home folder shared by a cluster: the
    other node's machine (its hostname) must never be read back as this one's."""
    import os

    detect, env = Detector(), {"PATH": "/usr/bin"}
    real = os.uname()
    cached.cached_machine(tmp_path, environ=env, detect=detect)
    other = os.uname_result((real.sysname, "n1-elsewhere", real.release, real.version, real.machine))
    monkeypatch.setattr(os, "uname", lambda: other)
    machine, hit = cached.cached_machine(tmp_path, environ=env, detect=detect)
    assert not hit and detect.calls == 2 and machine.host.hostname == "node2"
