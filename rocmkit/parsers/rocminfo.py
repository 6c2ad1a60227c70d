"""``rocminfo``: HSA agents (GPUs and CPUs), the amdgpu driver state, and its error messages.

Handles the full output, pastes with elided parts (``...``), grep-filtered output
that keeps only the ``Name:`` lines, caret-notation colour codes and a first line
that lost characters. The ROCm version is deliberately NOT read here: "Runtime
Version" is the HSA runtime and "ROCk module version" is the kernel driver.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rocmkit.machine import Problem
from rocmkit.parsers.records import GpuRecord, clean_name, count, norm_gfx, norm_hex, strip_ansi, to_int

SOURCE = "rocminfo"

KFD_GROUP_HINT = (
    "add yourself to the render and video groups (`sudo usermod -aG render,video $USER`), "
    "then log out and in again (or reboot) so the new groups apply"
)

_ROCK = re.compile(
    r"(?:R?OCk|ROCK)\s+module\s+(?:version\s+(?P<ver>\S+)\s+)?is\s+(?P<not>NOT\s+)?loaded", re.I
)
_AGENT = re.compile(r"^\s*Agent\s+(\d+)\s*$")
_POOL = re.compile(r"^\s*Pool\s+(\d+)\s*$")
_KV = re.compile(r"^(?P<indent>\s*)(?P<key>[A-Za-z][^:]*?)\s*:(?P<value>.*)$")
_SIZE_KB = re.compile(r"^\s*(\d+)\s*(?:\([^)]*\))?\s*KB", re.I)
_CHIP = re.compile(r"^\s*(\d+)\s*(?:\((0x[0-9a-fA-F]+)\))?")


@dataclass(frozen=True, kw_only=True)
class RocminfoResult:
    gpus: tuple[GpuRecord, ...] = ()
    cpu_agents: int | None = None  # None when the output shows no agents at all
    driver_loaded: bool | None = None
    driver_version: str | None = None  # "ROCk module version 6.3.6 is loaded"
    problems: tuple[Problem, ...] = ()


@dataclass
class _Agent:
    fields: dict[str, str] = field(default_factory=dict)
    pools: list[dict[str, str]] = field(default_factory=list)
    number: int | None = None  # from an "Agent N" header


def _agents(lines: list[str]) -> list[_Agent]:
    agents: list[_Agent] = []
    cur: _Agent | None = None
    section = ""  # "", "pool", "isa", "cache", other nested section
    agent_indent: int | None = None
    for raw in lines:
        line = raw.rstrip()
        m_agent = _AGENT.match(line)
        if m_agent:
            cur = _Agent(number=count(m_agent.group(1)))
            agents.append(cur)
            section = ""
            agent_indent = None
            continue
        m_pool = _POOL.match(line)
        if m_pool and cur is not None:
            cur.pools.append({})
            section = "pool"
            continue
        m = _KV.match(line)
        if not m:
            continue
        indent = len(m.group("indent").expandtabs())
        key = m.group("key").strip()
        value = m.group("value").strip()
        if agent_indent is None and key == "Name":
            agent_indent = indent
        if agent_indent is not None and indent <= agent_indent:
            # Back at agent level: a new "Name:" with no "Agent N" header starts an agent
            # (grep-filtered pastes keep only the Name lines).
            if key == "Name" and (cur is None or "Name" in cur.fields):
                cur = _Agent()
                agents.append(cur)
            section = {"Pool Info": "pool", "ISA Info": "isa", "Cache Info": "cache"}.get(key, "")
            if cur is not None and key not in cur.fields and not section:
                cur.fields[key] = value
            continue
        if section == "pool" and cur is not None and cur.pools:
            cur.pools[-1].setdefault(key, value)
    return agents


def _is_gpu(agent: _Agent) -> bool | None:
    kind = agent.fields.get("Device Type", "").strip().upper()
    if kind:
        return kind == "GPU"
    name = agent.fields.get("Name")
    if name is None:
        return None
    return norm_gfx(name) is not None


def _vram(agent: _Agent) -> int | None:
    # The first GLOBAL pool of a GPU agent: its VRAM (on an APU, the GPU's share of RAM).
    for pool in agent.pools:
        if pool.get("Segment", "").upper().startswith("GLOBAL"):
            m = _SIZE_KB.match(pool.get("Size", ""))
            kib = count(m.group(1)) if m else None
            return kib * 1024 if kib is not None else None
    return None


def _uuid(value: str | None) -> str | None:
    if not value:
        return None
    text = value.strip()
    if not text or text.upper().endswith("-XX") or text.upper() in {"N/A", "NONE"}:
        return None
    return text


def _bdf(value: str | None) -> str | None:
    bdfid = to_int(value or "")
    if bdfid is None or bdfid <= 0 or bdfid > 0xFFFF:
        return None  # 0 is what CPU agents and some APUs print: not a real location
    return f"{bdfid >> 8:02x}:{(bdfid >> 3) & 0x1F:02x}.{bdfid & 0x7}"


def _problems(text: str) -> list[Problem]:
    problems: list[Problem] = []
    oor = "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in text
    suffix = " (HSA_STATUS_ERROR_OUT_OF_RESOURCES)" if oor else ""
    m = re.search(r"Unable to open /dev/kfd read-write:\s*(?P<why>[^\n]*)", text)
    if m and "No such file" in m.group("why"):
        problems.append(
            Problem(
                source=SOURCE,
                message="rocminfo failed: /dev/kfd does not exist, so no ROCm GPU can be used" + suffix,
                hint="the amdgpu kernel driver is not loaded: install amdgpu-dkms or use a kernel "
                "with amdgpu, check `dmesg | grep -i amdgpu`, then reboot; in a container, "
                "pass --device=/dev/kfd --device=/dev/dri",
                severity="error",
            )
        )
    elif m:
        why = m.group("why").strip() or "unknown reason"
        problems.append(
            Problem(
                source=SOURCE,
                message=f"rocminfo cannot open /dev/kfd read-write: {why}" + suffix,
                hint=KFD_GROUP_HINT,
                severity="error",
            )
        )
    elif oor:
        problems.append(
            Problem(
                source=SOURCE,
                message="rocminfo failed with HSA_STATUS_ERROR_OUT_OF_RESOURCES",
                hint="this usually means no permission on /dev/kfd: " + KFD_GROUP_HINT,
                severity="error",
            )
        )
    elif re.search(r"(?:R?OCk|ROCK)\s+module\s+is\s+NOT\s+loaded", text, re.I):
        problems.append(
            Problem(
                source=SOURCE,
                message="rocminfo reports that the amdgpu (ROCk) kernel module is not loaded",
                hint="install the amdgpu driver (amdgpu-dkms) or a kernel that ships it, then reboot; "
                "check `lsmod | grep amdgpu` and `dmesg | grep -i amdgpu`",
                severity="error",
            )
        )
    else:
        m = re.search(r"hsa api call failure[^\n]*", text)
        if m:
            problems.append(
                Problem(
                    source=SOURCE, message=m.group(0).strip()[:200], hint="run `rocminfo` yourself to see why"
                )
            )
    return problems


def parse_rocminfo(stdout: str, stderr: str = "") -> RocminfoResult:
    """Parse rocminfo's stdout (and stderr, where some builds print their errors)."""
    text = strip_ansi(stdout)
    both = text + "\n" + strip_ansi(stderr)
    driver_loaded: bool | None = None
    driver_version: str | None = None
    m = _ROCK.search(both)
    if m:
        driver_loaded = m.group("not") is None
        if driver_loaded and m.group("ver"):
            driver_version = m.group("ver")
    agents = _agents(text.splitlines())
    gpus: list[GpuRecord] = []
    cpus = 0
    for agent in agents:
        kind = _is_gpu(agent)
        if kind is None:
            continue
        if not kind:
            if agent.fields.get("Device Type", "CPU").strip().upper() == "CPU":
                cpus += 1
            continue
        f = agent.fields
        chip = _CHIP.match(f.get("Chip ID", ""))
        chip_id = None
        if chip:
            chip_id = norm_hex(chip.group(2)) if chip.group(2) else norm_hex(int(chip.group(1)))
        gpus.append(
            GpuRecord(
                source=SOURCE,
                vendor="amd",
                arch=norm_gfx(f.get("Name")),
                name=clean_name(f.get("Marketing Name")),
                memory_bytes=_vram(agent),
                pci_device_id=chip_id if chip_id != "0x0000" else None,
                pci_vendor_id="0x1002" if f.get("Vendor Name", "").strip().upper() == "AMD" else None,
                pci_bus_id=_bdf(f.get("BDFID")),
                kfd_node=to_int(f.get("Node", "").strip()),
                uuid=_uuid(f.get("Uuid")),
            )
        )
    # Agents are numbered from 1; a paste that skips numbers elided some, so the CPU count is unknown.
    numbers = [a.number for a in agents if a.number is not None]
    complete = bool(agents) and (not numbers or sorted(numbers) == list(range(1, len(agents) + 1)))
    return RocminfoResult(
        gpus=tuple(gpus),
        cpu_agents=cpus if complete else None,
        driver_loaded=driver_loaded,
        driver_version=driver_version,
        problems=tuple(_problems(both)),
    )


def parse_agent_enumerator(text: str) -> tuple[GpuRecord, ...]:
    """``rocm_agent_enumerator``: one gfx name per agent; "gfx000" is the CPU and is skipped."""
    gpus: list[GpuRecord] = []
    for line in strip_ansi(text).splitlines():
        arch = norm_gfx(line)
        if arch:
            gpus.append(GpuRecord(source="rocm_agent_enumerator", vendor="amd", ordinal=len(gpus), arch=arch))
    return tuple(gpus)
