"""The typed view of one machine: what detection found, merged and de-duplicated.

Everything after parsing works on these frozen records. ``Machine.to_dict``
is the ``rocmkit.machine/1`` JSON schema (documented in docs/schemas.md);
``Machine.from_dict`` reads it back (doctor reports and fleet summaries embed it).
Unknown is ``None``, never a guess.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from rocmkit.arch import Backend, Vendor, family
from rocmkit.errors import DataError

SCHEMA = "rocmkit.machine/1"

@dataclass(frozen=True, kw_only=True)
class Problem:
    """Something that went wrong while probing, with what to do about it."""

    source: str  # the tool or file: "rocminfo", "/dev/kfd", "nvidia-smi"
    message: str
    hint: str | None = None
    severity: Literal["info", "warning", "error"] = "warning"


@dataclass(frozen=True, kw_only=True)
class Gpu:
    vendor: Vendor
    index: int  # position in the merged list (KFD node order for AMD, nvidia-smi index)
    arch: str | None = None  # "gfx90a", "gfx1100"; "sm_90" for NVIDIA
    name: str | None = None  # marketing name
    memory_bytes: int | None = None
    pci_device_id: str | None = None  # "0x744c"
    pci_vendor_id: str | None = None  # "0x1002"
    pci_bus_id: str | None = None  # "0000:03:00.0"
    integrated: bool | None = None
    compute_capability: str | None = None  # NVIDIA "9.0"
    uuid: str | None = None
    kfd_node: int | None = None  # /sys/class/kfd/kfd/topology/nodes/<n>
    visible: bool = True  # under HIP_/ROCR_/CUDA_VISIBLE_DEVICES
    sources: tuple[str, ...] = ()  # tools that reported it: "kfd", "rocminfo", ...
    # An SR-IOV virtual function (lspci "Virtual Function", an "MxGPU"/"VF" name); None: unknown.
    virtual_function: bool | None = None

    @property
    def gfx_family(self) -> str | None:
        """ "gfx103" for gfx1031, "gfx90" for gfx90a: the ISA family prefix."""
        if self.vendor != "amd" or not self.arch or not self.arch.startswith("gfx"):
            return None
        return family(self.arch)


@dataclass(frozen=True, kw_only=True)
class RocmInstall:
    path: str  # "/opt/rocm-6.2.4"
    version: str | None
    source: str  # ".info/version", "folder name", "hipconfig", "ROCM_PATH"


@dataclass(frozen=True, kw_only=True)
class RocmInfo:
    version: str | None = None  # the ROCm user-space release in use, "6.2.4"
    installs: tuple[RocmInstall, ...] = ()
    driver_version: str | None = None  # amdgpu kernel driver ("6.8.5", or the kernel's)
    driver_loaded: bool | None = None
    hip_version: str | None = None  # hipconfig --version, "6.2.41134-65d174c3e"
    cpu_agents: int | None = None  # HSA CPU agents (rocminfo) / CPU-only KFD nodes: NUMA nodes


@dataclass(frozen=True, kw_only=True)
class NvidiaInfo:
    driver_version: str | None = None  # "550.54.15"
    cuda_version: str | None = None  # the newest CUDA the driver supports, "12.4"


@dataclass(frozen=True, kw_only=True)
class DeviceNode:
    path: str  # "/dev/kfd", "/dev/dri/renderD128"
    exists: bool
    readable: bool | None = None
    writable: bool | None = None
    mode: str | None = None  # "crw-rw----"
    group: str | None = None  # owning group name, "render"
    gid: int | None = None


@dataclass(frozen=True, kw_only=True)
class DrmMemory:
    """What amdgpu reports for one render node (/sys/class/drm/renderD*/device/mem_info_*)."""

    node: str  # "renderD128"
    pci_bus_id: str | None = None  # "0000:c5:00.0", from the device's uevent
    vram_bytes: int | None = None  # on an APU: the BIOS carve-out
    gtt_bytes: int | None = None  # system memory the GPU may map (the GTT/TTM limit)


@dataclass(frozen=True, kw_only=True)
class Host:
    hostname: str | None = None
    os_id: str | None = None  # "ubuntu"
    os_version: str | None = None  # "22.04"
    os_name: str | None = None  # "Ubuntu 22.04.4 LTS"
    kernel: str | None = None  # "6.8.0-45-generic"
    arch: str | None = None  # "x86_64"
    glibc: str | None = None  # "2.35"
    python: str | None = None  # "3.11.7"
    cpu_model: str | None = None
    cpu_cores: int | None = None  # logical CPUs
    memory_bytes: int | None = None
    container: str | None = None  # "docker", "podman", "kubernetes", or None
    user: str | None = None
    uid: int | None = None
    groups: tuple[str, ...] = ()
    gids: tuple[int, ...] = ()
    devices: tuple[DeviceNode, ...] = ()
    kernel_cmdline: str | None = None
    numa_balancing: bool | None = None
    shm_bytes: int | None = None  # size of /dev/shm
    # The GPU-memory settings of integrated GPUs (APUs): /sys/module/ttm/parameters/pages_limit
    # (4 KiB pages), /sys/module/amdgpu/parameters/gttsize (MiB, -1 default), the `options ttm|amdgpu`
    # lines of /etc/modprobe.d/*.conf, and each render node's VRAM and GTT.
    ttm_pages_limit: int | None = None
    amdgpu_gttsize_mib: int | None = None
    modprobe_options: tuple[str, ...] = ()
    drm_memory: tuple[DrmMemory, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Platform:
    """How the GPUs are reached beyond a plain Linux host (the CPU architecture is ``Host.arch``).

    On WSL2 there is no /dev/kfd: the GPU is reached through /dev/dxg and AMD's WSL runtime
    (librocdxg, loaded by ROCr when ``HSA_ENABLE_DXG_DETECTION=1`` before ROCm 7.13), the
    Windows driver decides what works, and the distribution's old libhsa-runtime64/libhsakmt
    on the loader's default path shadow /opt/rocm's (docs/platforms.md).
    """

    wsl: bool = False
    wsl_signs: tuple[str, ...] = ()  # what said so: "kernel release", "/proc/version", "/dev/dxg", "WSL_DISTRO_NAME"
    dxg: bool | None = None  # /dev/dxg exists (None: not looked at, off WSL)
    librocdxg: tuple[str, ...] = ()  # AMD's WSL bridge library, where found
    dxg_detection: str | None = None  # HSA_ENABLE_DXG_DETECTION as set in the environment
    gpus_need_dxg_detection: bool = False  # rocminfo listed the GPUs only with HSA_ENABLE_DXG_DETECTION=1
    shadowing_libs: tuple[str, ...] = ()  # distro libhsa-runtime64/libhsakmt on the loader's default path
    windows_driver: str | None = None  # the Windows (Adrenalin) driver version, where given (ROCMKIT_WSL_DRIVER)


@dataclass(frozen=True, kw_only=True)
class KernelMessage:
    """A kernel log (dmesg) line that explains a GPU ROCm cannot use."""

    kind: str  # "kfd_asic" (KFD does not support the chip), "pcie_atomics" (slot lacks atomics)
    text: str  # the line, without its timestamp
    device: str | None = None  # "1002:67df", "0000:02:00.0" or the ASIC name, as the line says


@dataclass(frozen=True, kw_only=True)
class GpuHealth:
    """Hardware health facts of one GPU (docs/hardware.md): the kernel's files under
    /sys/bus/pci/devices/<BDF>/ first, ``amd-smi metric --json`` / ``nvidia-smi -q -x`` second.

    Units are in the names; None is "not shown"; a dict holds one entry per RAS block,
    sensor or firmware. ``notes`` says what could not be read and why (a file cut short,
    binary, refused, a read that hung), so that a missing fact is never taken as a pass."""

    pci_bus_id: str  # "0000:03:00.0"
    vendor: str  # "amd", "nvidia"
    sources: tuple[str, ...] = ()  # "sysfs", "amd-smi", "nvidia-smi"
    link_speed_gts: float | None = None  # current_link_speed
    link_speed_max_gts: float | None = None
    link_width: int | None = None
    link_width_max: int | None = None
    upstream_bus_id: str | None = None  # the bridge or root port above the GPU
    slot: str | None = None  # the physical slot's name (/sys/bus/pci/slots), where the firmware gives one
    upstream_speed_max_gts: float | None = None  # the slot's maximum: the link trains at most at the lower
    upstream_width_max: int | None = None
    link_speed_dpm_max_gts: float | None = None  # AMD pp_dpm_pcie's top level: what an idle link returns to
    idle: bool | None = None  # gpu_busy_percent 0 / NVIDIA's gpu_idle reason: an idle link may downclock
    ecc_correctable: dict[str, int] = field(default_factory=dict)  # block -> count; "*_lifetime": NVIDIA aggregate
    ecc_uncorrectable: dict[str, int] = field(default_factory=dict)
    retired_pages: int | None = None  # AMD gpu_vram_bad_pages, NVIDIA retired SBE + DBE pages
    retired_pages_limit: int | None = None  # AMD: amdgpu.bad_page_threshold, where set to a number of pages
    pending_retirement: bool | None = None  # pages/rows waiting for a reset to be retired
    remapped_rows_uncorrectable: int | None = None  # NVIDIA A100 and later
    remapped_rows_correctable: int | None = None
    remap_failure: bool | None = None
    power_cap_w: float | None = None
    power_cap_default_w: float | None = None
    power_cap_max_w: float | None = None
    temperatures_c: dict[str, float] = field(default_factory=dict)  # sensor -> degrees
    temperature_limits_c: dict[str, float] = field(default_factory=dict)  # sensor -> its critical/slowdown limit
    clock_mhz: int | None = None  # current graphics clock
    clock_max_mhz: int | None = None  # top graphics level
    throttle: tuple[str, ...] = ()  # active throttle reasons, as the tool names them
    vbios: str | None = None
    firmware: dict[str, str] = field(default_factory=dict)  # "sos", "smc", "gsp" -> version
    hive_id: str | None = None  # XGMI hive (AMD); 0 or None: not in a hive
    hive_size: int | None = None  # GPUs in the hive (xgmi_hive_info/node*)
    xgmi_links: tuple[int, ...] = ()  # xgmi_num_links per hive member, this GPU's own entry included (0)
    nvlink_up: int | None = None
    nvlink_total: int | None = None
    notes: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: Any) -> GpuHealth:
        if not isinstance(d, dict):
            raise TypeError(f"a health entry must be an object, not {type(d).__name__}")
        known = _known(cls, d)
        for name in ("sources", "throttle", "xgmi_links", "notes"):
            known[name] = tuple(known.get(name) or ())
        return cls(**known)


@dataclass(frozen=True, kw_only=True)
class Machine:
    gpus: tuple[Gpu, ...] = ()
    rocm: RocmInfo = field(default_factory=RocmInfo)
    nvidia: NvidiaInfo | None = None
    host: Host = field(default_factory=Host)
    env: dict[str, str] = field(default_factory=dict)  # relevant variables only
    problems: tuple[Problem, ...] = ()
    overrides: dict[str, str] = field(default_factory=dict)  # ROCMKIT_* values that replaced a fact
    source: str = "live"  # "live" or "capture:<path>"
    kernel_messages: tuple[KernelMessage, ...] = ()
    # Whether dmesg could be read: None when it was not run (an older capture or document).
    kernel_log_read: bool | None = None
    health: tuple[GpuHealth, ...] = ()  # one per GPU whose hardware facts were read (docs/hardware.md)
    platform: Platform = field(default_factory=Platform)

    @property
    def amd_gpus(self) -> tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g.vendor == "amd")

    @property
    def nvidia_gpus(self) -> tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g.vendor == "nvidia")

    @property
    def visible_gpus(self) -> tuple[Gpu, ...]:
        return tuple(g for g in self.gpus if g.visible)

    @property
    def backend_kind(self) -> Backend:
        """Which kind of torch build fits: AMD GPUs win when both vendors are present
        only if no NVIDIA GPU is visible; otherwise the visible vendor decides."""
        visible = self.visible_gpus
        if any(g.vendor == "amd" for g in visible):
            return "rocm"
        if any(g.vendor == "nvidia" for g in visible):
            return "cuda"
        return "cpu"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"schema": SCHEMA, **data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Machine:
        """Read a ``rocmkit.machine/1`` object back; a wrong schema is a DataError."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise DataError(
                f"not a {SCHEMA} object (schema={data.get('schema') if isinstance(data, dict) else None!r})",
                "pass the output of `rocmkit detect --json`",
            )
        try:
            host_d = dict(data.get("host") or {})
            host_d["devices"] = tuple(DeviceNode(**d) for d in host_d.get("devices", ()))
            host_d["groups"] = tuple(host_d.get("groups", ()))
            host_d["gids"] = tuple(host_d.get("gids", ()))
            host_d["modprobe_options"] = tuple(host_d.get("modprobe_options", ()))
            host_d["drm_memory"] = tuple(DrmMemory(**_known(DrmMemory, d)) for d in host_d.get("drm_memory", ()))
            rocm_d = dict(data.get("rocm") or {})
            rocm_d["installs"] = tuple(RocmInstall(**i) for i in rocm_d.get("installs", ()))
            return cls(
                gpus=tuple(
                    Gpu(**{**g, "sources": tuple(g.get("sources", ()))}) for g in data.get("gpus", ())
                ),
                rocm=RocmInfo(**rocm_d),
                nvidia=NvidiaInfo(**data["nvidia"]) if data.get("nvidia") else None,
                host=Host(**_known(Host, host_d)),
                env=dict(data.get("env") or {}),
                problems=tuple(Problem(**p) for p in data.get("problems", ())),
                overrides=dict(data.get("overrides") or {}),
                source=str(data.get("source", "live")),
                kernel_messages=tuple(
                    KernelMessage(**_known(KernelMessage, k)) for k in data.get("kernel_messages") or ()
                ),
                kernel_log_read=_opt_bool(data.get("kernel_log_read")),
                health=tuple(GpuHealth.from_dict(h) for h in data.get("health") or ()),
                platform=_platform(data.get("platform")),
            )
        except (TypeError, ValueError) as exc:
            raise DataError(
                f"malformed {SCHEMA} object: {exc}", "regenerate it with `rocmkit detect --json`"
            ) from exc


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


def _platform(data: Any) -> Platform:
    """An older document has no ``platform``: a plain Linux host."""
    if not data:
        return Platform()
    if not isinstance(data, dict):
        raise ValueError(f"platform must be an object, not {type(data).__name__}")
    d = _known(Platform, data)
    for key in ("wsl_signs", "librocdxg", "shadowing_libs"):
        d[key] = tuple(d.get(key) or ())
    return Platform(**d)


def _opt_bool(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ValueError(f"expected true, false or null, not {value!r}")
