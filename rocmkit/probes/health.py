"""Hardware health (docs/hardware.md): per GPU, the kernel's files first, the vendor tools second.

:func:`start` reads every GPU's files under ``/sys/bus/pci/devices/<BDF>/`` in daemon
threads while detection runs its tools; :func:`finish` waits for them up to a deadline (a
read that hangs on a wedged GPU becomes a note, not a hang) and merges ``nvidia-smi -q -x``
and ``amd-smi metric --json`` into one :class:`~rocmkit.machine.GpuHealth` per GPU.
Nothing here judges: the ``hw.*`` doctor checks do (rocmkit/doctor/checks/hardware.py).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

from rocmkit.errors import CaptureError
from rocmkit.machine import GpuHealth, Problem
from rocmkit.parsers import health as ph
from rocmkit.probes import Results, output, tool_problem
from rocmkit.sources import PCI_DEVICES, Source

T = TypeVar("T")
COMMAND_NAMES = ("nvidia-smi-q.xml", "nvidia-smi-nvlink.txt", "amd-smi-metric.json")
PCI_COMMAND = "pci-gpus.txt"

LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
AMD_FILES = (
    "vbios_version",
    "pp_dpm_pcie",
    "pp_dpm_sclk",
    "gpu_busy_percent",
    "xgmi_device_id",
    "xgmi_num_links",
    "xgmi_hive_info/xgmi_hive_id",
)
# hwmon attributes read when listed (Documentation/hwmon/sysfs-interface).
HWMON_FILES = re.compile(r"^(name|power1_cap|power1_cap_default|power1_cap_max|temp\d_(input|label|crit)|freq1_input)$")
MAX_ENTRIES = 64  # RAS blocks, firmware files, hwmon attributes: a folder with more is not amdgpu's
# Default wait for every GPU's files; ROCMKIT_PROBE_TIMEOUT replaces it, as for the tools.
DEFAULT_TIMEOUT_S = 5.0
BAD_PAGE_THRESHOLD = "/sys/module/amdgpu/parameters/bad_page_threshold"
PCIE_GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


@dataclass
class GpuFiles:
    """What was read for one GPU: relative path -> text (None: absent), and notes."""

    pci: ph.PciGpu
    files: dict[str, str | None] = field(default_factory=dict)
    upstream: dict[str, str | None] = field(default_factory=dict)
    listings: dict[str, list[str] | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    done: bool = False


def _read(source: Source, path: str, notes: list[str]) -> str | None:
    try:
        return source.read(path)
    except CaptureError as exc:  # a capture's file over its cap, or a link out of the capture
        notes.append(f"{path}: {exc.message}")
    except (OSError, UnicodeError, ValueError) as exc:
        notes.append(f"{path}: cannot read ({exc})")
    return None


def _list(source: Source, path: str, notes: list[str]) -> list[str] | None:
    try:
        entries = source.listdir(path)
    except CaptureError as exc:
        notes.append(f"{path}: {exc.message}")
        return None
    if entries is not None and len(entries) > MAX_ENTRIES * 4:
        notes.append(f"{path}: {len(entries)} entries, only the first {MAX_ENTRIES * 4} read")
        return entries[: MAX_ENTRIES * 4]
    return entries


def read_gpu(source: Source, gpu: ph.PciGpu, out: GpuFiles) -> None:
    """Fill ``out`` with the files of one GPU (and of the bridge above it)."""
    base = f"{PCI_DEVICES}/{gpu.bus_id}"
    notes = out.notes
    for name in LINK_FILES:
        out.files[name] = _read(source, f"{base}/{name}", notes)
    if gpu.upstream:
        for name in LINK_FILES:
            out.upstream[name] = _read(source, f"{PCI_DEVICES}/{gpu.upstream}/{name}", notes)
    if gpu.vendor == "0x1002":
        for name in AMD_FILES:
            out.files[name] = _read(source, f"{base}/{name}", notes)
        for folder, keep in (
            ("ras", lambda n: n.endswith("_err_count") or n == "gpu_vram_bad_pages"),
            ("fw_version", lambda n: n.endswith("_fw_version")),
            ("xgmi_hive_info", lambda n: False),
        ):
            entries = _list(source, f"{base}/{folder}", notes)
            out.listings[folder] = entries
            for name in [n for n in entries or () if keep(n)][:MAX_ENTRIES]:
                out.files[f"{folder}/{name}"] = _read(source, f"{base}/{folder}/{name}", notes)
        mons = _list(source, f"{base}/hwmon", notes) or []
        out.listings["hwmon"] = mons
        for mon in [m for m in mons if m.startswith("hwmon")][:4]:
            attrs = _list(source, f"{base}/hwmon/{mon}", notes) or []
            for name in [a for a in attrs if HWMON_FILES.match(a)][:MAX_ENTRIES]:
                out.files[f"hwmon/{mon}/{name}"] = _read(source, f"{base}/hwmon/{mon}/{name}", notes)
    out.done = True


@dataclass
class Pending:
    """Reads under way: one daemon thread lists the GPUs, one more per GPU reads its files
    (daemon threads: a read that hangs on a wedged GPU must not block rocmkit's exit)."""

    started: float
    gpus: list[GpuFiles] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    master: threading.Thread | None = None
    listed: bool = False
    source: Source | None = None


def start(source: Source) -> Pending:
    """Start listing the GPUs on the PCI bus and reading each one's files; returns at once."""
    pending = Pending(started=time.monotonic(), source=source)

    def run() -> None:
        res = source.command(PCI_COMMAND)
        gpus = [GpuFiles(pci=g) for g in ph.pci_gpus(res.stdout)[:64]] if res.status == "ok" else []
        pending.gpus.extend(gpus)
        for g in gpus:
            t = threading.Thread(target=_guarded, args=(source, g), daemon=True,
                                 name=f"rocmkit-health-{g.pci.bus_id}")
            pending.threads.append(t)
            t.start()
        pending.listed = True
        for t in pending.threads:
            t.join()

    pending.master = threading.Thread(target=run, daemon=True, name="rocmkit-health")
    pending.master.start()
    return pending


def _guarded(source: Source, out: GpuFiles) -> None:
    try:
        read_gpu(source, out.pci, out)
    except Exception as exc:
        out.notes.append(f"reading {out.pci.bus_id}'s files failed: {type(exc).__name__}: {exc}")
        out.done = True


def finish(pending: Pending, results: Results, timeout_s: float | None = None) -> tuple[tuple[GpuHealth, ...], list[Problem]]:
    """Wait for the reads (at most ``timeout_s`` in all), then merge the tools' reports."""
    limit = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    if pending.master is not None:
        pending.master.join(max(0.0, limit - (time.monotonic() - pending.started)))
    problems: list[Problem] = []
    if not pending.listed:
        problems.append(
            Problem(
                source="sysfs",
                message=f"listing the GPUs under {PCI_DEVICES} did not finish in {limit:g} s",
                hint="check `dmesg` for a wedged device; set ROCMKIT_PROBE_TIMEOUT to wait longer",
                severity="warning",
            )
        )
    records: dict[str, GpuHealth] = {}
    threshold = None
    if pending.source is not None and any(g.pci.vendor == "0x1002" for g in pending.gpus):
        threshold = ph.integer(_read(pending.source, BAD_PAGE_THRESHOLD, []))
    for g in list(pending.gpus):
        if not g.done:
            problems.append(
                Problem(
                    source="sysfs",
                    message=f"reading GPU {g.pci.bus_id}'s files under {PCI_DEVICES} did not finish in {limit:g} s",
                    hint="a read that hangs usually means a wedged GPU or driver: check `dmesg`; "
                    "set ROCMKIT_PROBE_TIMEOUT to wait longer",
                    severity="warning",
                )
            )
            records[g.pci.bus_id] = GpuHealth(
                pci_bus_id=g.pci.bus_id,
                vendor=_vendor(g.pci),
                notes=(f"its files did not answer within {limit:g} s: facts unknown",),
            )
            continue
        records[g.pci.bus_id] = from_files(g)
        if g.pci.vendor == "0x1002" and threshold is not None and threshold > 0:
            records[g.pci.bus_id] = replace(records[g.pci.bus_id], retired_pages_limit=threshold)
    _merge_nvidia(records, results, problems)
    _merge_nvlink(records, results, problems)
    _merge_amd_smi(records, results, problems)
    _merge_rocm_smi(records, results)
    return tuple(records[k] for k in sorted(records)), problems


def _vendor(p: ph.PciGpu) -> str:
    return "amd" if p.vendor == "0x1002" else "nvidia" if p.vendor == "0x10de" else "unknown"


def _checked(g: GpuFiles, rel: str, parse: Callable[[str | None], T]) -> T:
    """Parse one file; a present file that does not parse is a note saying why."""
    text = g.files.get(rel)
    value = parse(text)
    if text is not None and value is None:
        why = ph.why_unreadable(text) or f"unexpected content {text[:40].strip()!r}"
        g.notes.append(f"{rel}: {why}")
    return value


def from_files(g: GpuFiles) -> GpuHealth:
    """The facts of one GPU's sysfs files."""
    f = g.files
    speed = _checked(g, "current_link_speed", ph.link_speed)
    width = _checked(g, "current_link_width", ph.link_width)
    speed_max = _checked(g, "max_link_speed", ph.link_speed)
    width_max = _checked(g, "max_link_width", ph.link_width)
    up_speed = ph.link_speed(g.upstream.get("max_link_speed"))
    up_width = ph.link_width(g.upstream.get("max_link_width"))
    rec = GpuHealth(
        pci_bus_id=g.pci.bus_id,
        vendor=_vendor(g.pci),
        sources=("sysfs",) if any(v is not None for v in f.values()) else (),
        link_speed_gts=speed,
        link_width=width,
        link_speed_max_gts=speed_max,
        link_width_max=width_max,
        upstream_bus_id=g.pci.upstream,
        slot=g.pci.slot,
        upstream_speed_max_gts=up_speed,
        upstream_width_max=up_width,
    )
    if g.pci.vendor == "0x1002":
        rec = _amd(g, rec)
    return replace(rec, notes=tuple(dict.fromkeys(g.notes)))


def _amd(g: GpuFiles, rec: GpuHealth) -> GpuHealth:
    f = g.files
    dpm_max, _ = ph.dpm_pcie_max(f.get("pp_dpm_pcie"))
    clock, clock_max = ph.dpm_clock(f.get("pp_dpm_sclk"))
    busy = ph.integer(f.get("gpu_busy_percent"))
    ce: dict[str, int] = {}
    ue: dict[str, int] = {}
    retired = pending = None
    ras = g.listings.get("ras")
    if ras is None:
        g.notes.append("no ras/ folder: the driver reports no ECC counts for this GPU (a consumer GPU, "
                       "or RAS disabled with amdgpu.ras_enable=0)")
    else:
        for name in sorted(n for n in f if n.startswith("ras/") and n.endswith("_err_count")):
            counts = _checked(g, name, ph.ras_counts)
            if f.get(name) is None:
                g.notes.append(f"{name}: listed but could not be read")
            elif isinstance(counts, tuple):
                block = name[len("ras/"):-len("_err_count")]
                ue[block], ce[block] = counts
        bp_text = f.get("ras/gpu_vram_bad_pages")
        bp = ph.bad_pages(bp_text)
        if bp is not None:
            retired, pending = bp.reserved + bp.failed, bp.pending > 0
            if bp.unreadable_lines:
                g.notes.append(f"ras/gpu_vram_bad_pages: {bp.unreadable_lines} line(s) not a page entry "
                               "(cut short?): the count may be low")
        elif bp_text is not None:
            g.notes.append("ras/gpu_vram_bad_pages: binary content")
    temps: dict[str, float] = {}
    limits: dict[str, float] = {}
    cap = cap_default = cap_max = None
    for mon in (m for m in g.listings.get("hwmon") or () if m.startswith("hwmon")):
        pre = f"hwmon/{mon}/"
        if (ph.clean(f.get(pre + "name")) or "") != "amdgpu":
            continue
        cap = ph.micro_watts(f.get(pre + "power1_cap"))
        cap_default = ph.micro_watts(f.get(pre + "power1_cap_default"))
        cap_max = ph.micro_watts(f.get(pre + "power1_cap_max"))
        for n in range(1, 10):
            v = ph.milli_degrees(f.get(f"{pre}temp{n}_input"))
            if v is None:
                continue
            label = ph.clean(f.get(f"{pre}temp{n}_label")) or f"temp{n}"
            temps[label] = v
            crit = ph.milli_degrees(f.get(f"{pre}temp{n}_crit"))
            if crit is not None and crit > 0:
                limits[label] = crit
        if clock is None:
            hz = ph.integer(f.get(pre + "freq1_input"))
            clock = hz // 1_000_000 if hz else None
    firmware = {
        name[len("fw_version/"):-len("_fw_version")]: fw
        for name in f if name.startswith("fw_version/") and (fw := ph.clean(f.get(name)) or "")
    }
    hive = ph.clean(f.get("xgmi_hive_info/xgmi_hive_id"))
    members = [n for n in g.listings.get("xgmi_hive_info") or () if re.fullmatch(r"node\d+", n)]
    return replace(
        rec,
        link_speed_dpm_max_gts=dpm_max,
        idle=None if busy is None else busy == 0,
        ecc_correctable=ce,
        ecc_uncorrectable=ue,
        retired_pages=retired,
        pending_retirement=pending,
        power_cap_w=cap,
        power_cap_default_w=cap_default,
        power_cap_max_w=cap_max,
        temperatures_c=temps,
        temperature_limits_c=limits,
        clock_mhz=clock,
        clock_max_mhz=clock_max,
        vbios=ph.clean(f.get("vbios_version")) or None,
        firmware=dict(sorted(firmware.items())),
        hive_id=hive if hive and hive != "0" else None,
        hive_size=len(members) or None,
        xgmi_links=ph.xgmi_links(f.get("xgmi_num_links")) or (),
    )


def _tool_note(results: Results, name: str, tool: str, problems: list[Problem]) -> str | None:
    res = output(results, name)
    if res is None:
        return None
    p = tool_problem(res, tool, hint=f"hardware facts from {tool} are missing; the kernel's files still count")
    if p is not None:
        problems.append(replace(p, severity="info"))
        return None
    return res.stdout


def _merge_nvidia(records: dict[str, GpuHealth], results: Results, problems: list[Problem]) -> None:
    text = _tool_note(results, "nvidia-smi-q.xml", "nvidia-smi", problems)
    if text is None:
        return
    report = ph.parse_nvidia_xml(text)
    if report.problem:
        problems.append(Problem(source="nvidia-smi", message=report.problem, severity="info",
                                hint="run `nvidia-smi -q -x` yourself"))
    for n in report.gpus:
        rec = records.get(n.bus_id) or GpuHealth(pci_bus_id=n.bus_id, vendor="nvidia")
        gen = PCIE_GEN_GTS.get(n.link_gen or 0)
        records[n.bus_id] = replace(
            rec,
            sources=tuple(dict.fromkeys((*rec.sources, "nvidia-smi"))),
            link_speed_gts=rec.link_speed_gts if rec.link_speed_gts is not None else gen,
            link_speed_max_gts=rec.link_speed_max_gts
            if rec.link_speed_max_gts is not None
            else PCIE_GEN_GTS.get(n.link_gen_device_max or n.link_gen_max or 0),
            upstream_speed_max_gts=rec.upstream_speed_max_gts
            if rec.upstream_speed_max_gts is not None
            else PCIE_GEN_GTS.get(n.link_gen_host_max or 0),
            link_width=rec.link_width if rec.link_width is not None else n.link_width,
            link_width_max=rec.link_width_max if rec.link_width_max is not None else n.link_width_max,
            idle=n.idle,
            ecc_correctable=n.ecc_correctable,
            ecc_uncorrectable=n.ecc_uncorrectable,
            retired_pages=n.retired_pages,
            pending_retirement=bool(n.pending_retirement or n.remap_pending) if (
                n.pending_retirement is not None or n.remap_pending is not None) else None,
            remapped_rows_uncorrectable=n.remapped_unc,
            remapped_rows_correctable=n.remapped_corr,
            remap_failure=n.remap_failure,
            power_cap_w=n.power_cap_w,
            power_cap_default_w=n.power_cap_default_w,
            power_cap_max_w=n.power_cap_max_w,
            temperatures_c=n.temperatures_c,
            temperature_limits_c=n.temperature_limits_c,
            clock_mhz=n.clock_mhz,
            clock_max_mhz=n.clock_max_mhz,
            throttle=n.throttle,
            vbios=n.vbios,
            firmware=n.firmware,
            nvlink_up=n.nvlink_up,
            nvlink_total=n.nvlink_total,
        )


def _merge_amd_smi(records: dict[str, GpuHealth], results: Results, problems: list[Problem]) -> None:
    text = _tool_note(results, "amd-smi-metric.json", "amd-smi", problems)
    if text is None:
        return
    # amd-smi metric names GPUs by index; amd-smi static gives each index's bus id.
    by_index: dict[int, str] = {}
    static = output(results, "amd-smi-static.json")
    if static is not None and static.ok:
        from rocmkit.parsers.amd_smi import parse_static_json

        for seen in parse_static_json(static.stdout).gpus:
            if seen.ordinal is not None and seen.pci_bus_id:
                by_index[seen.ordinal] = seen.pci_bus_id.lower()
    amd = sorted(k for k, r in records.items() if r.vendor == "amd")
    for m in ph.parse_amd_smi_metric(text):
        key = m.bus_id or (by_index.get(m.gpu) if m.gpu is not None else None)
        if key is None and m.gpu is not None and m.gpu < len(amd):
            key = amd[m.gpu]  # amd-smi numbers GPUs in bus order
        if key is None:
            continue
        rec = records.get(key) or GpuHealth(pci_bus_id=key, vendor="amd")
        # sysfs first: amd-smi fills only what the kernel's files did not show.
        records[key] = replace(
            rec,
            sources=tuple(dict.fromkeys((*rec.sources, "amd-smi"))),
            ecc_uncorrectable=rec.ecc_uncorrectable or m.ecc_uncorrectable,
            ecc_correctable=rec.ecc_correctable or m.ecc_correctable,
            temperatures_c=rec.temperatures_c or m.temperatures_c,
            throttle=rec.throttle or m.throttle,
            link_speed_gts=rec.link_speed_gts if rec.link_speed_gts is not None else m.link_speed_gts,
            link_width=rec.link_width if rec.link_width is not None else m.link_width,
        )


def _merge_rocm_smi(records: dict[str, GpuHealth], results: Results) -> None:
    """rocm-smi's JSON (detection already runs it): third, for what neither sysfs nor amd-smi showed."""
    res = output(results, "rocm-smi.json")
    if res is None or not res.ok:
        return
    for r in ph.parse_rocm_smi_json(res.stdout):
        rec = records.get(r.bus_id) or GpuHealth(pci_bus_id=r.bus_id, vendor="amd")
        found = (r.vbios, r.power_cap_w, r.link_width, r.clock_mhz) != (None, None, None, None) or r.temperatures_c
        if not found:
            continue
        records[r.bus_id] = replace(
            rec,
            sources=tuple(dict.fromkeys((*rec.sources, "rocm-smi"))),
            vbios=rec.vbios or r.vbios,
            firmware=rec.firmware or r.firmware,
            power_cap_w=rec.power_cap_w if rec.power_cap_w is not None else r.power_cap_w,
            temperatures_c=rec.temperatures_c or r.temperatures_c,
            link_speed_gts=rec.link_speed_gts if rec.link_speed_gts is not None else r.link_speed_gts,
            link_width=rec.link_width if rec.link_width is not None else r.link_width,
            clock_mhz=rec.clock_mhz if rec.clock_mhz is not None else r.clock_mhz,
            idle=rec.idle if rec.idle is not None else r.idle,
        )


def _nvidia_buses(results: Results) -> dict[int, str]:
    """nvidia-smi's GPU index -> bus id, from the query CSV or the table detection ran."""
    from rocmkit.parsers import nvidia_smi

    buses: dict[int, str] = {}
    for name, parse in (("nvidia-smi-query.csv", nvidia_smi.parse_query_csv), ("nvidia-smi.txt", nvidia_smi.parse_table)):
        res = output(results, name)
        if res is None or not res.ok:
            continue
        for rec in parse(res.stdout).gpus:
            bid = ph.bus_id(rec.pci_bus_id or "")
            if rec.ordinal is not None and bid:
                buses.setdefault(rec.ordinal, ph.short_domain(bid))
    return buses


def _merge_nvlink(records: dict[str, GpuHealth], results: Results, problems: list[Problem]) -> None:
    res = output(results, "nvidia-smi-nvlink.txt")
    if res is None:
        return
    if res.status in ("timeout", "signal"):
        _tool_note(results, "nvidia-smi-nvlink.txt", "nvidia-smi", problems)
        return
    # A GPU without NVLink makes `nvidia-smi nvlink -s` print nothing or fail: not a problem.
    text = res.stdout
    buses = _nvidia_buses(results)
    for index, (up, total) in ph.parse_nvlink_status(text).items():
        bus = buses.get(index)
        if bus is None:
            continue
        rec = records.get(bus) or GpuHealth(pci_bus_id=bus, vendor="nvidia")
        records[bus] = replace(rec, sources=tuple(dict.fromkeys((*rec.sources, "nvidia-smi"))),
                               nvlink_up=up, nvlink_total=total)
