"""Hardware health: the kernel's per-GPU files and the vendor tools' reports, as pure functions.

Every function takes the text as read (``None`` when the file is absent) and returns a value
or None; none raises. The formats, with their sources, are in docs/hardware.md:

- PCIe link files (Documentation/ABI/testing/sysfs-bus-pci): ``current_link_speed`` is
  "16.0 GT/s PCIe" (older kernels "8 GT/s", "Unknown"), ``current_link_width`` "16";
- amdgpu RAS (amdgpu_ras.c, "AMDGPU RAS sysfs Error Count Interface"): ``ras/<block>_err_count``
  is "ue: 0\\nce: 0\\n" (UMC adds "de: 0"), ``ras/gpu_vram_bad_pages`` one line per page,
  "0x00000001 : 0x00001000 : R" (R reserved, P pending, F failed to reserve);
- hwmon (Documentation/hwmon/sysfs-interface): ``power1_cap`` in microwatts, ``temp1_input`` in
  millidegrees, ``freq1_input`` in Hz;
- amdgpu power management: ``pp_dpm_sclk`` / ``pp_dpm_pcie`` one level a line, "*" marking the
  current one ("2: 16.0GT/s, x16 619Mhz *");
- XGMI (amdgpu_xgmi.c): ``xgmi_num_links`` one "%02x " per hive member.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A sysfs attribute is at most a page; a longer one is not the file its name says.
SMALL_FILE = 4096
# gpu_vram_bad_pages is one ~30-byte line a page; AMD's EEPROM holds a few thousand.
BAD_PAGES_MAX_LINES = 100_000

_SPEED = re.compile(r"^\s*(\d{1,3}(?:\.\d{1,2})?)\s*GT/s(?:\s+PCIe)?\s*$")
_WIDTH = re.compile(r"^\s*x?(\d{1,2})x?\s*$")
_RAS_LINE = re.compile(r"^(ue|ce|de):\s*(\d{1,18})$")
_BAD_PAGE = re.compile(r"^\s*0x[0-9a-fA-F]+\s*:\s*0x[0-9a-fA-F]+\s*:\s*([RPF])\s*$")
_DPM_PCIE = re.compile(r"^\s*\d+:\s*(\d{1,3}(?:\.\d{1,2})?)GT/s,?\s*x?(\d{1,2})\b.*?(\*)?\s*$")
_DPM_CLOCK = re.compile(r"^\s*\d+:\s*(\d{1,6})\s*Mhz\s*(\*)?\s*$", re.I)
_BDF = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def clean(text: str | None, limit: int = SMALL_FILE) -> str | None:
    """The text of a small attribute file, or None when it is absent, too long or binary."""
    if text is None or len(text) > limit or "\x00" in text or "\ufffd" in text:
        return None
    return text.strip()


def why_unreadable(text: str | None, limit: int = SMALL_FILE) -> str | None:
    """Why ``clean`` refused a present file (for a note), or None when it is fine or absent."""
    if text is None:
        return None
    if len(text) > limit:
        return f"{len(text)} bytes, more than a sysfs attribute holds ({limit})"
    if "\x00" in text or "\ufffd" in text:
        return "binary content"
    return None


def link_speed(text: str | None) -> float | None:
    """ "16.0 GT/s PCIe", "8 GT/s", "8.0 GT/s" -> GT/s; "Unknown" or anything else -> None."""
    t = clean(text)
    m = _SPEED.match(t) if t else None
    return float(m.group(1)) if m else None


def link_width(text: str | None) -> int | None:
    t = clean(text)
    m = _WIDTH.match(t) if t else None
    n = int(m.group(1)) if m else 0
    return n if n in (1, 2, 4, 8, 12, 16, 32) else None


def integer(text: str | None) -> int | None:
    t = clean(text)
    if not t:
        return None
    neg = t.startswith("-")
    body = t[1:] if neg else t
    if not (body.isascii() and body.isdigit() and len(body) <= 18):
        return None
    return -int(body) if neg else int(body)


def ras_counts(text: str | None) -> tuple[int, int] | None:
    """``ras/<block>_err_count``: (uncorrectable, correctable); a deferred count ("de") counts
    as uncorrectable, as amdgpu's poison handling treats it. None when the format is not that."""
    t = clean(text)
    if not t:
        return None
    found: dict[str, int] = {}
    for line in t.splitlines():
        m = _RAS_LINE.match(line.strip())
        if not m:
            return None
        found[m.group(1)] = int(m.group(2))
    if "ue" not in found or "ce" not in found:
        return None
    return found["ue"] + found.get("de", 0), found["ce"]


