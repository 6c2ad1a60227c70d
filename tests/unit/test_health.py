"""Hardware health (docs/hardware.md): the parsers, the probe on real and built captures, hostile
input (cut-off, binary and oversized files, a missing RAS folder, a read that hangs, a tool that
timed out), the snapshot round trip, and the hw.* checks' verdicts."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from rocmkit.detect import detect_machine
from rocmkit.doctor.checks import hardware
from rocmkit.doctor.registry import CheckContext
from rocmkit.doctor.result import CheckResult, Report, Status
from rocmkit.machine import GpuHealth, Machine
from rocmkit.parsers import health as ph
from rocmkit.probes import health as probe
from rocmkit.proc.runner import CommandResult
from rocmkit.sources import PCI_DEVICES, CaptureSource, LiveSource, RecordingSource, snapshot

CAPTURES = Path(__file__).resolve().parent.parent / "data" / "captures"
HEALTHY = "synthetic-mi300x8-health-sysfs"
DEGRADED = "synthetic-mi300x8-health-degraded"


def _machine(path: Path) -> Machine:
    return detect_machine(CaptureSource(path), environ={})


def _run(fn: object, m: Machine, **options: object) -> CheckResult:
    out = fn(CheckContext(machine=m, options=dict(options)))  # type: ignore[operator]
    assert isinstance(out, CheckResult)
    return out


def _by_bus(m: Machine) -> dict[str, GpuHealth]:
    return {h.pci_bus_id: h for h in m.health}


# ---- parsers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [("16.0 GT/s PCIe\n", 16.0), ("8 GT/s\n", 8.0), ("2.5 GT/s PCIe", 2.5), ("Unknown\n", None),
     ("16.0 GT", None), ("\x00\x01", None), ("9" * 5000, None), (None, None)],
)
def test_link_speed(text: str | None, want: float | None) -> None:
    assert ph.link_speed(text) == want


def test_link_width_and_counts() -> None:
    assert ph.link_width("16\n") == 16 and ph.link_width("8x") == 8 and ph.link_width("0") is None
    assert ph.ras_counts("ue: 2\nce: 57\nde: 1\n") == (3, 57)
    assert ph.ras_counts("ue: 0\nce: 0\n") == (0, 0)
    assert ph.ras_counts("ue: 0\nce") is None  # cut short: not a count of zero
    assert ph.ras_counts("ue: 0\n") is None
    bp = ph.bad_pages("0x1 : 0x1000 : R\n0x2 : 0x1000 : P\n0x3 : 0x10")
    assert bp == ph.BadPages(reserved=1, pending=1, failed=0, unreadable_lines=1)
    assert ph.bad_pages("") == ph.BadPages()
    assert ph.bad_pages("\x00\x00") is None
    assert ph.xgmi_links("00 01 01 03 \n") == (0, 1, 1, 3)
    assert ph.xgmi_links("00 zz") is None
    assert ph.dpm_pcie_max("0: 2.5GT/s, x16 97Mhz *\n1: 16.0GT/s, x16 619Mhz\n") == (16.0, True)
    assert ph.dpm_clock("0: 500Mhz *\n1: 2100Mhz\n") == (500, 2100)


def test_nvidia_xml_refuses_entities_and_cut_documents() -> None:
    bomb = '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><nvidia_smi_log>&a;</nvidia_smi_log>'
    assert ph.parse_nvidia_xml(bomb).problem and not ph.parse_nvidia_xml(bomb).gpus
    real = (CAPTURES / "a100-sxm4-nvidia-smi-q-535.54.03" / "cmd" / "nvidia-smi-q.xml").read_text()
    cut = ph.parse_nvidia_xml(real[: len(real) // 2])
    assert cut.problem and "not complete XML" in cut.problem
    full = ph.parse_nvidia_xml(real)
    assert [g.bus_id for g in full.gpus] == ["0000:01:00.0"]
    g = full.gpus[0]
    assert (g.link_gen, g.link_width, g.power_cap_w, g.vbios) == (4, 16, 500.0, "92.00.36.00.02")
    assert g.remap_failure is None  # "N/A" under MIG: unknown, not "no failure"


# ---- captures -----------------------------------------------------------------------------------


def test_healthy_capture_passes_every_check() -> None:
    m = _machine(CAPTURES / HEALTHY)
    assert len(m.health) == 8 and all(h.sources == ("sysfs",) for h in m.health)
    for fn in (hardware.pcie_link, hardware.ecc, hardware.xgmi, hardware.power_thermal, hardware.firmware):
        assert _run(fn, m).status is Status.PASS, fn
    assert _run(hardware.nvlink, m).status is Status.SKIP


def test_degraded_capture_fails_naming_the_gpu_and_the_fix() -> None:
    m = _machine(CAPTURES / DEGRADED)
    link = _run(hardware.pcie_link, m)
    assert link.status is Status.FAIL and "0000:26:00.0 in slot 2 trained at x8" in link.message
    assert link.remedy and "0000:25:00.0" in link.remedy and "BIOS" in link.remedy
    ecc = _run(hardware.ecc, m)
    assert ecc.status is Status.FAIL and "0000:46:00.0 has 2 uncorrectable" in ecc.message
    assert _by_bus(m)["0000:46:00.0"].retired_pages == 3 and _by_bus(m)["0000:46:00.0"].pending_retirement
    xg = _run(hardware.xgmi, m)
    assert xg.status is Status.FAIL and "0000:85:00.0" in xg.message and "0000:a6:00.0" in xg.message
    pt = _run(hardware.power_thermal, m)
    assert pt.status is Status.FAIL and "450 W" in pt.message and "112 C" in pt.message
    # --set lowers the bar: a 450 W cap of 750 W passes at 0.5 (the temperature still fails).
    assert "450 W" not in _run(hardware.power_thermal, m, power_cap_min_fraction=0.5).message
    # A retired-page threshold from --set: 3 pages fail at 3.
    assert "retired pages, at or above 3" in _run(hardware.ecc, m, ecc_retired_pages_max=3).message


def test_nvidia_real_link_below_max_and_idle_downclock() -> None:
    t4 = _run(hardware.pcie_link, _machine(CAPTURES / "tesla-t4-nvidia-smi-q-link-x8"))
    assert t4.status is Status.FAIL and "x8, below x16" in t4.message
    a10g = _machine(CAPTURES / "a10g-nvidia-smi-q-idle-gen1-x8")
    h = a10g.health[0]
    assert h.idle is True and h.link_speed_gts == 2.5 and h.remap_failure is False
    # x8 of x16 fails; the Gen1 speed alone (idle) would only warn: ask for x8 to see it.
    relaxed = _run(hardware.pcie_link, a10g, pcie_min_width=8)
    assert relaxed.status is Status.WARN and "idle" in relaxed.message
    assert _run(hardware.ecc, a10g).status is Status.PASS


def test_nvidia_remap_failure_and_thermal_throttle() -> None:
    m = _machine(CAPTURES / "a10g-derived-remap-failure-thermal")
    ecc = _run(hardware.ecc, m)
    assert ecc.status is Status.FAIL and "row remapping failed" in ecc.message and "dram 1" in ecc.message
    pt = _run(hardware.power_thermal, m)
    assert pt.status is Status.FAIL and "hw_thermal_slowdown" in pt.message and "96 C" in pt.message


def test_no_health_facts_is_a_skip_not_a_pass() -> None:
    m = _machine(CAPTURES / "mi300x8-rocm-smi-stas00")
    assert m.health == ()
    for fn in (hardware.pcie_link, hardware.ecc, hardware.power_thermal):
        assert _run(fn, m).status is Status.SKIP


def test_machine_round_trips_health() -> None:
    m = _machine(CAPTURES / DEGRADED)
    back = Machine.from_dict(m.to_dict())
    assert back.health == m.health


# ---- hostile input ------------------------------------------------------------------------------


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    dest = tmp_path / "cap"
    shutil.copytree(CAPTURES / HEALTHY, dest, symlinks=True)
    return dest


def test_hostile_files_are_notes_never_a_pass(copy: Path) -> None:
    dev = copy / "root" / PCI_DEVICES.lstrip("/")
    (dev / "0000:05:00.0" / "current_link_width").write_text("1")  # cut short: x1 would be a fact
    (dev / "0000:05:00.0" / "current_link_width").write_bytes(b"\x00\xff\x10")  # binary
    (dev / "0000:26:00.0" / "max_link_speed").write_text("3" * 100_000)  # enormous
    (dev / "0000:46:00.0" / "ras" / "umc_err_count").write_text("ue: 0\nc")  # cut off
    shutil.rmtree(dev / "0000:65:00.0" / "ras")  # no RAS folder
    m = _machine(copy)
    h = _by_bus(m)
    assert h["0000:05:00.0"].link_width is None and any("binary" in n for n in h["0000:05:00.0"].notes)
    assert h["0000:26:00.0"].link_speed_max_gts is None and any("bytes" in n for n in h["0000:26:00.0"].notes)
    assert "umc" not in h["0000:46:00.0"].ecc_uncorrectable
    assert any("umc_err_count" in n for n in h["0000:46:00.0"].notes)
    assert h["0000:65:00.0"].ecc_uncorrectable == {} and any("no ras/ folder" in n for n in h["0000:65:00.0"].notes)
    link = _run(hardware.pcie_link, m)
    assert "GPU 0000:05:00.0 link width" in link.message  # unknown, said
    ecc = _run(hardware.ecc, m)
    assert "0000:65:00.0 ECC" in ecc.message and "no ras/ folder" in ecc.message


def test_capture_file_over_the_cap_is_a_note(copy: Path) -> None:
    big = copy / "root" / PCI_DEVICES.lstrip("/") / "0000:05:00.0" / "vbios_version"
    with open(big, "wb") as fh:
        fh.truncate(17 * 1024 * 1024)  # sparse: over CaptureSource's 16 MiB cap
    h = _by_bus(_machine(copy))["0000:05:00.0"]
    assert h.vbios is None and any("vbios_version" in n for n in h.notes)


def test_a_tool_that_timed_out_is_a_note(copy: Path) -> None:
    src = CAPTURES / "a10g-derived-remap-failure-thermal" / "cmd" / "nvidia-smi-q.xml"
    shutil.copy(src, copy / "cmd" / "nvidia-smi-q.xml")
    (copy / "cmd" / "nvidia-smi-q.xml.rc").write_text("timeout 10\n")
    m = _machine(copy)
    assert any(p.source == "nvidia-smi" and "10" in p.message for p in m.problems)
    assert all(h.vendor == "amd" for h in m.health)  # its half-written output is not read


class _Hanging:
    """A capture whose reads of one GPU's folder block until released (a wedged GPU)."""

    def __init__(self, inner: CaptureSource, stuck: str) -> None:
        self.inner, self.stuck, self.release = inner, stuck, threading.Event()

    @property
    def label(self) -> str:
        return self.inner.label

    def command(self, name: str):  # type: ignore[no-untyped-def]
        return self.inner.command(name)

    def read(self, path: str) -> str | None:
        if self.stuck in path:
            self.release.wait(30)
        return self.inner.read(path)

    def listdir(self, path: str) -> list[str] | None:
        return self.inner.listdir(path)

    def environ(self):  # type: ignore[no-untyped-def]
        return self.inner.environ()


