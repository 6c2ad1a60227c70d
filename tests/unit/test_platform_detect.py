"""WSL2 and aarch64 detection: the captures, the live path (a fake root and runner), the snapshot
round trip, and hostile input (missing or garbage files give notes, never a traceback)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocmkit.detect import detect_machine, load_machine
from rocmkit.machine import Machine, Platform
from rocmkit.parsers import platform as pp
from rocmkit.proc.runner import CommandResult
from rocmkit.sources import CaptureSource, LiveSource, snapshot
from tests.conftest import CAPTURES

R9700 = "r9700-gfx1201-wsl2-ubuntu24.04-rocm7.2.1-dxg-detection-unset"
STRIX = "strixhalo-gfx1151-wsl2-ubuntu24.04-rocm7.2.1-librocdxg"
GH200 = "gh200-aarch64-nvidia-smi-580.105.08"


def _sources(m: Machine) -> list[str]:
    return [p.source for p in m.problems]


def test_wsl_signs_read_kernel_version_variable_and_device() -> None:
    rel = "6.6.87.2-microsoft-standard-WSL2"
    assert pp.wsl_signs(rel, f"Linux version {rel} (gcc 11)", {"WSL_DISTRO_NAME": "Ubuntu"}, True) == (
        "kernel release",
        "/proc/version",
        "/dev/dxg",
        "WSL_DISTRO_NAME",
    )
    assert pp.wsl_signs("6.8.0-45-generic", "Linux version 6.8.0-45-generic", {}, False) == ()
    # WSL1's kernel is not WSL2 (no /dev/dxg, no GPU): its variable alone does not count.
    assert (
        pp.wsl_signs(
            "4.4.0-19041-Microsoft", "Linux version 4.4.0-19041-Microsoft", {"WSL_DISTRO_NAME": "U"}, False
        )
        == ()
    )
    # Garbage is no sign, not an error.
    assert pp.wsl_signs("\x00\xff" * 500, "\ufffd" * 5000, {"WSL_DISTRO_NAME": "   "}, False) == ()
    assert pp.adrenalin_version("26.2.2") == "26.2.2"
    assert pp.adrenalin_version("latest") is None and pp.adrenalin_version(None) is None
    reg = "\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\AMD\\CN\r\n    RadeonSoftwareVersion    REG_SZ    26.3.1\r\n\r\n"
    assert pp.radeon_software_version(reg) == "26.3.1"
    assert pp.radeon_software_version("ERROR: The system was unable to find the specified registry key or value.") is None
    assert pp.radeon_software_version("    RadeonSoftwareVersion    REG_SZ    ../../x\r\n") is None


def test_radeon_capture_reaches_the_gpu_only_with_dxg_detection() -> None:
    m = load_machine(CAPTURES / R9700)
    assert [g.arch for g in m.gpus] == ["gfx1201"]
    pf = m.platform
    assert pf.wsl and pf.dxg and pf.gpus_need_dxg_detection and pf.dxg_detection is None
    assert pf.librocdxg == ("/opt/rocm/lib/librocdxg.so.1",)
    assert pf.wsl_signs == ("kernel release", "/proc/version", "/dev/dxg", "WSL_DISTRO_NAME")
    # No "/dev/kfd missing" on WSL, and rocminfo's failure is not blamed on /dev/kfd groups.
    assert "/dev/kfd" not in _sources(m)
    assert not any("render,video" in (p.hint or "") for p in m.problems)
    need = [p for p in m.problems if "HSA_ENABLE_DXG_DETECTION=1" in p.message]
    assert len(need) == 1 and need[0].hint and need[0].hint.startswith("export HSA_ENABLE_DXG_DETECTION=1")


def test_strix_halo_capture_is_a_working_wsl_machine() -> None:
    m = load_machine(CAPTURES / STRIX)
    assert [(g.arch, g.integrated) for g in m.gpus] == [("gfx1151", True)]
    pf = m.platform
    assert pf.wsl and pf.dxg_detection == "1" and not pf.gpus_need_dxg_detection
    assert pf.windows_driver == "26.3.1" and pf.shadowing_libs == ()
    assert [p for p in m.problems if p.severity != "info"] == []


def test_gh200_capture_is_aarch64_and_not_wsl() -> None:
    m = load_machine(CAPTURES / GH200)
    assert m.host.arch == "aarch64" and m.platform == Platform()
    assert m.nvidia is not None and m.nvidia.driver_version == "580.105.08"


def _copy(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(CAPTURES / name, dest)
    return dest


def test_shadowing_distro_runtime_is_an_error_with_its_fix(tmp_path: Path) -> None:
    cap = _copy(tmp_path, STRIX)
    libs = cap / "root/usr/lib/x86_64-linux-gnu"
    libs.mkdir(parents=True)
    for name in ("libhsa-runtime64.so.1", "libhsa-runtime64.so.1.1.0", "libhsakmt.so.1", "libc.so.6"):
        (libs / name).write_text("")
    m = load_machine(cap)
    assert m.platform.shadowing_libs == (
        "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1",
        "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.1.0",
        "/usr/lib/x86_64-linux-gnu/libhsakmt.so.1",
    )
    (bad,) = [p for p in m.problems if p.source == "loader"]
    assert bad.severity == "error" and bad.hint == "sudo apt remove libhsa-runtime64-1 libhsakmt1"


def test_wsl_without_dev_dxg_says_windows_exposes_no_gpu(tmp_path: Path) -> None:
    cap = _copy(tmp_path, R9700)
    (cap / "cmd/devices.txt").write_text("path=/dev/kfd exists=0\n")
    (cap / "cmd/rocminfo-dxg.txt").unlink()
    m = load_machine(cap)
    assert m.platform.wsl and m.platform.dxg is False and m.gpus == ()
    (p,) = [p for p in m.problems if p.source == "/dev/dxg"]
    assert p.severity == "error" and "wsl --update" in (p.hint or "")


@pytest.mark.parametrize(
    "garbage",
    [
        {"root/proc/version": b"\x00\xff\xfe" * 4000, "root/proc/sys/kernel/osrelease": b""},
        {
            "cmd/devices.txt": b"path= exists=maybe\x00\npath=/dev/dxg exists=\xff\n",
            "cmd/rocminfo-dxg.txt": b"\x89PNG\r\n",
        },
        {
            "cmd/rocminfo-dxg.txt": b"Agent 2\n  Name: gfx\n  Device Type: GPU\n  Size: -1(0x) KB\n",
            "env.json": b'{"ROCMKIT_WSL_DRIVER": "../../etc"}',
        },
    ],
)
def test_garbage_wsl_files_give_notes_not_tracebacks(tmp_path: Path, garbage: Mapping[str, bytes]) -> None:
    cap = _copy(tmp_path, R9700)
    for rel, data in garbage.items():
        (cap / rel).write_bytes(data)
    m = load_machine(cap)  # must not raise
    assert m.source.startswith("capture:")
    Machine.from_dict(m.to_dict())  # and the document reads back
    if "env.json" in garbage:
        assert any("ROCMKIT_WSL_DRIVER" in p.message for p in m.problems)
        assert m.platform.windows_driver is None


def test_missing_wsl_files_are_absent_not_errors(tmp_path: Path) -> None:
    cap = _copy(tmp_path, R9700)
    for rel in ("root/opt", "root/usr"):
        shutil.rmtree(cap / rel)
    (cap / "root/proc/version").unlink()
    m = load_machine(cap)
    assert m.platform.wsl and m.platform.librocdxg == () and m.rocm.version is None


def test_platform_round_trips_and_old_documents_read(tmp_path: Path) -> None:
    m = load_machine(CAPTURES / R9700)
    again = Machine.from_dict(m.to_dict())
    assert again.platform == m.platform
    old = m.to_dict()
    del old["platform"]
    assert Machine.from_dict(old).platform == Platform()


def _wsl_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    rel = "5.15.167.4-microsoft-standard-WSL2"
    for path, text in {
        "proc/sys/kernel/osrelease": rel + "\n",
        "proc/version": f"Linux version {rel} (gcc) #1 SMP\n",
        "dev/dxg": "",
        "opt/rocm/.info/version": "7.2.1-81\n",
        "opt/rocm/lib/librocdxg.so.1": "",
        "opt/rocm/lib/libamdhip64.so.7": "",
        "usr/lib/x86_64-linux-gnu/libhsakmt.so.1": "",
        "usr/lib/x86_64-linux-gnu/libz.so.1": "",
    }.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


GPU_AGENT = (CAPTURES / R9700 / "cmd/rocminfo-dxg.txt").read_text()


def _runner(calls: list[tuple[tuple[str, ...], str | None]]):  # type: ignore[no-untyped-def]
    def run(argv: tuple[str, ...], *, timeout: float, env: Mapping[str, str] | None = None) -> CommandResult:
        calls.append((tuple(argv), None if env is None else env.get("HSA_ENABLE_DXG_DETECTION")))
        if argv and argv[0] == "reg.exe":
            return CommandResult(
                argv=argv, status="ok", returncode=0,
                stdout="\r\nHKEY_LOCAL_MACHINE\\SOFTWARE\\AMD\\CN\r\n    RadeonSoftwareVersion    REG_SZ    25.9.2\r\n\r\n",
            )  # fmt: skip
        if tuple(argv) == ("rocminfo",):
            if env is not None and env.get("HSA_ENABLE_DXG_DETECTION") == "1":
                return CommandResult(argv=argv, status="ok", returncode=0, stdout=GPU_AGENT)
            return CommandResult(
                argv=argv,
                status="failed",
                returncode=1,
                stdout="WSL environment detected.\n",
                stderr="hsa_init Failed, possibly no supported GPU devices\n",
            )
        return CommandResult(argv=argv, status="absent", error="not installed")

    return run


def test_live_wsl_runs_rocminfo_with_dxg_detection_and_snapshot_replays_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)  # an ordinary user: reg.exe is run
    root = _wsl_root(tmp_path)
    calls: list[tuple[tuple[str, ...], str | None]] = []
    env = {"WSL_DISTRO_NAME": "Ubuntu", "PATH": "/usr/bin"}
    live = detect_machine(LiveSource(runner=_runner(calls), env=env, root=str(root)), environ={})
    assert (("rocminfo",), "1") in calls and (("rocminfo",), None) in calls
    assert [g.arch for g in live.gpus] == ["gfx1201"]
    assert live.platform.librocdxg == ("/opt/rocm/lib/librocdxg.so.1",)
    assert live.platform.shadowing_libs == ("/usr/lib/x86_64-linux-gnu/libhsakmt.so.1",)
    assert live.platform.dxg and live.platform.gpus_need_dxg_detection
    assert live.platform.windows_driver == "25.9.2"  # from the Windows registry, through interop
    assert any(c[0][0] == "reg.exe" for c in calls)
    written = snapshot(LiveSource(runner=_runner([]), env=env, root=str(root)), tmp_path / "cap")
    assert "cmd/rocminfo-dxg.txt" in written and "root/opt/rocm/lib/librocdxg.so.1" in written
    assert "root/opt/rocm/lib/libamdhip64.so.7" not in written  # only the names detection reads
    replay = detect_machine(CaptureSource(tmp_path / "cap"), environ={})
    assert replay.platform == live.platform and replay.gpus == live.gpus


def test_off_wsl_rocminfo_runs_once(tmp_path: Path) -> None:
    calls: list[tuple[tuple[str, ...], str | None]] = []
    m = detect_machine(LiveSource(runner=_runner(calls), env={}, root=str(tmp_path)), environ={})
    assert [c for c in calls if c[0] == ("rocminfo",)] == [(("rocminfo",), None)]
    assert not any(c[0][0] == "reg.exe" for c in calls)  # Windows' tools only on WSL2
    assert m.platform == Platform()
    assert "cmd/rocminfo-dxg.txt" not in snapshot(
        LiveSource(runner=_runner([]), env={}, root=str(tmp_path)), tmp_path / "c"
    )


@given(rel=st.text(max_size=300), ver=st.text(max_size=3000), name=st.text(max_size=50), dxg=st.booleans())
def test_wsl_signs_never_raise(rel: str, ver: str, name: str, dxg: bool) -> None:
    signs = pp.wsl_signs(rel, ver, {"WSL_DISTRO_NAME": name}, dxg)
    assert set(signs) <= {"kernel release", "/proc/version", "/dev/dxg", "WSL_DISTRO_NAME"}
    assert ("/dev/dxg" in signs) == dxg
    assert pp.shadowing({"/usr/lib/x86_64-linux-gnu": [rel, name]}) == tuple(
        f"/usr/lib/x86_64-linux-gnu/{n}" for n in sorted([rel, name]) if n.startswith(pp.SHADOWING_PREFIXES)
    )


def test_root_does_not_run_windows_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    calls: list[tuple[tuple[str, ...], str | None]] = []
    env = {"WSL_DISTRO_NAME": "Ubuntu"}
    m = detect_machine(LiveSource(runner=_runner(calls), env=env, root=str(_wsl_root(tmp_path))), environ={})
    assert m.platform.wsl and m.platform.windows_driver is None
    assert not any(c[0][0] == "reg.exe" for c in calls)