@dataclass(frozen=True)
class BadPages:
    reserved: int = 0  # retired: the driver keeps them out of use
    pending: int = 0  # found, retired at the next reset
    failed: int = 0  # could not be reserved (in use)
    unreadable_lines: int = 0


def bad_pages(text: str | None) -> BadPages | None:
    """``ras/gpu_vram_bad_pages``: counts by flag. Lines that are not a page entry are counted
    apart (a cut-off last line); None when the file is absent or binary."""
    if text is None or "\x00" in text:
        return None
    counts = {"R": 0, "P": 0, "F": 0}
    bad = 0
    for n, line in enumerate(text.splitlines()):
        if n >= BAD_PAGES_MAX_LINES:
            bad += 1
            break
        if not line.strip():
            continue
        m = _BAD_PAGE.match(line)
        if m:
            counts[m.group(1)] += 1
        else:
            bad += 1
    return BadPages(reserved=counts["R"], pending=counts["P"], failed=counts["F"], unreadable_lines=bad)


def dpm_pcie_max(text: str | None) -> tuple[float | None, bool]:
    """``pp_dpm_pcie``: (the top level's speed in GT/s, whether any line parsed)."""
    t = clean(text)
    speeds = []
    for line in (t or "").splitlines():
        m = _DPM_PCIE.match(line)
        if m:
            speeds.append(float(m.group(1)))
    return (max(speeds) if speeds else None), bool(speeds)


def dpm_clock(text: str | None) -> tuple[int | None, int | None]:
    """``pp_dpm_sclk``: (the current level's MHz, the top level's MHz)."""
    t = clean(text)
    current = top = None
    for line in (t or "").splitlines():
        m = _DPM_CLOCK.match(line)
        if not m:
            continue
        mhz = int(m.group(1))
        top = mhz if top is None else max(top, mhz)
        if m.group(2):
            current = mhz
    return current, top


def xgmi_links(text: str | None) -> tuple[int, ...] | None:
    """``xgmi_num_links``: "00 01 01 ..." (hex, one per hive member) -> (0, 1, 1, ...)."""
    t = clean(text)
    if not t:
        return None
    out = []
    for tok in t.split():
        if not re.fullmatch(r"[0-9a-fA-F]{1,2}", tok):
            return None
        out.append(int(tok, 16))
    return tuple(out) or None


def micro_watts(text: str | None) -> float | None:
    n = integer(text)
    return round(n / 1e6, 1) if n is not None and 0 < n < 10**10 else None


def milli_degrees(text: str | None) -> float | None:
    n = integer(text)
    return round(n / 1000, 1) if n is not None and -300_000 < n < 300_000 else None


def bus_id(text: str | None) -> str | None:
    t = (text or "").strip()
    return t.lower() if _BDF.match(t) else None


@dataclass(frozen=True)
class PciGpu:
    """One line of the ``pci-gpus.txt`` pseudo-command (docs/captures.md)."""

    bus_id: str
    vendor: str | None = None  # "0x1002"
    device: str | None = None
    pci_class: str | None = None  # "0x120000"
    upstream: str | None = None  # the parent bridge's bus id; None at a root complex
    slot: str | None = None  # the physical slot's name, where the firmware gives one


def pci_gpus(text: str | None) -> list[PciGpu]:
    """``0000:03:00.0 vendor=0x1002 device=0x74a1 class=0x120000 upstream=0000:02:00.0``, one a line."""
    out: list[PciGpu] = []
    for line in (text or "").splitlines()[:1024]:
        parts = line.split()
        if not parts or bus_id(parts[0]) is None:
            continue
        kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        up = bus_id(kv.get("upstream"))
        out.append(
            PciGpu(
                bus_id=parts[0].lower(),
                vendor=kv.get("vendor"),
                device=kv.get("device"),
                pci_class=kv.get("class"),
                upstream=up,
                slot=kv.get("slot") or None,
            )
        )
    return out


