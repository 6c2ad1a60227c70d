"""Host facts: os-release, cpuinfo, meminfo, ``id``, ``uname -srm``, ``ldd --version``,
cgroups and container markers, and rocmkit's own ``devices`` and ``python`` descriptions."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.machine import DeviceNode
from rocmkit.parsers.records import count


def parse_os_release(text: str | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        if "=" not in line or line.lstrip().startswith("#"):
            continue
        key, _, raw = line.partition("=")
        try:
            parts = shlex.split(raw, comments=False)
        except ValueError:
            parts = [raw.strip().strip("\"'")]
        out.setdefault(key.strip(), " ".join(parts))
    return out


_SYSTEM_RELEASE = re.compile(r"^(?P<name>.+?)\s+release\s+(?P<ver>[\d.]+)", re.I)


def parse_system_release(text: str | None) -> tuple[str | None, str | None]:
    """``/etc/system-release`` (RHEL family): "Rocky Linux release 9.0 (Blue Onyx)" -> (name, "9.0")."""
    line = (text or "").strip().splitlines()[0].strip() if (text or "").strip() else ""
    if not line:
        return None, None
    m = _SYSTEM_RELEASE.match(line)
    return line, (m.group("ver") if m else None)


@dataclass(frozen=True, kw_only=True)
class CpuInfo:
    model: str | None = None
    logical_cpus: int | None = None


def parse_cpuinfo(text: str | None) -> CpuInfo:
    model = None
    count = 0
    for line in (text or "").splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "processor" and (value.strip().isascii() and value.strip().isdigit()):
            count += 1
        elif key in {"model name", "hardware", "cpu model"} and model is None and value.strip():
            model = " ".join(value.split())
    return CpuInfo(model=model, logical_cpus=count or None)


def parse_meminfo_total(text: str | None) -> int | None:
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text or "", re.M)
    kib = count(m.group(1)) if m else None
    return kib * 1024 if kib is not None else None


@dataclass(frozen=True, kw_only=True)
class Identity:
    user: str | None = None
    uid: int | None = None
    groups: tuple[str, ...] = ()
    gids: tuple[int, ...] = ()


_ID_PART = re.compile(r"(\d+)(?:\(([^)]*)\))?")


def parse_id(text: str | None) -> Identity:
    """``id``: "uid=1000(ana) gid=1000(ana) groups=1000(ana),44(video),109(render)"."""
    text = (text or "").strip()
    user = None
    uid = None
    groups: list[str] = []
    gids: list[int] = []
    for field in text.split():
        key, sep, value = field.partition("=")
        if not sep:
            continue
        if key == "uid":
            m = _ID_PART.match(value)
            if m:
                uid = count(m.group(1))
                user = m.group(2) or None
        elif key == "groups":
            for part in value.split(","):
                m = _ID_PART.match(part)
                gid = count(m.group(1)) if m else None
                if m and gid is not None:
                    gids.append(gid)
                    if m.group(2):
                        groups.append(m.group(2))
    return Identity(user=user, uid=uid, groups=tuple(groups), gids=tuple(gids))


def parse_uname(text: str | None) -> tuple[str | None, str | None]:
    """``uname -srm``: "Linux 6.8.0-45-generic x86_64" -> (kernel release, machine)."""
    parts = (text or "").split()
    if len(parts) >= 3 and parts[0] == "Linux":
        return parts[1], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    return None, None


def parse_ldd_version(text: str | None) -> str | None:
    """``ldd --version``: "ldd (Ubuntu GLIBC 2.35-0ubuntu3.8) 2.35" -> "2.35"; musl -> None."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    if "musl" in first.lower():
        return None
    # The version ends the line: search its tail only. On a whole line of digits,
    # `\d+\.\d+\s*$` retries from every position (quadratic: minutes for one long line).
    m = re.search(r"(?<![0-9])([0-9]{1,6}\.[0-9]{1,6})\s*$", first[-64:])
    return m.group(1) if m else None


def detect_container(
    *,
    dockerenv: bool,
    containerenv: str | None,
    cgroups: tuple[str | None, ...],
    environ: Mapping[str, str],
) -> str | None:
    """docker, podman, kubernetes, or None. Kubernetes wins (it runs docker/containerd underneath)."""
    cg = "\n".join(t for t in cgroups if t)
    if environ.get("KUBERNETES_SERVICE_HOST") or "kubepods" in cg:
        return "kubernetes"
    if containerenv is not None or environ.get("container") == "podman" or "libpod" in cg:
        return "podman"
    if dockerenv or "docker" in cg:
        return "docker"
    if environ.get("container") or "/lxc/" in cg:
        return environ.get("container") or "lxc"
    return None


@dataclass(frozen=True, kw_only=True)
class DevicesInfo:
    devices: tuple[DeviceNode, ...] = ()
    shm_bytes: int | None = None


def _flag(value: str | None) -> bool | None:
    if value in {"1", "yes", "true"}:
        return True
    if value in {"0", "no", "false"}:
        return False
    return None


def parse_devices(text: str | None) -> DevicesInfo:
    """rocmkit's ``devices`` description: one ``key=value`` line per device node (docs/captures.md)."""
    devices = []
    shm = None
    for line in (text or "").splitlines():
        fields = dict(part.partition("=")[::2] for part in line.split() if "=" in part)
        path = fields.get("path")
        if not path:
            continue
        if path == "/dev/shm":
            size = fields.get("size", "")
            shm = count(size)
            continue
        gid = fields.get("gid", "")
        devices.append(
            DeviceNode(
                path=path,
                exists=_flag(fields.get("exists")) is True,
                readable=_flag(fields.get("readable")),
                writable=_flag(fields.get("writable")),
                mode=fields.get("mode") or None,
                group=fields.get("group") or None,
                gid=count(gid),
            )
        )
    return DevicesInfo(devices=tuple(devices), shm_bytes=shm)


def parse_python(text: str | None) -> str | None:
    """rocmkit's ``python`` description: "version=3.11.7 executable=/usr/bin/python3"."""
    for part in (text or "").split():
        key, _, value = part.partition("=")
        if key == "version" and re.match(r"^\d+\.\d+\.\d+", value):
            return value
    return None


def gpu_module_options(text: str | None) -> tuple[str, ...]:
    """The ``options ttm ...`` and ``options amdgpu ...`` lines of a modprobe.d file: the
    settings that size what an integrated GPU may map (``ttm pages_limit``, ``amdgpu gttsize``)."""
    out: list[str] = []
    for raw in (text or "").splitlines():
        line = " ".join(raw.split("#", 1)[0].split())
        if line.startswith(("options ttm ", "options amdgpu ")):
            out.append(line)
    return tuple(out)


def parse_int(text: str | None) -> int | None:
    """A sysfs number (``26214400\n``, ``-1``), or None."""
    try:
        return int((text or "").strip())
    except ValueError:
        return None


def parse_pci_slot(uevent: str | None) -> str | None:
    """``PCI_SLOT_NAME=0000:c5:00.0`` from a device's uevent."""
    for line in (uevent or "").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "PCI_SLOT_NAME" and value.strip():
            return value.strip().lower()
    return None
