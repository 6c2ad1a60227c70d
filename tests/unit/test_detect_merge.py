"""Merging, precedence, visibility, overrides and tool failures, on fake machines (no processes)."""

from __future__ import annotations

import importlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocmkit.cli import main
from rocmkit.detect import apply_visibility, detect_machine, parse_overrides
from rocmkit.errors import UsageError
from rocmkit.machine import Gpu, Problem
from rocmkit.parsers.records import GpuRecord
from rocmkit.proc.runner import CommandResult, FakeRunner
from rocmkit.sources import COMMANDS, CaptureSource, LiveSource

CAPTURES = Path(__file__).resolve().parent.parent / "data" / "captures"
KFD = "sys/class/kfd/kfd/topology/nodes"


def _kfd_node(root: Path, n: int, props: str, vram: int | None = None) -> None:
    d = root / KFD / str(n)
    d.mkdir(parents=True)
    (d / "properties").write_text(props)
    if vram:
        (d / "mem_banks" / "0").mkdir(parents=True)
        (d / "mem_banks" / "0" / "properties").write_text(f"heap_type 1\nsize_in_bytes {vram}\n")


def _gpu_props(gfx_version: int, device_id: int, location: int) -> str:
    return (
        f"cpu_cores_count 0\nsimd_count 120\ngfx_target_version {gfx_version}\nvendor_id 4098\n"
        f"device_id {device_id}\nlocation_id {location}\ndomain 0\n"
    )


def _ok(name: str, stdout: str) -> tuple[tuple[str, ...], CommandResult]:
    argv = COMMANDS[name]
    return argv, CommandResult(argv=argv, status="ok", returncode=0, stdout=stdout)


def _fake_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    _kfd_node(root, 0, "cpu_cores_count 16\nsimd_count 0\n")
    _kfd_node(root, 1, _gpu_props(100301, 0x73DF, 0x0300), vram=12 * 1024**3)  # gfx1031, RX 6800M
    _kfd_node(root, 2, _gpu_props(90012, 0x1638, 0x0500))  # gfx90c iGPU (Cezanne)
    return root


def _live(tmp_path: Path, runner: FakeRunner, env: dict[str, str] | None = None) -> LiveSource:
    return LiveSource(runner=runner, env=env or {}, root=str(_fake_root(tmp_path)))


ROCMINFO_OVERRIDDEN = """ROCk module is loaded
*******
Agent 1
*******
  Name:                    gfx1030
  Marketing Name:          AMD Radeon RX 6800M
  Node:                    1
  Device Type:             GPU
"""


def test_kfd_wins_over_rocminfo_under_hsa_override(tmp_path: Path) -> None:
    # With HSA_OVERRIDE_GFX_VERSION=10.3.0, rocminfo prints gfx1030 for a gfx1031 card and
    # ROCR_VISIBLE_DEVICES=0 hides the iGPU from it; KFD shows both, with the real targets.
    runner = FakeRunner(results=dict([_ok("rocminfo.txt", ROCMINFO_OVERRIDDEN)]))
    env = {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}
    m = detect_machine(_live(tmp_path, runner, env), environ={})
    assert [(g.arch, g.kfd_node) for g in m.gpus] == [("gfx1031", 1), ("gfx90c", 2)]
    assert m.gpus[0].name == "AMD Radeon RX 6800M" and m.gpus[0].sources == ("kfd", "rocminfo")
    assert m.gpus[0].memory_bytes == 12 * 1024**3
    assert m.gpus[1].integrated is True and "matrix" in m.gpus[1].sources
    clash = [p for p in m.problems if "rocminfo reports gfx1030" in p.message]
    assert clash and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in (clash[0].hint or "")
    assert m.env == {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}