def test_a_read_that_hangs_is_a_problem_not_a_hang() -> None:
    src = _Hanging(CaptureSource(CAPTURES / DEGRADED), "0000:46:00.0")
    try:
        records, problems = probe.finish(probe.start(src), {}, timeout_s=0.3)
    finally:
        src.release.set()
    stuck = {h.pci_bus_id: h for h in records}["0000:46:00.0"]
    assert stuck.ecc_uncorrectable == {} and "facts unknown" in stuck.notes[0]
    assert any("did not finish" in p.message for p in problems)
    m = Machine(health=records)
    assert "0000:46:00.0 ECC" in _run(hardware.ecc, m).message  # unknown, not a pass


# ---- live source and snapshot -------------------------------------------------------------------


def _fake_sysfs(root: Path) -> None:
    """A /sys tree as the kernel lays it out: /sys/bus/pci/devices/<BDF> links into /sys/devices."""
    port = root / "sys/devices/pci0000:00/0000:00:01.1"
    gpu = port / "0000:03:00.0"
    (gpu / "ras").mkdir(parents=True)
    (gpu / "hwmon" / "hwmon4").mkdir(parents=True)
    for d, files in (
        (port, {"vendor": "0x1022", "class": "0x060400", "max_link_speed": "16.0 GT/s PCIe",
                "max_link_width": "16", "current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16"}),
        (gpu, {"vendor": "0x1002", "device": "0x740f", "class": "0x038000", "current_link_speed": "16.0 GT/s PCIe",
               "current_link_width": "16", "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16",
               "vbios_version": "113-D67301-063", "ras/umc_err_count": "ue: 0\nce: 3\n",
               "ras/gpu_vram_bad_pages": "", "hwmon/hwmon4/name": "amdgpu",
               "hwmon/hwmon4/power1_cap": "300000000", "hwmon/hwmon4/power1_cap_default": "300000000"}),
    ):
        for name, text in files.items():
            (d / name).write_text(text + "\n")
    devices = root / "sys/bus/pci/devices"
    devices.mkdir(parents=True)
    (root / "sys/bus/pci/slots/7").mkdir(parents=True)
    (root / "sys/bus/pci/slots/7/address").write_text("0000:03:00\n")
    for bdf, target in (("0000:00:01.1", port), ("0000:03:00.0", gpu)):
        os.symlink(os.path.relpath(target, devices), devices / bdf)


