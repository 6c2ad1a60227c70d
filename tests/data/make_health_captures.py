#!/usr/bin/env python3
"""Builds the two synthetic MI300X health captures from the kernel's documented sysfs formats.

Run from the repository root:
    python3 tests/data/make_health_captures.py tests/data/captures \\
        tests/data/captures/mi300x8-rocm-smi-stas00/cmd/rocm-smi.txt
"""
import json
import shutil
import sys
from pathlib import Path

CAP = Path(sys.argv[1])
REAL_SMI = Path(sys.argv[2])  # tests/data/captures/mi300x8-rocm-smi-stas00/cmd/rocm-smi.txt
BUSES = ["0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0",
         "0000:85:00.0", "0000:a6:00.0", "0000:c6:00.0", "0000:e5:00.0"]
UP = {b: b[:5] + f"{int(b[5:7],16)-1:02x}" + ":00.0" for b in BUSES}
BLOCKS = ["umc", "sdma", "gfx", "mmhub", "pcie_bif", "hdp", "xgmi_wafl"]


def w(root, rel, text):
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def build(name, degraded):
    d = CAP / name
    note = (d / "SOURCE.md").read_text() if (d / "SOURCE.md").is_file() else None
    shutil.rmtree(d, ignore_errors=True)
    root = d / "root"
    (d / "cmd").mkdir(parents=True)
    shutil.copy(REAL_SMI, d / "cmd" / "rocm-smi.txt")
    lines = []
    for i, b in enumerate(BUSES):
        lines.append(f"{b} vendor=0x1002 device=0x74a1 class=0x120000 upstream={UP[b]} slot={i + 1}")
        base = f"/sys/bus/pci/devices/{b}"
        speed, width = "32.0 GT/s PCIe", "16"
        if degraded and i == 1:
            speed, width = "16.0 GT/s PCIe", "8"
        w(root, f"{base}/current_link_speed", speed + "\n")
        w(root, f"{base}/current_link_width", width + "\n")
        w(root, f"{base}/max_link_speed", "32.0 GT/s PCIe\n")
        w(root, f"{base}/max_link_width", "16\n")
        for f, v in (("current_link_speed", speed), ("current_link_width", width),
                     ("max_link_speed", "32.0 GT/s PCIe"), ("max_link_width", "16")):
            w(root, f"/sys/bus/pci/devices/{UP[b]}/{f}", v + "\n")
        w(root, f"{base}/vbios_version", "113-M3000100-103\n")
        w(root, f"{base}/gpu_busy_percent", "0\n")
        w(root, f"{base}/pp_dpm_sclk", "0: 500Mhz *\n1: 2100Mhz\n")
        for blk in BLOCKS:
            ue, ce = 0, 0
            if degraded and i == 2 and blk == "umc":
                ue, ce = 2, 57
            text = f"ue: {ue}\nce: {ce}\n" + ("de: 0\n" if blk == "umc" else "")
            w(root, f"{base}/ras/{blk}_err_count", text)
        w(root, f"{base}/ras/features", "feature mask: 0x000077fd\n")
        bad = ""
        if degraded and i == 2:
            bad = ("0x00012a40 : 0x00001000 : R\n0x00012a41 : 0x00001000 : R\n"
                   "0x0003f7c2 : 0x00001000 : R\n0x00051b08 : 0x00001000 : P\n")
        w(root, f"{base}/ras/gpu_vram_bad_pages", bad)
        for fw, v in (("sos", "0x00380071"), ("smc", "0x05551b00"), ("mec", "0x000000a4"),
                      ("rlc", "0x0000006f"), ("sdma", "0x00000015"), ("ta_ras", "0x1b000306")):
            w(root, f"{base}/fw_version/{fw}_fw_version", v + "\n")
        w(root, f"{base}/xgmi_device_id", f"{17453342981217474560 + i}\n")
        w(root, f"{base}/xgmi_hive_info/xgmi_hive_id", "6392385474851432187\n")
        for n in range(1, 9):
            (root / base.lstrip("/") / "xgmi_hive_info" / f"node{n}").mkdir(parents=True, exist_ok=True)
        links = ["01"] * 8
        links[i] = "00"
        if degraded and i == 4:
            links[5] = "00"
        if degraded and i == 5:
            links[4] = "00"
        w(root, f"{base}/xgmi_num_links", " ".join(links) + " \n")
        mon = f"{base}/hwmon/hwmon{i + 2}"
        cap = 450000000 if degraded and i == 3 else 750000000
        junction = 112000 if degraded and i == 3 else 41000
        for f, v in (("name", "amdgpu"), ("power1_cap", cap), ("power1_cap_default", 750000000),
                     ("power1_cap_max", 750000000), ("temp2_input", junction), ("temp2_label", "junction"),
                     ("temp2_crit", 110000), ("temp3_input", 35000), ("temp3_label", "mem"),
                     ("temp3_crit", 95000), ("freq1_input", 500000000)):
            w(root, f"{mon}/{f}", f"{v}\n")
    if note is not None:
        (d / "SOURCE.md").write_text(note)
    (d / "cmd" / "pci-gpus.txt").write_text("".join(line + "\n" for line in lines))
    (d / "expected.json").write_text(json.dumps({
        "gpus": [{"vendor": "amd", "gfx": None, "marketing_name": "AMD Instinct MI300X", "vram_bytes": None}] * 8,
        "rocm_version": None, "cpu_agents": None}, indent=2) + "\n")


build("synthetic-mi300x8-health-sysfs", False)
build("synthetic-mi300x8-health-degraded", True)