@pytest.mark.parametrize(
    ("result", "words"),
    [
        (CommandResult(argv=("rocminfo",), status="timeout", timeout_s=0.5), "did not finish within 0.5 s"),
        (
            CommandResult(argv=("rocminfo",), status="failed", returncode=1, stderr="boom\n"),
            "exited with code 1: boom",
        ),
        (CommandResult(argv=("rocminfo",), status="signal", returncode=-11), "killed by signal 11"),
    ],
)
def test_a_failing_tool_is_reported_not_fatal(tmp_path: Path, result: CommandResult, words: str) -> None:
    runner = FakeRunner(results={("rocminfo",): result})
    m = detect_machine(_live(tmp_path, runner), environ={})
    assert len(m.gpus) == 2  # KFD still answers
    (p,) = [p for p in m.problems if p.source == "rocminfo"]
    assert words in p.message and p.hint


def test_all_commands_are_asked_for_once(tmp_path: Path) -> None:
    runner = FakeRunner()
    detect_machine(_live(tmp_path, runner), environ={})
    asked = sorted(runner.calls)
    assert len(asked) == len(set(asked))
    assert ("rocminfo",) in asked and (
        "nvidia-smi",
        "--query-gpu=index,name,uuid,driver_version,memory.total,compute_cap,pci.bus_id",
        "--format=csv",
    ) in asked


def test_probe_timeout_variable_reaches_the_runner(tmp_path: Path) -> None:
    seen: list[float] = []

    def runner(argv: tuple[str, ...], timeout: float = 0) -> CommandResult:
        seen.append(timeout)
        return CommandResult(argv=tuple(argv), status="absent")

    src = LiveSource(
        runner=runner,
        env={},
        root=str(tmp_path),
        timeout_s=parse_overrides({"ROCMKIT_PROBE_TIMEOUT": "0.7"}).probe_timeout_s,
    )
    detect_machine(src, environ={})
    assert seen and set(seen) == {0.7}


# ----------------------------------------------------------------- visibility


def _gpus() -> list[Gpu]:
    return [Gpu(vendor="amd", index=i, uuid=f"GPU-{i:016x}") for i in range(4)] + [
        Gpu(vendor="nvidia", index=0, uuid="GPU-aaaa"),
        Gpu(vendor="nvidia", index=1, uuid="GPU-bbbb"),
    ]


def _visible(env: dict[str, str]) -> tuple[list[tuple[str, int]], list[Problem]]:
    problems: list[Problem] = []
    out = apply_visibility(_gpus(), env, problems)
    return [(g.vendor, g.index) for g in out if g.visible], problems


def test_visibility_rules() -> None:
    assert _visible({})[0] == [("amd", i) for i in range(4)] + [("nvidia", 0), ("nvidia", 1)]
    # ROCR first, then HIP indexes into what ROCR left.
    assert _visible({"ROCR_VISIBLE_DEVICES": "1,3", "HIP_VISIBLE_DEVICES": "1"})[0][:1] == [("amd", 3)]
    # HIP honours CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES is unset; an invalid entry ends the list.
    # For NVIDIA the same list starts with 2, past its last GPU: none is visible.
    vis, problems = _visible({"CUDA_VISIBLE_DEVICES": "2,9,0"})
    assert vis == [("amd", 2)]
    assert [p.message for p in problems] == ["CUDA_VISIBLE_DEVICES=2,9,0 hides every NVIDIA GPU"]
    assert _visible({"ROCR_VISIBLE_DEVICES": "GPU-0000000000000002"})[0][0] == ("amd", 2)
    vis, problems = _visible({"HIP_VISIBLE_DEVICES": ""})
    assert [v for v in vis if v[0] == "amd"] == []
    assert problems and "hides every AMD GPU" in problems[0].message


def test_cuda_visible_devices_for_nvidia() -> None:
    vis, _ = _visible({"CUDA_VISIBLE_DEVICES": "GPU-bbbb", "HIP_VISIBLE_DEVICES": "0"})
    assert vis == [("amd", 0), ("nvidia", 1)]


# ----------------------------------------------------------------- overrides


def _capture(name: str) -> CaptureSource:
    return CaptureSource(CAPTURES / name)