# ---- NVIDIA: nvidia-smi -q -x ----------------------------------------------------------------

# Throttle ("clocks_throttle_reason_*", "clocks_event_reason_*" since driver 535) reasons that
# are not a fault: idle, a setting the admin chose, display clocks, sync boost.
NVIDIA_BENIGN_REASONS = frozenset(
    {"gpu_idle", "applications_clocks_setting", "display_clocks_setting", "sync_boost"}
)


@dataclass
class NvidiaGpuHealth:
    bus_id: str
    link_gen: int | None = None
    link_gen_max: int | None = None  # max_link_gen: the lower of the GPU's and the host's
    link_gen_device_max: int | None = None
    link_gen_host_max: int | None = None
    link_width: int | None = None
    link_width_max: int | None = None
    ecc_correctable: dict[str, int] = field(default_factory=dict)
    ecc_uncorrectable: dict[str, int] = field(default_factory=dict)
    retired_pages: int | None = None
    pending_retirement: bool | None = None
    remapped_unc: int | None = None
    remapped_corr: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    power_cap_w: float | None = None
    power_cap_default_w: float | None = None
    power_cap_max_w: float | None = None
    temperatures_c: dict[str, float] = field(default_factory=dict)
    temperature_limits_c: dict[str, float] = field(default_factory=dict)
    clock_mhz: int | None = None
    clock_max_mhz: int | None = None
    throttle: tuple[str, ...] = ()
    idle: bool | None = None
    vbios: str | None = None
    firmware: dict[str, str] = field(default_factory=dict)
    nvlink_up: int | None = None
    nvlink_total: int | None = None


@dataclass
class NvidiaHealthReport:
    gpus: list[NvidiaGpuHealth] = field(default_factory=list)
    problem: str | None = None  # why nothing could be read


_NUM = re.compile(r"^\s*(-?\d{1,9}(?:\.\d{1,3})?)\s*([A-Za-z%]*)\s*$")


def _num(text: str | None) -> float | None:
    m = _NUM.match(text or "")
    return float(m.group(1)) if m else None


def _yes(text: str | None) -> bool | None:
    t = (text or "").strip().lower()
    return True if t == "yes" else False if t == "no" else None


