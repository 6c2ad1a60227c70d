"""The typed records every stage shares: they round-trip through JSON and reject garbage clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocmkit.doctor.result import CheckResult, Figure, Report, Status, verdict
from rocmkit.errors import CaptureError, DataError
from rocmkit.machine import DeviceNode, Gpu, Host, Machine, NvidiaInfo, Problem, RocmInfo, RocmInstall
from rocmkit.plan import Backend, Plan
from rocmkit.sources import CaptureSource


def _machine() -> Machine:
    return Machine(
        gpus=(
            Gpu(
                vendor="amd",
                index=0,
                arch="gfx1031",
                name="AMD Radeon RX 6800M",
                pci_device_id="0x73df",
                integrated=False,
                sources=("rocminfo",),
            ),
            Gpu(
                vendor="amd",
                index=1,
                arch="gfx90c",
                name="AMD Radeon Graphics",
                integrated=True,
                visible=False,
            ),
        ),
        rocm=RocmInfo(
            version="6.3.0", installs=(RocmInstall(path="/opt/rocm-6.3.0", version="6.3.0", source="x"),)
        ),
        nvidia=NvidiaInfo(driver_version="550.54.15", cuda_version="12.4"),
        host=Host(
            kernel="6.8.0",
            groups=("render",),
            gids=(993,),
            devices=(DeviceNode(path="/dev/kfd", exists=True, readable=True, writable=False),),
        ),
        problems=(Problem(source="rocminfo", message="m", hint="h"),),
    )


def test_machine_round_trips_through_json() -> None:
    m = _machine()
    data = json.loads(json.dumps(m.to_dict()))
    assert data["schema"] == "rocmkit.machine/1"
    assert Machine.from_dict(data) == m
    assert m.backend_kind == "rocm"
    assert m.gpus[0].gfx_family == "gfx103"
    assert [g.index for g in m.visible_gpus] == [0]


def test_machine_from_dict_rejects_other_schemas() -> None:
    with pytest.raises(DataError, match=r"rocmkit\.machine/1"):
        Machine.from_dict({"schema": "something/else"})
    with pytest.raises(DataError, match="malformed"):
        Machine.from_dict({"schema": "rocmkit.machine/1", "gpus": [{"vendor": "amd"}]})


def test_plan_round_trip_and_commands() -> None:
    plan = Plan(
        backend=Backend.parse("rocm6.2"),
        torch_version="2.5.1+rocm6.2",
        requirements=("torch==2.5.1+rocm6.2", "pytorch-triton-rocm==3.1.0"),
        index_urls=("https://download.pytorch.org/whl/rocm6.2", "https://example.invalid/simple"),
        env={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"},
    )
    data = json.loads(json.dumps(plan.to_dict()))
    assert Plan.from_dict(data) == plan
    assert data["pip_command"] == (
        "pip install torch==2.5.1+rocm6.2 pytorch-triton-rocm==3.1.0 --index-url "
        "https://download.pytorch.org/whl/rocm6.2 --extra-index-url https://example.invalid/simple"
    )
    assert data["uv_command"] == (
        "uv pip install torch==2.5.1+rocm6.2 pytorch-triton-rocm==3.1.0 --index "
        "https://download.pytorch.org/whl/rocm6.2 --default-index https://example.invalid/simple"
    )
    with pytest.raises(DataError):
        Plan.from_dict({"schema": "rocmkit.plan/1"})


def test_verdict_precedence_and_report_round_trip() -> None:
    ok = CheckResult(name="a", level=0, status=Status.PASS, message="fine")
    warn = CheckResult(name="b", level=0, status=Status.WARN, message="meh")
    err = CheckResult(name="c", level=1, status=Status.ERROR, message="could not run")
    fail = CheckResult(
        name="d",
        level=1,
        status=Status.FAIL,
        message="broken",
        figures=(Figure(name="bw", value=10.0, unit="GB/s", reference=20.0),),
    )
    assert verdict([ok]) is Status.PASS
    assert verdict([ok, warn]) is Status.WARN
    assert verdict([warn, err]) is Status.ERROR
    assert verdict([err, fail, warn]) is Status.FAIL
    assert fail.figures[0].fraction == 0.5
    rep = Report(
        machine=_machine().to_dict(),
        plan=None,
        results=(ok, fail),
        versions={"torch": None},
        started_at="t0",
        finished_at="t1",
        host_id="h",
        hostname="n",
        level=1,
    )
    data = json.loads(json.dumps(rep.to_dict()))
    assert data["verdict"] == "fail" and data["exit_code"] == 1
    assert json.loads(json.dumps(Report.from_dict(data).to_dict())) == data


def test_capture_source_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match="does not exist"):
        CaptureSource(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CaptureError, match="not a folder"):
        CaptureSource(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CaptureError, match="neither cmd/ nor root/"):
        CaptureSource(tmp_path / "empty")
    bad = tmp_path / "bad"
    (bad / "cmd").mkdir(parents=True)
    (bad / "env.json").write_text("{not json")
    with pytest.raises(CaptureError, match="not valid JSON"):
        CaptureSource(bad)


def test_capture_source_replays_commands_and_files(tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    (cap / "cmd").mkdir(parents=True)
    (cap / "root" / "opt" / "rocm" / ".info").mkdir(parents=True)
    (cap / "root" / "opt" / "rocm" / ".info" / "version").write_text("6.2.4-120\n")
    (cap / "cmd" / "rocminfo.txt").write_text("")
    (cap / "cmd" / "rocminfo.txt.err").write_text("HSA_STATUS_ERROR_OUT_OF_RESOURCES")
    (cap / "cmd" / "rocminfo.txt.rc").write_text("1\n")
    (cap / "cmd" / "rocm-smi.txt.rc").write_text("timeout\n")
    (cap / "cmd" / "rocm-smi.txt").write_text("")
    src = CaptureSource(cap)
    r = src.command("rocminfo.txt")
    assert r.status == "failed" and r.returncode == 1 and "OUT_OF_RESOURCES" in r.stderr
    assert src.command("rocm-smi.txt").status == "timeout"
    assert src.command("nvidia-smi.txt").status == "absent"
    assert src.read("/opt/rocm/.info/version") == "6.2.4-120\n"
    assert src.read("/etc/os-release") is None
    assert src.listdir("/opt") == ["rocm"]
    (cap / "cmd" / "lspci.txt.rc").write_text("abc")
    (cap / "cmd" / "lspci.txt").write_text("")
    with pytest.raises(CaptureError, match="exit code"):
        src.command("lspci.txt")