def test_override_gfx_on_a_machine_without_gpu() -> None:
    m = detect_machine(
        _capture("ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded"),
        environ={"ROCMKIT_GFX": "gfx1100", "ROCMKIT_ROCM_VERSION": "6.2.4"},
    )
    (g,) = m.gpus
    assert (g.vendor, g.arch, g.integrated, g.sources) == ("amd", "gfx1100", False, ("override",))
    assert m.rocm.version == "6.2.4"
    assert m.overrides == {"ROCMKIT_GFX": "gfx1100", "ROCMKIT_ROCM_VERSION": "6.2.4"}
    assert m.backend_kind == "rocm"


def test_override_gfx_replaces_detected_arch_and_no_gpu_removes_all() -> None:
    m = detect_machine(_capture("mi210x2-gfx90a-rocm6.3.3"), environ={"ROCMKIT_GFX": "gfx942"})
    assert [g.arch for g in m.gpus] == ["gfx942", "gfx942"]
    m = detect_machine(_capture("mi210x2-gfx90a-rocm6.3.3"), environ={"ROCMKIT_NO_GPU": "1"})
    assert m.gpus == () and m.backend_kind == "cpu"


def test_override_cuda_arch_creates_an_nvidia_gpu() -> None:
    m = detect_machine(
        _capture("ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded"),
        environ={"ROCMKIT_CUDA_ARCH": "sm_90", "ROCMKIT_NVIDIA_DRIVER": "550.54.15"},
    )
    (g,) = m.gpus
    assert (g.vendor, g.arch, g.compute_capability) == ("nvidia", "sm_90", "9.0")
    assert m.nvidia is not None and m.nvidia.driver_version == "550.54.15"


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("ROCMKIT_GFX", "gfx11OO"),
        ("ROCMKIT_GFX", "navi31"),
        ("ROCMKIT_ROCM_VERSION", "latest"),
        ("ROCMKIT_CUDA_ARCH", "hopper"),
        ("ROCMKIT_NO_GPU", "maybe"),
        ("ROCMKIT_PROBE_TIMEOUT", "soon"),
        ("ROCMKIT_PROBE_TIMEOUT", "-1"),
    ],
)
def test_bad_override_is_a_usage_error_naming_the_variable(var: str, value: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_overrides({var: value})
    assert var in err.value.one_line() and "fix:" in err.value.one_line()


def test_gfx_override_count_must_fit() -> None:
    with pytest.raises(UsageError, match="names 3 targets"):
        detect_machine(_capture("mi210x2-gfx90a-rocm6.3.3"), environ={"ROCMKIT_GFX": "gfx90a,gfx90a,gfx90a"})


# ----------------------------------------------------------------- CLI on captures (no processes)


def test_cli_json_on_a_capture(capsys: pytest.CaptureFixture[str]) -> None:
    main(["detect", "--json", "--capture", str(CAPTURES / "mi300x8-rocm-smi-stas00")])
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "rocmkit.machine/1" and len(data["gpus"]) == 8


def test_cli_human_table_on_a_capture(capsys: pytest.CaptureFixture[str]) -> None:
    main(["detect", "--capture", str(CAPTURES / "rx9070xt-igpu-popos-rocm7.2.1-kfd-permission-denied")])
    out = capsys.readouterr().out
    assert "gfx1201" in out and "0x7550" in out and "usermod -aG render,video" in out


def test_cli_says_no_gpu_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    main(["detect", "--capture", str(CAPTURES / "ryzen2400g-gtx1050ti-centos7-rocm3.8-rock-not-loaded")])
    out = capsys.readouterr().out
    assert "No GPU found" in out and "CPU-only PyTorch wheels" in out


@pytest.mark.parametrize("args", [["detect", "--capture", "/nonexistent/capture"], ["detect", "--nope"]])
def test_cli_bad_input_is_one_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code in (2, 4)
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "Traceback" not in "\n".join(err)
    assert len([ln for ln in err if ln.startswith(("error", "Error"))]) == 1


LSPCI_ONLY = """00:02.0 VGA compatible controller [0300]: Intel Corporation Device [8086:a780]
03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M] [1002:744c] (rev c8)
"""


def test_gpu_without_driver_comes_from_lspci_and_the_matrix(tmp_path: Path) -> None:
    # No KFD, no ROCm tools, no /dev/kfd: the card is still there, and detect says why it is unusable.
    runner = FakeRunner(results=dict([_ok("lspci.txt", LSPCI_ONLY)]))
    m = detect_machine(LiveSource(runner=runner, env={}, root=str(tmp_path)), environ={})
    (g,) = m.gpus
    assert (g.arch, g.pci_bus_id, g.integrated) == ("gfx1100", "03:00.0", False)
    assert g.sources == ("lspci", "matrix")
    assert any("no driver tool sees them" in p.message for p in m.problems)
    missing = [p for p in m.problems if p.source == "/dev/kfd"]
    assert missing and "does not exist" in missing[0].message and missing[0].severity == "error"


def test_keyless_listing_with_a_different_count_is_reported(tmp_path: Path) -> None:
    runner = FakeRunner(
        results=dict([_ok("rocm_agent_enumerator.txt", "gfx000\ngfx1031\ngfx90c\ngfx1100\n")])
    )
    m = detect_machine(_live(tmp_path, runner), environ={})
    assert len(m.gpus) == 2
    assert any("rocm_agent_enumerator lists 3 AMD GPU(s) but kfd lists 2" in p.message for p in m.problems)


def test_live_source_reads_proc_sys_files() -> None:
    # One 4 MiB read of a /proc/sys file fails with ENOMEM; the source reads in chunks.
    assert LiveSource().read("/proc/sys/kernel/hostname")


REAL_CMD_FILES = sorted(p for p in CAPTURES.glob("*/cmd/*") if p.is_file())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(REAL_CMD_FILES), min_size=1, max_size=6))
def test_mixed_captures_detect_without_duplicates(files: list[Path]) -> None:
    # Outputs of different machines thrown together: detection must not crash, and the
    # merged list never holds one KFD node or PCI address twice.
    with tempfile.TemporaryDirectory() as tmp:
        cap = Path(tmp)
        (cap / "cmd").mkdir()
        for f in files:
            shutil.copy(f, cap / "cmd" / f.name)
        m = detect_machine(CaptureSource(cap), environ={})
    for vendor in ("amd", "nvidia"):
        gpus = [g for g in m.gpus if g.vendor == vendor]
        nodes = [g.kfd_node for g in gpus if g.kfd_node is not None]
        buses = [g.pci_bus_id[-7:] for g in gpus if g.pci_bus_id]
        assert len(nodes) == len(set(nodes)) and len(buses) == len(set(buses))
        assert [g.index for g in gpus] == list(range(len(gpus))) or vendor == "nvidia"