def parse_nvidia_xml(text: str) -> NvidiaHealthReport:
    """``nvidia-smi -q -x`` (schema nvsmi_device_v10..v13). Entity declarations are refused
    (expansion bombs); a document that does not parse is one problem, not an exception."""
    import xml.etree.ElementTree as ET

    if not text.strip():
        return NvidiaHealthReport(problem="nvidia-smi -q -x printed nothing")
    if "<!ENTITY" in text:
        return NvidiaHealthReport(problem="nvidia-smi -q -x output declares XML entities: refused")
    start = text.find("<?xml")
    body = text[start:] if start > 0 else text
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        return NvidiaHealthReport(problem=f"nvidia-smi -q -x output is not complete XML ({exc})")
    report = NvidiaHealthReport()
    for g in root.findall("gpu")[:64]:
        bid = bus_id((g.get("id") or "").lower())
        if bid is None:
            continue
        h = NvidiaGpuHealth(bus_id=short_domain(bid))

        def t(path: str, node: ET.Element = g) -> str | None:
            e = node.find(path)
            return e.text.strip() if e is not None and e.text else None

        def n(path: str, node: ET.Element = g) -> float | None:
            return _num(t(path, node))

        link = "pci/pci_gpu_link_info/"
        h.link_gen = _int(n(link + "pcie_gen/current_link_gen"))
        h.link_gen_max = _int(n(link + "pcie_gen/max_link_gen"))
        h.link_gen_device_max = _int(n(link + "pcie_gen/max_device_link_gen"))
        h.link_gen_host_max = _int(n(link + "pcie_gen/max_host_link_gen"))
        h.link_width = link_width(t(link + "link_widths/current_link_width"))
        h.link_width_max = link_width(t(link + "link_widths/max_link_width"))
        for scope, suffix in (("volatile", ""), ("aggregate", "_lifetime")):
            node = g.find(f"ecc_errors/{scope}")
            if node is None:
                continue
            for child in node:
                v = _num(child.text)
                if v is None:
                    continue
                tag = child.tag
                if tag.endswith("_correctable") or tag in ("single_bit",):
                    h.ecc_correctable[tag.removesuffix("_correctable") + suffix] = int(v)
                elif "_uncorrectable" in tag:
                    key = tag.split("_uncorrectable")[0] + tag.split("_uncorrectable")[1]
                    h.ecc_uncorrectable[key + suffix] = int(v)
        retired = [n(f"retired_pages/{k}/retired_count") for k in
                   ("multiple_single_bit_retirement", "double_bit_retirement")]
        if any(r is not None for r in retired):
            h.retired_pages = int(sum(r for r in retired if r is not None))
        pend = t("retired_pages/pending_retirement") or t("retired_pages/pending_blacklist")
        h.pending_retirement = _yes(pend)
        rr = g.find("remapped_rows")
        if rr is not None and rr.find("remapped_row_failure") is not None:
            h.remapped_unc = _int(n("remapped_row_unc", rr))
            h.remapped_corr = _int(n("remapped_row_corr", rr))
            h.remap_pending = _yes(t("remapped_row_pending", rr))
            h.remap_failure = _yes(t("remapped_row_failure", rr))
        pw = "gpu_power_readings/" if g.find("gpu_power_readings") is not None else "power_readings/"
        h.power_cap_w = n(pw + "current_power_limit") or n(pw + "enforced_power_limit") or n(pw + "power_limit")
        h.power_cap_default_w = n(pw + "default_power_limit")
        h.power_cap_max_w = n(pw + "max_power_limit")
        for tag, name in (("temperature/gpu_temp", "gpu"), ("temperature/memory_temp", "memory")):
            v = n(tag)
            if v is not None:
                h.temperatures_c[name] = v
        for tag, name in (
            ("temperature/gpu_temp_slow_threshold", "gpu"),
            ("temperature/gpu_temp_max_mem_threshold", "memory"),
        ):
            v = n(tag)
            if v is not None and v > 0:
                h.temperature_limits_c[name] = v
        h.clock_mhz = _int(n("clocks/graphics_clock"))
        h.clock_max_mhz = _int(n("max_clocks/graphics_clock"))
        reasons = g.find("clocks_event_reasons")
        if reasons is None:
            reasons = g.find("clocks_throttle_reasons")
        active: list[str] = []
        if reasons is not None:
            for child in reasons:
                name = re.sub(r"^clocks_(?:event|throttle)_reason_", "", child.tag)
                if (child.text or "").strip() == "Active":
                    active.append(name)
            h.idle = "gpu_idle" in active
        h.throttle = tuple(a for a in active if a not in NVIDIA_BENIGN_REASONS)
        h.vbios = t("vbios_version")
        for tag, name in (("inforom_version/img_version", "inforom"), ("gsp_firmware_version", "gsp")):
            fw = t(tag)
            if fw and fw != "N/A":
                h.firmware[name] = fw
        links = g.findall("nvlink/link") or g.findall("nvlinks/nvlink")
        if links:
            states = [(t("state", e) or t("link_state", e) or "").lower() for e in links]
            h.nvlink_total = len(states)
            h.nvlink_up = sum(1 for s in states if s in ("active", "up"))
        report.gpus.append(h)
    if not report.gpus:
        report.problem = "nvidia-smi -q -x lists no GPU"
    return report


def _int(v: float | None) -> int | None:
    return None if v is None else int(v)


def short_domain(bid: str) -> str:
    """nvidia-smi's "00000000:01:00.0" -> the kernel's "0000:01:00.0"."""
    dom, rest = bid.split(":", 1)
    return f"{int(dom, 16):04x}:{rest}"


