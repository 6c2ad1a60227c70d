"""Kernel-log, virtual-GPU, libdrm and amdsmi checks (docs/failure-modes.md #3, #4, #12, #22, #23):
detection from capture folders, then the doctor's verdict on crafted Machines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rocmkit.detect import detect_machine
from rocmkit.doctor.checks import env, torch_env
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.doctor.run import RunOptions, doctor
from rocmkit.errors import DataError
from rocmkit.machine import Gpu, KernelMessage, Machine, Problem, RocmInfo
from rocmkit.sources import CaptureSource

CAPTURES = Path(__file__).resolve().parents[1] / "data" / "captures"
ATOMICS = CAPTURES / "synthetic-rx580-gfx803-chipset-slot-pcie-atomics"
RX580 = Gpu(vendor="amd", index=0, name="Ellesmere [Radeon RX 470/480/570/570X/580/580X/590]")
SKIPPED = KernelMessage(
    kind="pcie_atomics", text="kfd kfd: skipped device 1002:67df, PCI rejects atomics", device="1002:67df"
)
NOT_ASIC = KernelMessage(
    kind="kfd_asic", text="amdgpu 0000:02:00.0: kfd not supported on this ASIC", device="0000:02:00.0"
)


def _ctx(m: Machine) -> CheckContext:
    return CheckContext(machine=m, backend=m.backend_kind, cache_dir=Path("/nonexistent"))


def _amd(*gpus: Gpu, **fields: object) -> Machine:
    return Machine(
        gpus=gpus or (RX580,),
        rocm=RocmInfo(driver_loaded=True, version="6.2.4"),
        **fields,  # type: ignore[arg-type]
    )


def _capture(tmp_path: Path, files: dict[str, str]) -> Machine:
    for rel, text in files.items():
        p = tmp_path / "cap" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return detect_machine(CaptureSource(tmp_path / "cap"), environ={})


# --- detection -------------------------------------------------------------------------


def test_atomics_capture_detects_the_refused_gpu_and_the_doctor_fails_it(tmp_path: Path) -> None:
    m = detect_machine(CaptureSource(ATOMICS), environ={})
    assert m.kernel_log_read is True
    assert [(k.kind, k.device) for k in m.kernel_messages] == [("pcie_atomics", "1002:67df")]
    assert m.gpus[0].pci_device_id == "0x67df" and m.gpus[0].virtual_function is False
    (said,) = [p for p in m.problems if p.source == "dmesg"]
    assert said.severity == "error" and said.hint and "slot wired to the CPU" in said.hint
    (driverless,) = [p for p in m.problems if p.source == "lspci"]
    assert driverless.hint and "KFD refused" in driverless.hint  # not "load the amdgpu driver"
    report = doctor(m, RunOptions(level=0, modules=("rocmkit.doctor.checks.env",)), cache_dir=tmp_path)
    got = {r.name: r for r in report.results}
    assert got["env.pcie_atomics"].status is Status.FAIL
    assert "1002:67df" in got["env.pcie_atomics"].message
    assert got["env.kfd_asic"].status is Status.PASS
    assert got["env.virtual_gpu"].status is Status.PASS


def test_unreadable_dmesg_is_reported_not_an_error(tmp_path: Path) -> None:
    m = _capture(
        tmp_path,
        {
            "cmd/dmesg.txt.err": "dmesg: read kernel buffer failed: Operation not permitted\n",
            "cmd/dmesg.txt.rc": "1\n",
            "cmd/lspci.txt": ATOMICS.joinpath("cmd/lspci.txt").read_text(),
        },
    )
    assert m.kernel_log_read is False and m.kernel_messages == ()
    (p,) = [p for p in m.problems if p.source == "dmesg"]
    assert p.severity == "info" and "Operation not permitted" in p.message
    assert p.hint and "sudo dmesg" in p.hint
    r = env.pcie_atomics(_ctx(m))
    assert r.status is Status.SKIP and r.remedy and "sudo dmesg" in r.remedy
    # Not a probe failure: env.detection does not count it.
    counted = env.detection(_ctx(m)).details.get("problems", [])
    assert isinstance(counted, list) and all(x["source"] != "dmesg" for x in counted)


def test_capture_without_dmesg_leaves_the_log_unknown(tmp_path: Path) -> None:
    m = _capture(tmp_path, {"cmd/uname.txt": "Linux 6.8.0-45-generic x86_64\n"})
    assert m.kernel_log_read is None and m.kernel_messages == ()


def test_virtual_function_from_lspci_and_libdrm_noise_from_stderr(tmp_path: Path) -> None:
    # lspci line from ROCm legacy#2995 (Azure NG8ads V620), -nn ids added (synthetic);
    # the amdgpu.ids line as pytorch#132987 / LocalAI#10624 show it.
    m = _capture(
        tmp_path,
        {
            "cmd/lspci.txt": "0002:00:00.0 Display controller [0380]: Advanced Micro Devices, Inc. "
            "[AMD/ATI] Navi 21 [Radeon Pro V620 MxGPU] [1002:73a1]\n",
            "cmd/amd-smi-list.txt": "",
            "cmd/amd-smi-list.txt.err": "/opt/amdgpu/share/libdrm/amdgpu.ids: No such file or directory\n",
        },
    )
    assert [g.virtual_function for g in m.amd_gpus] == [True]
    assert env.virtual_gpu(_ctx(m)).status is Status.WARN
    ids = [p for p in m.problems if "amdgpu.ids" in p.message]
    assert ids and ids[0].severity == "info" and ids[0].source == "amd-smi"
    r = env.amdgpu_ids(_ctx(m))
    assert r.status is Status.WARN and "cosmetic" in r.message


# --- checks on crafted machines ----------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "msg", "word"),
    [(env.pcie_atomics, SKIPPED, "atomic"), (env.kfd_asic, NOT_ASIC, "does not support this chip")],
)
def test_kernel_checks(fn: Callable[[CheckContext], CheckResult], msg: KernelMessage, word: str) -> None:
    check = fn
    bad = check(_ctx(_amd(kernel_messages=(msg,), kernel_log_read=True)))
    assert msg.device is not None
    assert bad.status is Status.FAIL and word in bad.message and msg.device in bad.message
    # A line seen in a partial read (dmesg failed halfway) still counts.
    assert check(_ctx(_amd(kernel_messages=(msg,), kernel_log_read=False))).status is Status.FAIL
    assert check(_ctx(_amd(kernel_log_read=True))).status is Status.PASS
    assert check(_ctx(_amd())).status is Status.SKIP  # not read: unknown, not healthy
    assert check(_ctx(Machine(kernel_log_read=True))).status is Status.SKIP  # no AMD at all


def test_pcie_atomics_remedy_names_the_slot_and_rvs() -> None:
    r = env.pcie_atomics(_ctx(_amd(kernel_messages=(SKIPPED,), kernel_log_read=True)))
    assert r.remedy and "CPU" in r.remedy and "peqt" in r.remedy
    assert r.details["devices"] == ["1002:67df"]


def test_virtual_gpu() -> None:
    vf = Gpu(vendor="amd", index=0, name="AMD Instinct MI300X VF", virtual_function=True)
    r = env.virtual_gpu(_ctx(_amd(vf)))
    assert r.status is Status.WARN and "hipErrorInvalidDevice" in r.message and r.details["gpus"] == [0]
    pf = Gpu(vendor="amd", index=0, name="AMD Instinct MI300X", virtual_function=False)
    assert env.virtual_gpu(_ctx(_amd(pf))).status is Status.PASS
    assert env.virtual_gpu(_ctx(_amd(Gpu(vendor="amd", index=0)))).status is Status.SKIP
    assert env.virtual_gpu(_ctx(Machine())).status is Status.SKIP


def test_amdgpu_ids_is_never_a_failure() -> None:
    said = Problem(source="rocminfo", message="/usr/share/libdrm/amdgpu.ids: No such file or directory (x)")
    assert env.amdgpu_ids(_ctx(_amd(problems=(said,)))).status is Status.WARN
    assert env.amdgpu_ids(_ctx(_amd())).status is Status.PASS
    assert env.amdgpu_ids(_ctx(Machine())).status is Status.SKIP


def _amdsmi(rocm: str | None = "7.0.2", **versions: str | None) -> Status:
    m = Machine(gpus=(RX580,), rocm=RocmInfo(version=rocm))
    args: dict[str, str | None] = {"amdsmi": None, "torch": None, "rocm_sdk": None, **versions}
    return torch_env.amdsmi_result(_ctx(m), **args).status


def test_amdsmi_clash() -> None:
    rocm_torch = "2.9.0+rocm7.0"
    assert _amdsmi(torch=None, amdsmi="7.0.2") is Status.SKIP
    assert _amdsmi(torch=rocm_torch) is Status.PASS  # no amdsmi package: nothing to clash
    assert _amdsmi(torch="2.9.0+cpu", amdsmi="7.0.2") is Status.PASS
    # pytorch#186516: ROCm SDK wheels bundle their own libamd_smi.
    assert _amdsmi(torch="2.11.0", amdsmi="7.0.2", rocm_sdk="7.11.0") is Status.FAIL
    assert _amdsmi(torch=rocm_torch, amdsmi="7.0.2") is Status.PASS  # matches /opt/rocm 7.0.2
    assert _amdsmi(torch=rocm_torch, amdsmi="6.4.3") is Status.WARN
    assert _amdsmi(rocm=None, torch=rocm_torch, amdsmi="7.0.2") is Status.WARN
    m = Machine(rocm=RocmInfo(version="6.2.4"))
    r = torch_env.amdsmi_result(_ctx(m), amdsmi="7.0.2", torch=rocm_torch, rocm_sdk=None)
    assert r.remedy and "pip uninstall -y amdsmi" in r.remedy
    assert "is not for the ROCm 6.2.4 installed here" in r.message and "device_count() return 0" in r.message


# --- the machine document ------------------------------------------------------------------


def test_machine_json_round_trip_and_older_documents() -> None:
    m = _amd(
        Gpu(vendor="amd", index=0, virtual_function=True), kernel_messages=(SKIPPED,), kernel_log_read=True
    )
    assert Machine.from_dict(m.to_dict()) == m
    old = m.to_dict()
    for key in ("kernel_messages", "kernel_log_read"):
        del old[key]
    del old["gpus"][0]["virtual_function"]
    back = Machine.from_dict(old)
    assert back.kernel_messages == () and back.kernel_log_read is None
    assert back.gpus[0].virtual_function is None
    with pytest.raises(DataError):
        Machine.from_dict({**m.to_dict(), "kernel_log_read": "yes"})


def test_live_dmesg_runs_with_a_short_timeout_and_a_refusal_is_not_an_error(tmp_path: Path) -> None:
    from rocmkit.proc.runner import CommandResult
    from rocmkit.sources import LiveSource

    calls: dict[tuple[str, ...], float] = {}

    def runner(argv: tuple[str, ...], *, timeout: float) -> CommandResult:
        calls[tuple(argv)] = timeout
        if tuple(argv) == ("dmesg",):
            return CommandResult(
                argv=argv,
                status="failed",
                returncode=1,
                stderr="dmesg: read kernel buffer failed: Operation not permitted\n",
            )
        return CommandResult(argv=argv, status="absent", error="not installed")

    m = detect_machine(LiveSource(runner=runner, env={}, root=str(tmp_path)), environ={})
    assert calls[("dmesg",)] == 3.0
    assert m.kernel_log_read is False
    assert [p.severity for p in m.problems if p.source == "dmesg"] == ["info"]