def _opt(root: Path, *names: str) -> None:
    for name in names:
        info = root / "opt" / name / ".info"
        info.mkdir(parents=True)
        if name != "rocm-5.7.1":  # one install without its version file: the folder name tells
            (info / "version").write_text(name.removeprefix("rocm-") + "-99\n")


def test_several_rocm_installs(tmp_path: Path) -> None:
    _opt(tmp_path, "rocm-6.1.3", "rocm-6.2.4", "rocm-5.7.1")
    m = detect_machine(LiveSource(runner=FakeRunner(), env={}, root=str(tmp_path)), environ={})
    assert [(i.path, i.version, i.source) for i in m.rocm.installs] == [
        ("/opt/rocm-5.7.1", "5.7.1", "folder name"),
        ("/opt/rocm-6.1.3", "6.1.3", ".info/version"),
        ("/opt/rocm-6.2.4", "6.2.4", ".info/version"),
    ]
    assert m.rocm.version is None
    assert any("several ROCm installs" in p.message for p in m.problems)
    env = {"ROCM_PATH": "/opt/rocm-6.1.3/"}
    m = detect_machine(LiveSource(runner=FakeRunner(), env=env, root=str(tmp_path)), environ={})
    assert m.rocm.version == "6.1.3" and m.rocm.installs[0].source == "ROCM_PATH"


def test_rocm_release_from_hipconfig_is_major_minor_only(tmp_path: Path) -> None:
    runner = FakeRunner(results=dict([_ok("hipconfig-version.txt", "6.3.42131-fa1d09cbd\n")]))
    m = detect_machine(LiveSource(runner=runner, env={}, root=str(tmp_path)), environ={})
    assert (m.rocm.version, m.rocm.hip_version) == ("6.3", "6.3.42131-fa1d09cbd")