_NVLINK_GPU = re.compile(r"^GPU (\d{1,3}):")
_NVLINK_LINK = re.compile(r"^\s+Link (\d{1,2}):\s*(.*?)\s*$")


def parse_nvlink_status(text: str) -> dict[int, tuple[int, int]]:
    """``nvidia-smi nvlink -s``: GPU index -> (links up, links listed). A link is up when it shows a
    speed ("26.562 GB/s") above 0; "<inactive>" and "0 GB/s" are down."""
    out: dict[int, list[bool]] = {}
    current: int | None = None
    for line in text.splitlines()[:4096]:
        g = _NVLINK_GPU.match(line)
        if g:
            current = int(g.group(1))
            out.setdefault(current, [])
            continue
        m = _NVLINK_LINK.match(line)
        if m and current is not None:
            speed = _num(m.group(2).removesuffix("GB/s"))
            out[current].append(speed is not None and speed > 0)
    return {i: (sum(links), len(links)) for i, links in out.items() if links}


# ---- AMD: amd-smi metric --json (second source) ------------------------------------------------


@dataclass
class AmdMetric:
    bus_id: str | None
    gpu: int | None
    ecc_correctable: dict[str, int] = field(default_factory=dict)  # block ("umc") or "total" -> count
    ecc_uncorrectable: dict[str, int] = field(default_factory=dict)  # deferred counted in, as in sysfs
    temperatures_c: dict[str, float] = field(default_factory=dict)  # "edge", "hotspot", "mem"
    throttle: tuple[str, ...] = ()
    link_speed_gts: float | None = None
    link_width: int | None = None


def _value(v: object) -> float | None:
    """amd-smi prints numbers bare or as {"value": N, "unit": "W"}; "N/A" is None."""
    if isinstance(v, dict):
        v = v.get("value")
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        return _num(v.split()[0] if v.split() else v)
    return None


def parse_amd_smi_metric(text: str) -> list[AmdMetric]:
    """``amd-smi metric --json`` (amdsmi_cli's metric command): ``{"gpu_data": [...]}`` or a bare
    list, one entry per GPU with ``gpu`` (its index), ``ecc`` (``total_correctable_count``,
    ``total_uncorrectable_count``, ``total_deferred_count``), ``ecc_blocks`` (``UMC``:
    ``correctable_count``, ``uncorrectable_count``, ``deferred_count``, ...), ``temperature``
    (``edge``/``hotspot``/``mem`` as ``{"value", "unit"}``), ``power.throttle_status``
    ("THROTTLED"/"UNTHROTTLED"), ``pcie`` (``width``, ``speed`` in GT/s). "N/A" is unknown."""
    from rocmkit.parsers.amd_smi import _first_json, _gpu_entries, _section
    from rocmkit.parsers.records import strip_ansi

    entries = _gpu_entries(_first_json(strip_ansi(text)))
    out = []
    for entry in entries[:64]:
        gpu = entry.get("gpu")
        idx = int(gpu) if isinstance(gpu, int) and not isinstance(gpu, bool) else None
        ecc, power, pcie, temp = (_section(entry, k) for k in ("ecc", "power", "pcie", "temperature"))
        ce: dict[str, int] = {}
        ue: dict[str, int] = {}
        for block, counts in _section(entry, "ecc_blocks").items():
            if not isinstance(counts, dict):
                continue
            c, u, d = (_int(_value(counts.get(k))) for k in ("correctable_count", "uncorrectable_count",
                                                              "deferred_count"))
            if c is not None:
                ce[str(block).lower()] = c
            if u is not None:
                ue[str(block).lower()] = u + (d or 0)
        if not ce and not ue:
            c = _int(_value(ecc.get("total_correctable_count")))
            u = _int(_value(ecc.get("total_uncorrectable_count")))
            d = _int(_value(ecc.get("total_deferred_count")))
            if c is not None:
                ce["total"] = c
            if u is not None:
                ue["total"] = u + (d or 0)
        temps = {str(k): v for k, raw in temp.items() if (v := _value(raw)) is not None}
        status = power.get("throttle_status")
        speed = _value(pcie.get("speed"))
        out.append(
            AmdMetric(
                bus_id=bus_id(str(entry.get("bdf") or "")) or None,
                gpu=idx,
                ecc_correctable=ce,
                ecc_uncorrectable=ue,
                temperatures_c=temps,
                throttle=("throttle_status",) if isinstance(status, str) and status.upper() == "THROTTLED" else (),
                # amd-smi prints GT/s ("32"); older releases printed MT/s ("32000")
                link_speed_gts=(speed / 1000 if speed and speed > 100 else speed),
                link_width=_int(_value(pcie.get("width"))),
            )
        )
    return out


