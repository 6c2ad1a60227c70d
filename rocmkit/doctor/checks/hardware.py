"""``hw.*`` (level 0): hardware health from the facts detection read (``Machine.health``).

Each check judges one family of facts per GPU (docs/hardware.md: what it reads, its
threshold and where the threshold comes from, and which RVS module or DCGM test it stands in
for). A fact that could not be read is never a pass: a GPU without it is reported as
unknown, and a check where no GPU shows the fact is a skip that says why.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.machine import GpuHealth, Machine
from rocmkit.parsers.records import bus_key

MIB = 1024 * 1024
# NVIDIA: DCGM fails a GPU at 63 retired pages (DCGM_LIMIT_MAX_RETIRED_PAGES, dcgm
# GpuHardwareLimits.h) and warns at 15 (its soft limit).
NVIDIA_RETIRED_FAIL = 63
NVIDIA_RETIRED_WARN = 15
# AMD: amdgpu's own rule, "typical ECC bad page rate is 1 bad page per 100MB VRAM"
# (RAS_BAD_PAGE_COVER in amdgpu_ras.c); the driver stops using a GPU past its threshold.
AMD_BAD_PAGE_COVER = 100 * MIB
# rocmkit's own rules (docs/hardware.md says so).
CORRECTABLE_WARN = 1000
TEMP_MARGIN_C = 5


def gpus_checked(m: Machine) -> list[tuple[str, GpuHealth]]:
    """The health records to judge, each with a label: hidden GPUs (``*_VISIBLE_DEVICES``) are
    left out; a record no GPU listing matched is judged too (its bus id names it)."""
    by_bus = {bus_key(g.pci_bus_id): g for g in m.gpus if g.pci_bus_id}
    out = []
    for h in m.health:
        g = by_bus.get(bus_key(h.pci_bus_id))
        if g is not None and not g.visible:
            continue
        label = f"GPU {g.index} ({h.pci_bus_id})" if g is not None else f"GPU {h.pci_bus_id}"
        out.append((label, h))
    return out


def _memory(m: Machine, h: GpuHealth) -> int | None:
    for g in m.gpus:
        if g.pci_bus_id and bus_key(g.pci_bus_id) == bus_key(h.pci_bus_id):
            return g.memory_bytes
    return None


def _verdict(
    name: str,
    fails: list[str],
    warns: list[str],
    passes: list[str],
    unknown: list[str],
    remedies: Iterable[str],
    figures: list[Figure],
    m: Machine | None = None,
    note: str = "",
    **details: Any,
) -> CheckResult:
    remedy = " | ".join(dict.fromkeys(remedies)) or None
    if fails and m is not None:
        # The failing GPUs' bus ids, for the Slurm drain reason (`rocmkit: hw.ecc 46:00.0`).
        details["failed_gpus"] = [h.pci_bus_id for _, h in gpus_checked(m) if any(h.pci_bus_id in f for f in fails)]
    tail = (f"; not shown: {', '.join(unknown)}" if unknown else "") + (f" ({note})" if note else "")
    if fails:
        return result(Status.FAIL, "; ".join(fails + warns) + tail, remedy, figures=tuple(figures), **details)
    if warns:
        return result(Status.WARN, "; ".join(warns) + tail, remedy, figures=tuple(figures), **details)
    if not passes:
        why = f" ({'; '.join(unknown)})" if unknown else ""
        return result(Status.SKIP, f"no GPU shows its {name}{why}", **details)
    if len(passes) > 2:
        # One line for a healthy 8-GPU node: the first GPU's figures, the count for the rest.
        passes = [f"{len(passes)} GPUs fine, e.g. {passes[0]}"]
    return result(Status.PASS, "; ".join(passes) + tail, figures=tuple(figures), **details)


def _none_skip(ctx: CheckContext) -> CheckResult | None:
    if not ctx.machine.health:
        return result(Status.SKIP, "no GPU hardware facts were read (no AMD or NVIDIA GPU on the PCI bus, or a "
                      "capture without /sys/bus/pci/devices and nvidia-smi -q -x)")
    return None


def _gts(v: float | None) -> str:
    return "?" if v is None else f"{v:g} GT/s"


@check(
    "hw.pcie_link",
    level=0,
    description="Each GPU's PCIe link trained at its full width and speed (a x16 card at x8, a Gen5 card at "
    "Gen3 halves host transfers); the slot's own maximum bounds what is expected (RVS peqt, DCGM pcie)",
    options={
        "pcie_min_width": "lanes a link must have (default: the lower of the GPU's and the slot's maximum)",
        "pcie_min_gen": "PCIe generation a link must reach, 1-6 (default: the lower of the GPU's and the slot's)",
    },
    option_kinds={"pcie_min_width": "positive_int", "pcie_min_gen": "positive_int"},
)
def pcie_link(ctx: CheckContext) -> CheckResult:
    skip = _none_skip(ctx)
    if skip:
        return skip
    gen_gts = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
    want_w = ctx.options.get("pcie_min_width")
    want_g = ctx.options.get("pcie_min_gen")
    fails: list[str] = []
    warns: list[str] = []
    passes: list[str] = []
    unknown: list[str] = []
    remedies: list[str] = []
    figures: list[Figure] = []
    rows = []
    integrated = {bus_key(g.pci_bus_id) for g in ctx.machine.gpus if g.integrated and g.pci_bus_id}
    for label, h in gpus_checked(ctx.machine):
        if bus_key(h.pci_bus_id) in integrated:
            continue  # an APU's GPU sits on the chip: its "link" is internal, not a slot to fix
        if h.link_width is None or h.link_width_max is None:
            unknown.append(f"{label} link {'maximum ' if h.link_width is not None else ''}width")
            continue
        exp_w = min(x for x in (h.link_width_max, h.upstream_width_max) if x is not None)
        exp_s_opts = [x for x in (h.link_speed_max_gts, h.upstream_speed_max_gts) if x is not None]
        exp_s = min(exp_s_opts) if exp_s_opts else None
        if want_w is not None:
            exp_w = int(want_w)
        if want_g is not None:
            exp_s = gen_gts.get(int(want_g), exp_s)
        figures.append(Figure(name=f"{h.pci_bus_id}.pcie_width", value=h.link_width, unit="lanes",
                              reference=h.link_width_max))
        if h.link_speed_gts is not None:
            figures.append(Figure(name=f"{h.pci_bus_id}.pcie_speed", value=h.link_speed_gts, unit="GT/s",
                                  reference=h.link_speed_max_gts))
        rows.append({"gpu": h.pci_bus_id, "width": h.link_width, "width_max": h.link_width_max,
                     "speed_gts": h.link_speed_gts, "speed_max_gts": h.link_speed_max_gts,
                     "slot": h.slot, "bridge": h.upstream_bus_id, "slot_width_max": h.upstream_width_max,
                     "slot_speed_max_gts": h.upstream_speed_max_gts, "idle": h.idle})
        slot = (f"slot {h.slot}" if h.slot else "its slot") + (
            f" (bridge {h.upstream_bus_id})" if h.upstream_bus_id else "")
        here = f"x{h.link_width} {_gts(h.link_speed_gts)} (max x{h.link_width_max} {_gts(h.link_speed_max_gts)})"
        if h.link_width < exp_w:
            fails.append(f"{label}{f' in slot {h.slot}' if h.slot else ''} trained at x{h.link_width}, below x{exp_w}")
            remedies.append(
                f"reseat the GPU {h.pci_bus_id} or move it to a x16 slot; check {slot}: a riser or retimer, "
                "a BIOS setting that bifurcates the slot (x16 -> x8x8), or dirty contacts; "
                "`sudo lspci -vv -s " + h.pci_bus_id + " | grep -e LnkCap -e LnkSta` shows both ends"
            )
            continue
        if h.link_speed_gts is None or exp_s is None:
            unknown.append(f"{label} link speed")
            passes.append(f"{label} x{h.link_width}")
            continue
        if h.link_speed_gts < exp_s:
            dpm = h.link_speed_dpm_max_gts
            if dpm is not None and dpm >= exp_s:
                # amdgpu lowers an idle link's speed; its DPM table says the link can go back up.
                passes.append(f"{label} {here}, idle: its DPM reaches {_gts(dpm)}")
            elif dpm is not None:
                fails.append(f"{label} trained at {_gts(dpm)} at most (pp_dpm_pcie), below {_gts(exp_s)}")
                remedies.append(_speed_fix(h, slot))
            elif h.idle:
                warns.append(f"{label} at {_gts(h.link_speed_gts)} of {_gts(exp_s)} while idle (a GPU may lower "
                             "its link speed when idle): rerun under load to tell")
                remedies.append("rerun under load: `rocmkit doctor --level 3 --only hw.p2p_bandwidth` measures "
                                "host transfers against the trained link; if the speed stays low, " + _speed_fix(h, slot))
            else:
                fails.append(f"{label} at {_gts(h.link_speed_gts)}, below {_gts(exp_s)} while busy")
                remedies.append(_speed_fix(h, slot))
            continue
        passes.append(f"{label} {here}")
    return _verdict("PCIe link", fails, warns, passes, unknown, remedies, figures, ctx.machine, links=rows)


def _speed_fix(h: GpuHealth, slot: str) -> str:
    return (f"set the slot's PCIe speed to Auto/Gen5 in the BIOS (not Gen3/Gen4), update the BIOS, and check "
            f"{slot}: a riser or cable rated for a lower generation trains the link down (GPU {h.pci_bus_id})")


@check(
    "hw.ecc",
    level=0,
    description="No uncorrectable memory errors, retired pages under the vendor's threshold, no failed "
    "NVIDIA row remapping; correctable counts reported, warned above a threshold (RVS gst/mem, DCGM memory)",
    options={
        "ecc_correctable_warn": f"correctable errors on one GPU above which to warn (default {CORRECTABLE_WARN})",
        "ecc_retired_pages_max": "retired pages at which a GPU fails (default: NVIDIA 63 as DCGM, AMD one per "
        "100 MiB of VRAM as amdgpu)",
    },
    option_kinds={"ecc_correctable_warn": "positive_int", "ecc_retired_pages_max": "positive_int"},
)
def ecc(ctx: CheckContext) -> CheckResult:
    skip = _none_skip(ctx)
    if skip:
        return skip
    ce_warn = int(ctx.options.get("ecc_correctable_warn", CORRECTABLE_WARN))
    fails: list[str] = []
    warns: list[str] = []
    passes: list[str] = []
    unknown: list[str] = []
    remedies: list[str] = []
    figures: list[Figure] = []
    rows = []
    for label, h in gpus_checked(ctx.machine):
        ue = {k: v for k, v in h.ecc_uncorrectable.items() if not k.endswith("_lifetime")}
        ce = {k: v for k, v in h.ecc_correctable.items() if not k.endswith("_lifetime")}
        if not ue and not ce and h.retired_pages is None and h.remap_failure is None:
            unknown.append(f"{label} ECC" + (f" ({h.notes[-1]})" if h.notes else ""))
            continue
        rows.append({"gpu": h.pci_bus_id, "uncorrectable": ue, "correctable": ce, "retired_pages": h.retired_pages,
                     "pending_retirement": h.pending_retirement, "remap_failure": h.remap_failure,
                     "remapped_rows_uncorrectable": h.remapped_rows_uncorrectable})
        n_ue, n_ce = sum(ue.values()), sum(ce.values())
        figures.append(Figure(name=f"{h.pci_bus_id}.ecc_uncorrectable", value=n_ue, unit="errors"))
        figures.append(Figure(name=f"{h.pci_bus_id}.ecc_correctable", value=n_ce, unit="errors"))
        if h.retired_pages is not None:
            figures.append(Figure(name=f"{h.pci_bus_id}.retired_pages", value=h.retired_pages, unit="pages"))
        bad = False
        if n_ue:
            blocks = ", ".join(f"{k} {v}" for k, v in ue.items() if v)
            fails.append(f"{label} has {n_ue} uncorrectable error(s) ({blocks})")
            bad = True
        limit, source = _retired_limit(ctx, h, _memory(ctx.machine, h))
        if h.retired_pages is not None and limit is not None and h.retired_pages >= limit:
            fails.append(f"{label} has {h.retired_pages} retired pages, at or above {limit} ({source})")
            bad = True
        elif h.vendor == "nvidia" and h.retired_pages is not None and h.retired_pages >= NVIDIA_RETIRED_WARN:
            warns.append(f"{label} has {h.retired_pages} retired pages (DCGM warns at {NVIDIA_RETIRED_WARN})")
        if h.remap_failure:
            fails.append(f"{label}: row remapping failed (no spare rows left)")
            bad = True
        if h.pending_retirement:
            warns.append(f"{label} has pages or rows waiting to be retired at the next GPU reset")
            remedies.append("drain the node and reset the GPU (`nvidia-smi -r` / `amd-smi reset -G`) or reboot, "
                            "so that the pending pages are retired")
        if n_ce > ce_warn:
            warns.append(f"{label} has {n_ce} correctable errors (above {ce_warn}: memory may be degrading)")
            remedies.append("watch the trend (the Prometheus gauges rocmkit_hw_ecc_correctable); plan a replacement "
                            "if it keeps rising")
        if bad:
            remedies.append(
                f"drain the node and take GPU {h.pci_bus_id} out of service: the vendor's field diagnostic "
                "(AMD: `amd-smi bad-pages`, RVS; NVIDIA: `dcgmi diag -r 3`, RMA on row-remap failure) decides on "
                "replacement"
            )
        if not bad:
            passes.append(f"{label} 0 uncorrectable, {n_ce} correctable"
                          + (f", {h.retired_pages} retired pages" if h.retired_pages is not None else ""))
    return _verdict("ECC counts", fails, warns, passes, unknown, remedies, figures, ctx.machine, gpus=rows)


def _retired_limit(ctx: CheckContext, h: GpuHealth, memory: int | None) -> tuple[int | None, str]:
    if "ecc_retired_pages_max" in ctx.options:
        return int(ctx.options["ecc_retired_pages_max"]), "--set ecc_retired_pages_max"
    if h.vendor == "nvidia":
        return NVIDIA_RETIRED_FAIL, "DCGM's limit"
    if h.retired_pages_limit:
        return h.retired_pages_limit, "amdgpu.bad_page_threshold on this node"
    if memory:
        return max(1, memory // AMD_BAD_PAGE_COVER), "amdgpu's one page per 100 MiB of VRAM"
    return None, ""


@check(
    "hw.xgmi",
    level=0,
    description="AMD XGMI: every GPU of a hive is present and linked to each peer (RVS pebb/pbqt's topology, "
    "amd-smi xgmi)",
)
def xgmi(ctx: CheckContext) -> CheckResult:
    skip = _none_skip(ctx)
    if skip:
        return skip
    hives: dict[str, list[tuple[str, GpuHealth]]] = {}
    for label, h in gpus_checked(ctx.machine):
        if h.vendor == "amd" and h.hive_id:
            hives.setdefault(h.hive_id, []).append((label, h))
    if not hives:
        return result(Status.SKIP, "no GPU is in an XGMI hive (no xgmi_hive_info, or a PCIe-only card)")
    fails: list[str] = []
    passes: list[str] = []
    notes: list[str] = []
    remedies: list[str] = []
    rows = []
    from rocmkit.doctor.sku import load_skus

    sku = load_skus().for_machine(ctx.machine)
    expected_peers = sku.get("xgmi_direct_peers") if sku else None
    for hive, members in hives.items():
        size = max((h.hive_size or 0) for _, h in members)
        if size and len(members) < size:
            fails.append(f"hive {hive} has {size} members but {len(members)} GPU(s) of it are seen here")
            remedies.append("a hive member is missing: check `dmesg | grep -i xgmi`, reseat the GPU board; "
                            "the driver builds the hive at boot, so reboot after a fix")
        for label, h in members:
            links = h.xgmi_links
            linked = sum(1 for n in links if n > 0)
            rows.append({"gpu": h.pci_bus_id, "hive": hive, "links": list(links)})
            # The platform's topology says how many peers a GPU links to directly: MI300X's eight
            # are fully connected; MI250X's GCDs are not (some pairs go through a peer).
            want = min(int(expected_peers), len(links) - 1) if expected_peers and links else None
            if not links:
                passes.append(f"{label} in hive {hive} (link counts not shown)")
            elif linked == 0:
                fails.append(f"{label} has no XGMI link to any of its {len(links) - 1} hive peers")
                remedies.append(_xgmi_fix(h))
            elif want is not None and linked < want:
                fails.append(f"{label} links to {linked} hive peer(s), {sku.name if sku else ''} GPUs to "
                             f"{want} (xgmi_num_links {' '.join(map(str, links))})")
                remedies.append(_xgmi_fix(h))
            else:
                passes.append(f"{label} linked to {linked} peer(s)")
                if want is None:
                    notes.append("no expected XGMI peer count for this GPU model in matrices/sku.toml "
                                 "(xgmi_direct_peers): links reported, a GPU without any link failed")
    return _verdict("XGMI links", fails, [], passes, [], remedies, [], ctx.machine, note=notes[0] if notes else "",
                    hives=rows)


def _xgmi_fix(h: GpuHealth) -> str:
    return (f"an XGMI link of {h.pci_bus_id} is down: reseat the GPU or the XGMI bridge/baseboard, check "
            "`dmesg | grep -i xgmi` and `amd-smi xgmi`, and ask the vendor if it persists")


@check(
    "hw.nvlink",
    level=0,
    description="NVIDIA NVLink: every link the platform has is up (`nvidia-smi nvlink -s`; the count per GPU model "
    "in matrices/sku.toml), and GPUs of a node agree (DCGM nvlink)",
)
def nvlink(ctx: CheckContext) -> CheckResult:
    skip = _none_skip(ctx)
    if skip:
        return skip
    from rocmkit.doctor.sku import load_skus

    sku = load_skus().for_machine(ctx.machine)
    expected = sku.get("nvlink_links") if sku else None
    seen = [(label, h) for label, h in gpus_checked(ctx.machine) if h.vendor == "nvidia" and h.nvlink_total]
    if not seen:
        return result(Status.SKIP, "no NVIDIA GPU shows NVLink links (PCIe-only cards, or `nvidia-smi nvlink -s` "
                      "absent)")
    fails: list[str] = []
    warns: list[str] = []
    passes: list[str] = []
    remedies: list[str] = []
    most = max(h.nvlink_up or 0 for _, h in seen)
    fix = ("check `nvidia-smi nvlink -s` and `-e` (error counters), the NVSwitch fabric manager (`systemctl status "
           "nvidia-fabricmanager`), the NVLink bridges of PCIe cards; reseat the GPU or bridge")
    for label, h in seen:
        up = h.nvlink_up or 0
        if expected is not None and up < expected:
            fails.append(f"{label}: {up} NVLink link(s) up, {sku.name if sku else ''} GPUs have {int(expected)}")
            remedies.append(fix)
        elif expected is None and up < most:
            # No platform figure: the node's own GPUs are the reference (bridged pairs match).
            warns.append(f"{label}: {up} NVLink link(s) up, other GPUs here have {most}")
            remedies.append(fix)
        else:
            passes.append(f"{label}: {up} of {h.nvlink_total} NVLink links up")
    note = "" if expected is not None else (
        "no NVLink link count for this GPU model in matrices/sku.toml (nvlink_links): inactive links are "
        "normal on PCIe cards, only the GPUs' agreement is judged")
    return _verdict("NVLink links", fails, warns, passes, [], remedies, [], ctx.machine, note=note)


@check(
    "hw.power_thermal",
    level=0,
    description="Power cap not below the board's default, no active throttling, temperatures below their "
    "limits, clocks not stuck low while busy (RVS iet/gst, DCGM targeted power)",
    options={
        "power_cap_min_fraction": "share of the board's default power cap a GPU's cap must reach (default 1.0)",
        "temp_margin_c": f"degrees below a sensor's limit at which to warn (default {TEMP_MARGIN_C})",
    },
    option_kinds={"power_cap_min_fraction": "fraction", "temp_margin_c": "positive_int"},
)
def power_thermal(ctx: CheckContext) -> CheckResult:
    skip = _none_skip(ctx)
    if skip:
        return skip
    min_frac = float(ctx.options.get("power_cap_min_fraction", 1.0))
    margin = int(ctx.options.get("temp_margin_c", TEMP_MARGIN_C))
    fails: list[str] = []
    warns: list[str] = []
    passes: list[str] = []
    unknown: list[str] = []
    remedies: list[str] = []
    figures: list[Figure] = []
    for label, h in gpus_checked(ctx.machine):
        if h.power_cap_w is None and not h.temperatures_c and not h.throttle and h.clock_mhz is None:
            unknown.append(f"{label} power and temperature")
            continue
        bad = False
        if h.power_cap_w is not None:
            figures.append(Figure(name=f"{h.pci_bus_id}.power_cap", value=h.power_cap_w, unit="W",
                                  reference=h.power_cap_default_w))
        if h.power_cap_w is not None and h.power_cap_default_w and h.power_cap_w < h.power_cap_default_w * min_frac:
            fails.append(f"{label} power cap {h.power_cap_w:g} W, below the board's default "
                         f"{h.power_cap_default_w:g} W")
            remedies.append("restore the default cap: `sudo amd-smi set -o ppt0 <W>` or `sudo nvidia-smi -pl <W>` "
                            "(and find what lowered it: a BMC power policy, a tuning script)")
            bad = True
        for sensor, temp in h.temperatures_c.items():
            figures.append(Figure(name=f"{h.pci_bus_id}.temp_{sensor}", value=temp, unit="C"))
            limit = h.temperature_limits_c.get(sensor)
            if limit is None:
                continue
            if temp >= limit:
                fails.append(f"{label} {sensor} at {temp:g} C, at or above its limit {limit:g} C")
                remedies.append("check the airflow and fans (BMC sensors), the inlet temperature and heatsink "
                                "contact; a GPU at its limit throttles")
                bad = True
            elif temp >= limit - margin:
                warns.append(f"{label} {sensor} at {temp:g} C, within {margin} C of its limit {limit:g} C")
        if h.throttle:
            fails.append(f"{label} is throttling: {', '.join(h.throttle)}")
            remedies.append("find the cause the reason names: thermal (cooling), power brake/cap (PSU, BMC "
                            "policy), hw_slowdown (an external signal: check the BMC event log)")
            bad = True
        # Only amdgpu's gpu_busy_percent says "busy"; NVIDIA's idle reason being off does not.
        if (h.vendor == "amd" and h.idle is False and h.clock_mhz is not None and h.clock_max_mhz
                and h.clock_mhz < h.clock_max_mhz * 0.5 and not h.throttle):
            warns.append(f"{label} busy at {h.clock_mhz} MHz, under half its {h.clock_max_mhz} MHz: clocks stuck "
                         "low?")
            remedies.append("check the performance level (`amd-smi metric -c`, `nvidia-smi -q -d PERFORMANCE`) "
                            "and application clocks")
        if not bad:
            cap = f"cap {h.power_cap_w:g} W" if h.power_cap_w is not None else "cap not shown"
            temps = ", ".join(f"{k} {v:g} C" for k, v in h.temperatures_c.items())
            passes.append(f"{label} {cap}" + (f", {temps}" if temps else ""))
    return _verdict("power and temperatures", fails, warns, passes, unknown, remedies, figures, ctx.machine)


@check(
    "hw.firmware",
    level=0,
    description="VBIOS and firmware versions, reported for fleet drift (`rocmkit fleet summarize` flags nodes "
    "that differ); GPUs of one model on one node running different VBIOS warn",
)
def firmware(ctx: CheckContext) -> CheckResult:
    skip = _none_skip(ctx)
    if skip:
        return skip
    rows: list[dict[str, Any]] = []
    by_model: dict[str, set[str]] = {}
    names = {bus_key(g.pci_bus_id): g.name or g.pci_device_id or "?" for g in ctx.machine.gpus if g.pci_bus_id}
    for _, h in gpus_checked(ctx.machine):
        if not h.vbios and not h.firmware:
            continue
        rows.append({"gpu": h.pci_bus_id, "vbios": h.vbios, "firmware": h.firmware})
        model = names.get(bus_key(h.pci_bus_id), h.vendor)
        by_model.setdefault(model, set()).add(h.vbios or "?")
    if not rows:
        return result(Status.SKIP, "no GPU shows its VBIOS or firmware versions")
    mixed = {m: v for m, v in by_model.items() if len(v) > 1}
    vbios = sorted({str(r["vbios"] or "?") for r in rows})
    if mixed:
        what = "; ".join(f"{m}: {', '.join(sorted(v))}" for m, v in mixed.items())
        return result(Status.WARN, f"GPUs of one model run different VBIOS ({what})",
                      "flash every GPU of the node to the same VBIOS (the vendor's or the OEM's tool), then reboot",
                      gpus=rows)
    return result(Status.PASS, f"{len(rows)} GPU(s), VBIOS {', '.join(vbios)}", gpus=rows)