def test_snapshot_of_a_fake_gpu_machine_replays_identically(tmp_path: Path) -> None:
    from dataclasses import replace

    from rocmkit.sources import snapshot

    def runner(argv: tuple[str, ...], timeout: float = 10.0) -> CommandResult:
        # What the real runner returns for a machine whose tools misbehave in every way.
        argv = tuple(argv)
        if argv == ("rocminfo",):
            return CommandResult(argv=argv, status="ok", returncode=0, stdout=ROCMINFO_OVERRIDDEN)
        if argv[0] == "amd-smi":
            return CommandResult(argv=argv, status="timeout", timeout_s=timeout)
        if argv[0] == "rocm-smi":
            return CommandResult(argv=argv, status="signal", returncode=-11, stderr="Segmentation fault\n")
        if argv[0] == "lspci":
            return CommandResult(argv=argv, status="failed", returncode=1, stderr="pcilib: nope\n")
        return CommandResult(argv=argv, status="absent")

    live_src = LiveSource(
        runner=runner, env={"HIP_VISIBLE_DEVICES": "1"}, root=str(_fake_root(tmp_path)), timeout_s=1.5
    )
    live = detect_machine(live_src, environ={})
    snapshot(live_src, tmp_path / "snap")
    replayed = detect_machine(CaptureSource(tmp_path / "snap"), environ={})
    assert replayed.source == f"capture:{tmp_path / 'snap'}"
    assert replace(replayed, source="live") == live
    assert [g.visible for g in live.gpus] == [False, True]
    messages = [p.message for p in live.problems]
    assert "`amd-smi static --json` did not finish within 1.5 s and was killed" in messages
    # Six rocm-smi variants crash: one problem says so.
    assert [m for m in messages if m.startswith("`rocm-smi")] == [
        "`rocm-smi --showproductname --showmeminfo vram --json` was killed by signal 11"
    ]
    assert "`lspci -nn` exited with code 1: pcilib: nope" in messages
    assert not any("printed no JSON" in m for m in messages)  # a crash is one problem, not two


def test_snapshot_force_over_an_older_snapshot_replays_only_the_new_one(tmp_path: Path) -> None:
    # A capture replays every file it holds: stale files of an older snapshot in the same
    # folder (a failed rocminfo, an /opt/rocm-X since removed) must not survive --force.
    from dataclasses import replace

    from rocmkit.sources import snapshot

    def runner(argv: tuple[str, ...], timeout: float = 10.0) -> CommandResult:
        if tuple(argv) == ("rocminfo",):
            return CommandResult(argv=tuple(argv), status="ok", returncode=0, stdout=ROCMINFO_OVERRIDDEN)
        return CommandResult(argv=tuple(argv), status="absent")

    dest = tmp_path / "snap"
    for rel, text in (
        ("cmd/rocminfo.txt.rc", "1\n"),
        ("cmd/rocminfo.txt.err", "HSA_STATUS_ERROR_OUT_OF_RESOURCES\n"),
        ("cmd/amd-smi-list.txt", "GPU: 0\n"),
        ("root/opt/rocm-6.0.0/.info/version", "6.0.0\n"),
        ("notes.txt", "mine\n"),
    ):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text(text)
    live_src = LiveSource(runner=runner, env={}, root=str(_fake_root(tmp_path)))
    snapshot(live_src, dest)
    replayed = detect_machine(CaptureSource(dest), environ={})
    assert replace(replayed, source="live") == detect_machine(live_src, environ={})
    assert replayed.rocm.installs == ()
    assert not (dest / "cmd" / "rocminfo.txt.rc").exists()
    assert (dest / "notes.txt").read_text() == "mine\n"  # not ours: kept