def test_live_reads_and_snapshot_replays_the_same_facts(tmp_path: Path) -> None:
    root = tmp_path / "machine"
    _fake_sysfs(root)
    def no_tools(argv: tuple[str, ...], **_: object) -> CommandResult:
        return CommandResult(argv=argv, status="absent", error="not installed")

    live = LiveSource(root=str(root), env={}, runner=no_tools)
    pci = live.command("pci-gpus.txt").stdout
    assert pci == "0000:03:00.0 vendor=0x1002 device=0x740f class=0x038000 upstream=0000:00:01.1 slot=7\n"
    live_records, _ = probe.finish(probe.start(live), {})
    rec = RecordingSource(live, (PCI_DEVICES,))
    probe.finish(probe.start(rec), {})
    snapshot(live, tmp_path / "snap", recorded=rec)
    assert (tmp_path / "snap" / "root/sys/bus/pci/devices/0000:03:00.0/ras/umc_err_count").is_file()
    assert not (tmp_path / "snap" / "root/sys/bus/pci/devices/0000:03:00.0").is_symlink()
    replay, _ = probe.finish(probe.start(CaptureSource(tmp_path / "snap")), {})
    assert replay == live_records
    h = live_records[0]
    assert (h.upstream_bus_id, h.slot, h.upstream_width_max, h.ecc_correctable, h.power_cap_w) == (
        "0000:00:01.1", "7", 16, {"umc": 3}, 300.0)