# ---- AMD: rocm-smi --json (the older tool; --showallinfo's fields, where present) ----------------

_ROCM_SMI_TEMP = re.compile(r"^Temperature \(Sensor (\w+)\) \(C\)$")
_ROCM_SMI_PCIE = re.compile(r"^\s*\d+\s*\(\s*(\d{1,3}(?:\.\d{1,2})?)GT/s,?\s*x(\d{1,2})\s*\)")
_ROCM_SMI_MHZ = re.compile(r"^\s*\(?\s*(\d{1,6})\s*Mhz\s*\)?\s*$", re.I)


@dataclass
class RocmSmiHealth:
    bus_id: str
    vbios: str | None = None
    power_cap_w: float | None = None
    temperatures_c: dict[str, float] = field(default_factory=dict)
    link_speed_gts: float | None = None
    link_width: int | None = None
    clock_mhz: int | None = None
    idle: bool | None = None
    firmware: dict[str, str] = field(default_factory=dict)


def parse_rocm_smi_json(text: str) -> list[RocmSmiHealth]:
    """``rocm-smi ... --json`` (``{"card0": {...}, "system": {...}}``): the hardware fields that
    ``--showallinfo`` adds, where the output has them: "VBIOS version", "Temperature (Sensor
    junction) (C)", "Max Graphics Package Power (W)" (the power cap), "pcie clock level"
    ("0 (16.0GT/s x16)", the link's current DPM level), "sclk clock speed:" ("(300Mhz)"),
    "GPU use (%)", "<NAME> firmware version". Cards without "PCI Bus" are left out."""
    from rocmkit.parsers.amd_smi import _first_json
    from rocmkit.parsers.records import strip_ansi

    data = _first_json(strip_ansi(text))
    if not isinstance(data, dict):
        return []
    out = []
    for key, card in list(data.items())[:64]:
        if not (isinstance(key, str) and key.startswith("card") and isinstance(card, dict)):
            continue
        bid = bus_id(str(card.get("PCI Bus") or ""))
        if bid is None:
            continue
        h = RocmSmiHealth(bus_id=bid)
        for name, raw in card.items():
            if not isinstance(raw, str) or not isinstance(name, str):
                continue
            t = _ROCM_SMI_TEMP.match(name)
            if t and (v := _num(raw)) is not None:
                h.temperatures_c[t.group(1)] = v
            elif name.endswith(" firmware version") and raw.strip() not in ("", "N/A"):
                h.firmware[name.removesuffix(" firmware version").lower().replace(" ", "_")] = raw.strip()
        vb = card.get("VBIOS version")
        h.vbios = vb.strip() if isinstance(vb, str) and vb.strip() not in ("", "N/A") else None
        cap = card.get("Max Graphics Package Power (W)")
        h.power_cap_w = _num(cap) if isinstance(cap, str) else None
        pcie = card.get("pcie clock level")
        m = _ROCM_SMI_PCIE.match(pcie) if isinstance(pcie, str) else None
        if m:
            h.link_speed_gts, h.link_width = float(m.group(1)), link_width(m.group(2))
        sclk = card.get("sclk clock speed:")
        mhz = _ROCM_SMI_MHZ.match(sclk) if isinstance(sclk, str) else None
        h.clock_mhz = int(mhz.group(1)) if mhz else None
        use = card.get("GPU use (%)")
        busy = _num(use) if isinstance(use, str) else None
        h.idle = None if busy is None else busy == 0
        out.append(h)
    return out