def test_bad_override_in_a_capture_names_its_env_json(tmp_path: Path) -> None:
    (tmp_path / "cmd").mkdir()
    (tmp_path / "env.json").write_text(json.dumps({"ROCMKIT_GFX": "bogus"}))
    with pytest.raises(UsageError) as exc:
        detect_machine(CaptureSource(tmp_path), environ={})
    assert str(tmp_path / "env.json") in exc.value.message
    assert exc.value.fix and "env.json" in exc.value.fix
    # A valid value in the shell wins over the capture's bad one.
    m = detect_machine(CaptureSource(tmp_path), environ={"ROCMKIT_GFX": "gfx1100"})
    assert [g.arch for g in m.gpus] == ["gfx1100"]


def test_rocm_path_that_does_not_exist_is_a_warning_not_an_install(tmp_path: Path) -> None:
    from dataclasses import replace

    from rocmkit.sources import snapshot

    _opt(tmp_path, "rocm-6.2.4")
    (tmp_path / "srv" / "rocm").mkdir(parents=True)  # exists, but holds no .info/version
    for rocm_path, installs in (
        ("/nowhere/rocm", ["/opt/rocm-6.2.4"]),
        ("/srv/rocm", ["/srv/rocm", "/opt/rocm-6.2.4"]),
    ):
        src = LiveSource(runner=FakeRunner(), env={"ROCM_PATH": rocm_path}, root=str(tmp_path))
        m = detect_machine(src, environ={})
        assert [i.path for i in m.rocm.installs] == installs
        missing = [p for p in m.problems if p.message == f"ROCM_PATH={rocm_path} does not exist"]
        assert len(missing) == (1 if rocm_path == "/nowhere/rocm" else 0)
        # ... and a snapshot replays the same either way.
        dest = tmp_path / f"snap{len(installs)}"
        snapshot(src, dest)
        assert replace(detect_machine(CaptureSource(dest), environ={}), source="live") == m


def _listing(source: str, n: int, *, kfd: bool = False, bus: bool = False, uuid: bool = False) -> tuple[GpuRecord, ...]:
    return tuple(
        GpuRecord(
            source=source,
            vendor="amd",
            arch="gfx942",
            kfd_node=i + 1 if kfd else None,
            pci_bus_id=f"0000:{i // 256:02x}:{i % 256 // 8:02x}.{i % 8}" if bus else None,
            uuid=f"GPU-{i:08x}" if uuid else None,
        )
        for i in range(n)
    )


# The module, not the function rocmkit.detect re-exports under the same name.
merge_module = importlib.import_module("rocmkit.detect.merge")


@pytest.mark.parametrize("n", [8, 64, 512])
def test_matching_gpus_across_listings_is_linear(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting comparisons, not time: 512 GPUs (eight CPX-partitioned nodes' worth) in four
    listings, each matched by another key, in reversed order, must cost O(n) key comparisons."""
    calls = 0
    real = merge_module._keys

    def counted(rec: GpuRecord, acc: Any) -> tuple[int, int]:
        nonlocal calls
        calls += 1
        found: tuple[int, int] = real(rec, acc)
        return found

    monkeypatch.setattr(merge_module, "_keys", counted)
    listings = {
        "kfd": _listing("kfd", n, kfd=True, bus=True),
        "rocminfo": tuple(reversed(_listing("rocminfo", n, kfd=True))),
        "amd-smi static": tuple(reversed(_listing("amd-smi", n, bus=True, uuid=True))),
        "rocm-smi json": _listing("rocm-smi", n, uuid=True),
    }
    problems: list[Problem] = []
    accs = merge_module.merge("amd", listings, merge_module.LISTINGS, problems)
    assert len(accs) == n and not problems
    assert all(len(a.records) == 4 for a in accs)  # every listing found its GPU
    assert all(a.records["rocminfo"].kfd_node == a.records["kfd"].kfd_node for a in accs)
    assert all(a.records["rocm-smi json"].uuid == a.records["amd-smi static"].uuid for a in accs)
    assert calls <= 4 * n  # one comparison per record and candidate; n^2 would be 262144 at 512
    pci = merge_module.attach_pci(accs, _listing("lspci", n, bus=True), "amd", problems)
    assert all("lspci" in a.records for a in pci) and not problems