def test_refresh_reads_health_again() -> None:
    from rocmkit.detect import refresh_health

    stale = _machine(CAPTURES / HEALTHY)
    fresh = refresh_health(stale, environ={}, source=CaptureSource(CAPTURES / DEGRADED))
    assert _by_bus(fresh)["0000:26:00.0"].link_width == 8 and fresh.gpus == stale.gpus


def _report(m: Machine) -> Report:
    results = tuple(
        _run(fn, m) for fn in (hardware.pcie_link, hardware.ecc, hardware.xgmi, hardware.power_thermal)
    )
    return Report(machine=m.to_dict(), plan=None, results=results, versions={}, started_at="2026-12-07T03:00:00Z",
                  finished_at="2026-12-07T03:00:01Z", host_id="n1-x", hostname="n1", level=0)


def test_reports_carry_the_facts_and_the_failures() -> None:
    import xml.etree.ElementTree as ET

    from prometheus_client.parser import text_string_to_metric_families

    from rocmkit.doctor.reporters import json as json_reporter
    from rocmkit.doctor.reporters import junit, npd, prom

    report = _report(_machine(CAPTURES / DEGRADED))
    families = {f.name: f for f in text_string_to_metric_families(prom.render(report))}
    width = {s.labels["gpu"]: s.value for s in families["rocmkit_hw_pcie_link_width"].samples}
    assert width["0000:26:00.0"] == 8 and width["0000:05:00.0"] == 16
    ue = {(s.labels["gpu"], s.labels["block"]): s.value for s in families["rocmkit_hw_ecc_uncorrectable"].samples}
    assert ue[("0000:46:00.0", "umc")] == 2
    assert {s.labels["gpu"] for s in families["rocmkit_hw_xgmi_links_down"].samples if s.value} == {
        "0000:85:00.0", "0000:a6:00.0"}
    assert "rocmkit_hw_retired_pages" in families and "rocmkit_hw_temperature_celsius" in families
    code, line = npd.status(report)
    assert code == npd.NON_OK and line.startswith("hw.pcie_link (+3): GPU 0000:26:00.0") and len(line) <= 80
    failures = ET.fromstring(junit.render(report)).findall(".//failure")
    assert len(failures) == 4
    assert '"link_width": 8' in json_reporter.render(report)


def test_links_out_of_the_capture_are_refused_with_a_note(copy: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("ue: 7\nce: 7\n")
    dev = copy / "root" / PCI_DEVICES.lstrip("/")
    umc = dev / "0000:05:00.0" / "ras" / "umc_err_count"
    umc.unlink()
    umc.symlink_to(secret)
    outside = tmp_path / "ras"
    outside.mkdir()
    (outside / "umc_err_count").write_text("ue: 9\nce: 9\n")
    shutil.rmtree(dev / "0000:26:00.0" / "ras")
    (dev / "0000:26:00.0" / "ras").symlink_to(outside)
    h = _by_bus(_machine(copy))
    assert "umc" not in h["0000:05:00.0"].ecc_uncorrectable
    assert any("leads out of" in n for n in h["0000:05:00.0"].notes)
    assert h["0000:26:00.0"].ecc_uncorrectable == {}
    assert any("leads out of" in n for n in h["0000:26:00.0"].notes)
    # A link that stays inside the capture is followed, as before.
    inner = dev / "0000:46:00.0" / "vbios_version"
    inner.unlink()
    inner.symlink_to(dev / "0000:05:00.0" / "vbios_version")
    assert _by_bus(_machine(copy))["0000:46:00.0"].vbios == "113-M3000100-103"


def test_slurm_drain_reason_names_the_check_and_the_gpu() -> None:
    from rocmkit.slurm.checks import REASON_LIMIT, drain_reason, result_finding

    report = _report(_machine(CAPTURES / DEGRADED))
    findings = [result_finding(r, "health check") for r in report.results if r.status is Status.FAIL]
    assert [f.subject for f in findings] == ["26:00.0", "46:00.0", "85:00.0+1", "65:00.0"]
    reason = drain_reason(findings)
    assert reason == "rocmkit: hw.pcie_link 26:00.0 (+3 more)" and len(reason) <= REASON_LIMIT
    assert drain_reason(findings[1:2]) == "rocmkit: hw.ecc 46:00.0"


def test_fleet_lists_degraded_gpus_and_vbios_drift(tmp_path: Path) -> None:
    from dataclasses import replace

    from rocmkit.fleet.load import LoadedReport
    from rocmkit.fleet.render_text import render
    from rocmkit.fleet.summarize import summarize

    good = _machine(CAPTURES / HEALTHY)
    newer = replace(good, health=tuple(replace(h, vbios="113-M3000100-104") for h in good.health))
    reports = []
    for host, m in (("n1", good), ("n2", good), ("n3", _machine(CAPTURES / DEGRADED)), ("n4", newer)):
        rep = _report(m)
        reports.append(LoadedReport(path=tmp_path / f"{host}.json", report=replace(rep, hostname=host)))
    summary = summarize(reports)
    hw = {(e.hostname, e.gpu): e.problems for e in summary.hardware}
    assert hw[("n3", "0000:26:00.0")] == ("PCIe x8 of x16",)
    assert hw[("n3", "0000:46:00.0")] == ("2 uncorrectable ECC error(s)", "3 retired page(s)")
    assert ("n3", "0000:85:00.0") in hw and all(h == "n3" for h, _ in hw)
    drift = {d.field: d for d in summary.drift}
    assert drift["vbios"].majority == "113-M3000100-103" and drift["vbios"].values["113-M3000100-104"] == ("n4",)
    drain = {d.hostname: d.reason for d in summary.drain}
    assert drain["n3"].startswith("rocmkit: hw.pcie_link 26:00.0")
    text = render(summary)
    assert "n3 GPU 0000:46:00.0: 2 uncorrectable ECC error(s); 3 retired page(s)" in text


# The shape of amdsmi_cli's `metric --json` (ROCm 6.4+: {"gpu_data": [...]}; amdsmi_commands.py),
# values as it prints them ({"value", "unit"}, "N/A" where the library call failed).
AMD_SMI_METRIC = """WARNING: amdgpu.ids not found
{"gpu_data": [
 {"gpu": 0, "power": {"socket_power": {"value": 301, "unit": "W"}, "throttle_status": "UNTHROTTLED"},
  "temperature": {"edge": "N/A", "hotspot": {"value": 52, "unit": "C"}, "mem": {"value": 40, "unit": "C"}},
  "pcie": {"width": 16, "speed": {"value": 32, "unit": "GT/s"}},
  "ecc": {"total_correctable_count": 4, "total_uncorrectable_count": 1, "total_deferred_count": 0},
  "ecc_blocks": {"UMC": {"correctable_count": 4, "uncorrectable_count": 0, "deferred_count": 1},
                 "GFX": {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0}}},
 {"gpu": 1, "power": {"throttle_status": "THROTTLED"},
  "ecc": {"total_correctable_count": "N/A", "total_uncorrectable_count": "N/A"}}
]}
"""


def test_amd_smi_metric_fills_what_sysfs_did_not_show(copy: Path) -> None:
    dev = copy / "root" / PCI_DEVICES.lstrip("/")
    shutil.rmtree(dev / "0000:05:00.0" / "ras")  # the kernel shows no RAS: amd-smi's counts are used
    (copy / "cmd" / "amd-smi-metric.json").write_text(AMD_SMI_METRIC)
    m = _machine(copy)
    h = _by_bus(m)
    first = h["0000:05:00.0"]
    assert first.ecc_uncorrectable == {"umc": 1, "gfx": 0} and first.ecc_correctable == {"umc": 4, "gfx": 0}
    assert "amd-smi" in first.sources
    assert h["0000:26:00.0"].throttle == ("throttle_status",)
    assert h["0000:26:00.0"].ecc_uncorrectable["umc"] == 0  # sysfs first: amd-smi's N/A does not replace it
    assert _run(hardware.ecc, m).status is Status.FAIL
    pt = _run(hardware.power_thermal, m)
    assert pt.status is Status.FAIL and "throttle_status" in pt.message
    assert ph.parse_amd_smi_metric("{not json") == []


def test_real_mi100_rocm_smi_json_gives_what_it_shows_and_skips_the_rest() -> None:
    m = _machine(CAPTURES / "mi100x4-rocm-smi-showallinfo-json-rocm6.0.2")
    h = _by_bus(m)
    assert sorted(h) == ["0000:83:00.0", "0000:a3:00.0", "0000:c3:00.0", "0000:e3:00.0"]
    first = h["0000:83:00.0"]
    assert (first.vbios, first.power_cap_w, first.link_speed_gts, first.link_width, first.clock_mhz) == (
        "113-D3431401-101", 290.0, 16.0, 16, 300)
    assert first.temperatures_c == {"edge": 53.0, "junction": 55.0, "memory": 53.0} and first.idle is True
    assert first.firmware["smc"] == "00.54.29.00" and first.sources == ("rocm-smi",)
    link = _run(hardware.pcie_link, m)
    assert link.status is Status.SKIP and "link maximum width" in link.message
    assert _run(hardware.ecc, m).status is Status.SKIP
    assert _run(hardware.power_thermal, m).status is Status.PASS
    assert _run(hardware.firmware, m).status is Status.PASS


def test_xgmi_topology_not_fully_connected_is_judged_by_the_model() -> None:
    from dataclasses import replace

    m = _machine(CAPTURES / HEALTHY)
    # An MI250X-like hive: each GCD links directly to some peers only.
    partial = tuple(replace(h, xgmi_links=tuple(0 if (k + i) % 3 == 0 else 2 for k in range(8)))
                    for i, h in enumerate(m.health))
    unknown_model = replace(m, gpus=tuple(replace(g, name="AMD Instinct MI250X") for g in m.gpus), health=partial)
    r = _run(hardware.xgmi, unknown_model)
    assert r.status is Status.PASS and "xgmi_direct_peers" in r.message
    # MI300X's row expects 7 direct peers: the same partial links fail there.
    assert _run(hardware.xgmi, replace(m, health=partial)).status is Status.FAIL
    cut_off = replace(unknown_model, health=(replace(partial[0], xgmi_links=(0,) * 8), *partial[1:]))
    assert "no XGMI link to any of its 7 hive peers" in _run(hardware.xgmi, cut_off).message


def test_an_integrated_gpu_has_no_slot_to_judge() -> None:
    from dataclasses import replace

    from rocmkit.machine import Gpu

    m = _machine(CAPTURES / DEGRADED)
    apu = replace(m, gpus=(Gpu(vendor="amd", index=0, pci_bus_id="0000:26:00.0", integrated=True),))
    assert _run(hardware.pcie_link, apu).status is Status.PASS


def test_detect_table_has_one_hardware_line() -> None:
    import io

    from rich.console import Console

    from rocmkit.detect.view import render

    buf = io.StringIO()
    render(_machine(CAPTURES / DEGRADED), Console(file=buf, width=400, highlight=False))
    line = next(x for x in buf.getvalue().splitlines() if x.startswith("hardware"))
    assert "8 GPU(s) read (sysfs): 26:00.0 link x8 of x16; 46:00.0 2 uncorrectable ECC" in line
    buf = io.StringIO()
    render(_machine(CAPTURES / "mi300x8-rocm-smi-stas00"), Console(file=buf, width=400, highlight=False))
    assert "hardware" not in buf.getvalue()


def test_nvlink_real_pcie_bridge_pair_and_an_sxm_node() -> None:
    from dataclasses import replace

    m = _machine(CAPTURES / "h100pcie-x2-nvlink-bridge-555.42.02")
    assert [(h.pci_bus_id, h.nvlink_up, h.nvlink_total) for h in m.health] == [
        ("0000:c2:00.0", 12, 18), ("0000:d5:00.0", 12, 18)]
    ok = _run(hardware.nvlink, m)
    assert ok.status is Status.PASS and "nvlink_links" in ok.message  # 6 inactive links are normal here
    one_down = replace(m, health=(replace(m.health[0], nvlink_up=11), m.health[1]))
    assert _run(hardware.nvlink, one_down).status is Status.WARN
    # An H100 SXM node: all 18 links must be up (matrices/sku.toml nvlink_links).
    sxm = replace(m, gpus=tuple(replace(g, name="NVIDIA H100 80GB HBM3") for g in m.gpus))
    r = _run(hardware.nvlink, sxm)
    assert r.status is Status.FAIL and "12 NVLink link(s) up, H100 GPUs have 18" in r.message
    assert ph.parse_nvlink_status("GPU 0: X\n\t Link 0: 0 GB/s\n\t Link 1: <inactive>\n") == {0: (0, 2)}


def test_nvlink_absent_or_refused_is_no_problem(tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    shutil.copytree(CAPTURES / "h100pcie-x2-nvlink-bridge-555.42.02", cap)
    (cap / "cmd" / "nvidia-smi-nvlink.txt").write_text("")
    (cap / "cmd" / "nvidia-smi-nvlink.txt.rc").write_text("255\n")
    m = _machine(cap)
    assert m.health == () and not any("nvlink" in p.message for p in m.problems)
    (cap / "cmd" / "nvidia-smi-nvlink.txt.rc").write_text("timeout 10\n")
    assert any(p.source == "nvidia-smi" and "nvlink" in p.message for p in _machine(cap).problems)


def test_amdgpu_bad_page_threshold_set_on_the_node_is_the_limit(copy: Path) -> None:
    param = copy / "root" / "sys/module/amdgpu/parameters/bad_page_threshold"
    param.parent.mkdir(parents=True)
    param.write_text("2\n")
    shutil.rmtree(copy / "root" / PCI_DEVICES.lstrip("/"))
    shutil.copytree(CAPTURES / DEGRADED / "root" / PCI_DEVICES.lstrip("/"), copy / "root" / PCI_DEVICES.lstrip("/"))
    shutil.copy(CAPTURES / DEGRADED / "cmd" / "pci-gpus.txt", copy / "cmd" / "pci-gpus.txt")
    m = _machine(copy)
    assert {h.retired_pages_limit for h in m.health} == {2}
    r = _run(hardware.ecc, m)
    assert "3 retired pages, at or above 2 (amdgpu.bad_page_threshold on this node)" in r.message
    param.write_text("-1\n")  # the driver's own rule: no number to hold the count to
    assert {h.retired_pages_limit for h in _machine(copy).health} == {None}
