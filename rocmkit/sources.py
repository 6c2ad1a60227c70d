"""Where raw text comes from: the live machine, or a capture folder that replays one.

Probes ask a :class:`Source` to run a named command or read a file; nothing else
touches the machine. The command names are those of ``docs/captures.md``
(``cmd/<name>`` in a capture), so a capture replays detection exactly.
:func:`snapshot` writes a live source out as a capture.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rocmkit.errors import CaptureError, DataError, storage_error
from rocmkit.proc.runner import CommandResult, run
from rocmkit.proc.runner import Status as RunStatus
from rocmkit.util.atomicio import write_text_atomic
from rocmkit.util.boundedio import BoundedReadError, inside, read_bounded
from rocmkit.util.envvars import relevant_raw

# argv[0] of the pseudo-commands rocmkit answers itself (device permissions, its Python).
BUILTIN = "<rocmkit>"

# name under cmd/ -> the command that produced it (the table in docs/captures.md, with
# rocmkit's own additions at the end).
COMMANDS: dict[str, tuple[str, ...]] = {
    "rocminfo.txt": ("rocminfo",),
    "rocm-smi.txt": ("rocm-smi",),
    "rocm-smi-productname.txt": ("rocm-smi", "--showproductname"),
    "rocm-smi.json": ("rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"),
    "rocm-smi.csv": ("rocm-smi", "--csv"),
    "rocm-smi-productname.csv": ("rocm-smi", "--showproductname", "--csv"),
    "rocm-smi-driverversion.csv": ("rocm-smi", "--showdriverversion", "--csv"),
    "amd-smi-static.json": ("amd-smi", "static", "--json"),
    "amd-smi-list.txt": ("amd-smi", "list"),
    "amd-smi-version.txt": ("amd-smi", "version"),
    "hipconfig-version.txt": ("hipconfig", "--version"),
    "hipconfig-full.txt": ("hipconfig", "--full"),
    "rocm_agent_enumerator.txt": ("rocm_agent_enumerator",),
    "nvidia-smi.txt": ("nvidia-smi",),
    "nvidia-smi-query.csv": (
        "nvidia-smi",
        "--query-gpu=index,name,uuid,driver_version,memory.total,compute_cap,pci.bus_id",
        "--format=csv",
    ),
    "lspci.txt": ("lspci", "-nn"),
    # Hardware health, second source after sysfs (docs/hardware.md).
    "nvidia-smi-q.xml": ("nvidia-smi", "-q", "-x"),
    "nvidia-smi-nvlink.txt": ("nvidia-smi", "nvlink", "-s"),
    # Only the sections health reads: the whole `metric` queries every sensor (seconds on 8 GPUs).
    "amd-smi-metric.json": (
        "amd-smi", "metric", "--ecc", "--ecc-blocks", "--power", "--temperature", "--pcie", "--json",
    ),
    "uname.txt": ("uname", "-srm"),
    # rocmkit additions (docs/captures.md)
    "id.txt": ("id",),
    "ldd-version.txt": ("ldd", "--version"),
    # Why KFD refused a GPU (#3, #4). Often root-only (kernel.dmesg_restrict=1): a
    # failure is "could not read", not an error.
    "dmesg.txt": ("dmesg",),
    # Built in: answered by rocmkit itself (LiveSource._builtin), no process is started.
    "devices.txt": (BUILTIN, "devices"),
    "python.txt": (BUILTIN, "python"),
    # Every AMD/NVIDIA GPU function on the PCI bus and the bridge above it (docs/captures.md).
    "pci-gpus.txt": (BUILTIN, "pci"),
    # WSL2 only (docs/platforms.md): rocminfo again with AMD's DXG detection on, for ROCm
    # releases before 7.13 that reach the GPU through /dev/dxg only when asked to.
    "rocminfo-dxg.txt": ("rocminfo",),
    # WSL2 only: the Adrenalin release, from the Windows registry through WSL's interop (reg.exe
    # is Windows' own tool, on PATH in WSL by default); the key public driver scripts read.
    "windows-driver.txt": ("reg.exe", "query", "HKLM\\SOFTWARE\\AMD\\CN", "/v", "RadeonSoftwareVersion"),
}
# Variables a command runs with on top of the environment (the argv stays the tool's own).
COMMAND_ENV: dict[str, dict[str, str]] = {"rocminfo-dxg.txt": {"HSA_ENABLE_DXG_DETECTION": "1"}}
# Commands run (and snapshotted) only on WSL2: elsewhere they repeat another command.
WSL_ONLY: frozenset[str] = frozenset({"rocminfo-dxg.txt", "windows-driver.txt"})
# Commands root does not run: their executable is on a mount an ordinary user can write.
AS_USER_ONLY: frozenset[str] = frozenset({"windows-driver.txt"})

# Files read on a live machine and copied into a snapshot. Folders marked with a
# trailing "/" are listed (and their entries read by the probes that need them).
FILES: tuple[str, ...] = (
    "/opt/rocm/.info/version",
    "/sys/module/amdgpu/version",
    "/sys/module/amdgpu/initstate",
    "/sys/module/nvidia/version",
    "/proc/driver/nvidia/version",
    "/etc/os-release",
    "/etc/system-release",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/cmdline",
    "/proc/sys/kernel/numa_balancing",
    "/proc/1/cgroup",
    "/proc/self/cgroup",
    "/.dockerenv",
    "/run/.containerenv",
    "/etc/group",
    "/proc/sys/kernel/hostname",
    "/sys/module/ttm/parameters/pages_limit",
    "/sys/module/amdgpu/parameters/gttsize",
    # WSL2: the kernel says so ("...-microsoft-standard-WSL2").
    "/proc/version",
    "/proc/sys/kernel/osrelease",
)

# Folders whose listing or files detection needs, read recursively for snapshots.
TREES: tuple[str, ...] = ("/sys/class/kfd/kfd/topology/nodes",)
# Module options (only the `options ttm|amdgpu` lines are kept in a snapshot: they set how
# much memory an integrated GPU may use).
MODPROBE = "/etc/modprobe.d"
# Per render node under /sys/class/drm/<node>/device/: what amdgpu says of its memory (APUs).
DRM = "/sys/class/drm"
DRM_FILES: tuple[str, ...] = ("mem_info_gtt_total", "mem_info_vram_total", "uevent")
# Library folders whose matching entries detection lists (names only; a snapshot keeps them as
# empty files): the distribution's old HSA runtime shadowing /opt/rocm's, and AMD's WSL bridge.
LIB_DIRS: tuple[str, ...] = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/opt/rocm/lib",
    "/usr/lib/wsl/lib",
)
LIB_PREFIXES: tuple[str, ...] = ("libhsa-runtime64.so", "libhsakmt.so", "librocdxg.so", "libdxcore.so")


def lib_entries(names: list[str] | None) -> list[str]:
    """The names of a library folder's listing that detection looks at (``LIB_PREFIXES``)."""
    return sorted(n for n in names or () if n.startswith(LIB_PREFIXES))[:64]

# Read caps. Live files are cut at the cap (only their head matters); a capture file
# over its cap is refused (a capture is a few hundred KiB; rocminfo on 16 GPUs ~1 MiB).
LIVE_MAX_BYTES = 4 * 1024 * 1024
CAPTURE_MAX_BYTES = 16 * 1024 * 1024

# Per-command timeouts (seconds). rocminfo can hang on a wedged GPU; keep it short.
# dmesg only copies a kernel buffer: seconds mean something is badly wrong.
TIMEOUTS: dict[str, float] = {
    "rocminfo.txt": 10.0,
    "rocminfo-dxg.txt": 10.0,
    "windows-driver.txt": 5.0,
    "amd-smi-static.json": 10.0,
    "lspci.txt": 5.0,
    "dmesg.txt": 3.0,
    "nvidia-smi-q.xml": 10.0,
    "nvidia-smi-nvlink.txt": 10.0,
    "amd-smi-metric.json": 10.0,
}


def relevant_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables that matter to detection and checks, with credentials masked: the
    result goes into snapshots (``env.json``), ``detect --json`` and doctor reports."""
    from rocmkit.util.redact import redact_env

    return redact_env(relevant_raw(environ))


class Source(Protocol):
    """What probes need from a machine."""

    @property
    def label(self) -> str: ...

    def command(self, name: str) -> CommandResult: ...

    def read(self, path: str) -> str | None: ...

    def listdir(self, path: str) -> list[str] | None: ...

    def environ(self) -> Mapping[str, str]: ...


Runner = Callable[..., CommandResult]


def describe_devices(root: str = "/") -> str:
    """The ``devices`` pseudo-command: /dev/kfd, /dev/dri/renderD*, /dev/shm, one line each.

    Written as text so that device permissions replay from a capture. Format
    (docs/captures.md): ``path=P exists=1 mode=crw-rw---- uid=0 gid=109 group=render
    readable=1 writable=0``, and ``path=/dev/shm exists=1 size=BYTES``.
    """
    import grp
    import stat

    base = Path(root)
    paths = ["/dev/kfd"]
    with contextlib.suppress(OSError):  # no /dev/dri: no render nodes to list
        paths += sorted(f"/dev/dri/{n}" for n in os.listdir(base / "dev/dri") if n.startswith("renderD"))
    if os.path.exists(base / "dev/dxg"):  # WSL2's GPU node: listed only where it exists
        paths.append("/dev/dxg")
    lines = []
    for path in paths:
        real = base / path.lstrip("/")
        try:
            st = real.stat()
        except OSError:
            lines.append(f"path={path} exists=0")
            continue
        try:
            group = grp.getgrgid(st.st_gid).gr_name
        except KeyError:
            group = ""
        lines.append(
            f"path={path} exists=1 mode={stat.filemode(st.st_mode)} uid={st.st_uid} gid={st.st_gid}"
            f" group={group} readable={int(os.access(real, os.R_OK))}"
            f" writable={int(os.access(real, os.W_OK))}"
        )
    try:
        vfs = os.statvfs(base / "dev/shm")
        lines.append(f"path=/dev/shm exists=1 size={vfs.f_frsize * vfs.f_blocks}")
    except OSError:
        lines.append("path=/dev/shm exists=0")
    return "\n".join(lines) + "\n"


PCI_DEVICES = "/sys/bus/pci/devices"
_GPU_VENDORS = ("0x1002", "0x10de")
# VGA, 3D, other display controllers and processing accelerators (MI300X is 0x1200).
_GPU_CLASSES = ("0x0300", "0x0302", "0x0380", "0x1200")


def describe_pci(root: str = "/") -> str:
    """The ``pci`` pseudo-command: each AMD or NVIDIA GPU function and the bridge above it.

    One line each, ``0000:03:00.0 vendor=0x1002 device=0x74a1 class=0x120000
    upstream=0000:02:00.0 slot=3`` (``upstream=-`` under a root complex; ``slot`` only where the
    firmware names the physical slot in /sys/bus/pci/slots). The bridge is where the device's
    folder sits in /sys/devices, which only the live machine can resolve: written as text, it
    replays from a capture like the rest."""
    base = Path(root) / PCI_DEVICES.lstrip("/")
    lines = []
    try:
        names = sorted(os.listdir(base))[:4096]
    except OSError:
        return ""
    slots: dict[str, str] = {}  # "0000:03:00" (a slot's device, no function) -> the slot's name
    slot_dir = Path(root) / "sys/bus/pci/slots"
    with contextlib.suppress(OSError):
        for slot in sorted(os.listdir(slot_dir))[:256]:
            with contextlib.suppress(OSError), open(slot_dir / slot / "address", "rb") as fh:
                slots.setdefault(fh.read(64).decode(errors="replace").strip(), slot)
    for name in names:
        dev = base / name

        def attr(key: str, dev: Path = dev) -> str:
            try:
                with open(dev / key, "rb") as fh:
                    return fh.read(64).decode(errors="replace").strip()
            except OSError:
                return ""

        vendor, cls = attr("vendor"), attr("class")
        if vendor not in _GPU_VENDORS or cls[:6] not in _GPU_CLASSES:
            continue
        chain = [c for c in os.path.realpath(dev).split("/") if c.count(":") == 2 and "." in c]
        upstream = chain[-2] if len(chain) > 1 else "-"
        # The slot holding the GPU, or the switch it sits behind: the nearest device on its path.
        held = next((slots[c.rsplit(".", 1)[0]] for c in reversed(chain) if c.rsplit(".", 1)[0] in slots), None)
        line = f"{name} vendor={vendor} device={attr('device')} class={cls} upstream={upstream}"
        lines.append(line + (f" slot={held}" if held and " " not in held else ""))
    return "".join(line + "\n" for line in lines)


def describe_python() -> str:
    """The ``python`` pseudo-command: the interpreter rocmkit runs under."""
    import platform
    import sys

    return f"version={platform.python_version()} executable={sys.executable}\n"


@dataclass
class LiveSource:
    """The machine rocmkit runs on. Commands go through the one runner.

    ``timeout_s`` replaces every per-command timeout (``ROCMKIT_PROBE_TIMEOUT``).
    """

    runner: Runner = run
    env: Mapping[str, str] | None = None
    root: str = "/"
    timeout_s: float | None = None

    @property
    def label(self) -> str:
        return "live"

    def command(self, name: str) -> CommandResult:
        argv = COMMANDS[name]
        if argv[0] == BUILTIN:
            return self._builtin(argv)
        if name in AS_USER_ONLY and os.geteuid() == 0:
            # reg.exe lives on Windows' drive, which WSL mounts writable by its user: root does not
            # run what another user can replace (docs/security.md); ROCMKIT_WSL_DRIVER says it instead.
            return CommandResult(argv=argv, status="absent", error=f"{argv[0]}: not run as root")
        timeout = self.timeout_s if self.timeout_s is not None else TIMEOUTS.get(name, 10.0)
        extra = COMMAND_ENV.get(name)
        if extra:
            return self.runner(argv, timeout=timeout, env={**self.environ(), **extra})
        return self.runner(argv, timeout=timeout)

    def _builtin(self, argv: tuple[str, ...]) -> CommandResult:
        try:
            out = (
                describe_devices(self.root)
                if argv[1] == "devices"
                else describe_pci(self.root)
                if argv[1] == "pci"
                else describe_python()
            )
        except OSError as exc:
            return CommandResult(argv=argv, status="error", error=str(exc))
        return CommandResult(argv=argv, status="ok", returncode=0, stdout=out)

    def _path(self, path: str) -> Path:
        return Path(self.root) / path.lstrip("/")

    def read(self, path: str) -> str | None:
        # Regular files only (a FIFO or device here would hang or never end), and only
        # their head: /proc/cpuinfo on 256 cores is ~1 MB, nothing detection reads is larger.
        try:
            data = read_bounded(self._path(path), max_bytes=LIVE_MAX_BYTES, truncate=True)
        except BoundedReadError:
            return None
        return data.decode(errors="replace")

    def listdir(self, path: str) -> list[str] | None:
        try:
            return sorted(os.listdir(self._path(path)))
        except OSError:
            return None

    def environ(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env


_SLOW = object()  # CaptureSource._quick_read: "read this one the checked way"


@dataclass
class CaptureSource:
    """A capture folder (``docs/captures.md``): replays what a machine printed."""

    path: Path

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not self.path.exists():
            raise CaptureError(
                f"capture folder {self.path} does not exist",
                "pass the folder written by `rocmkit snapshot DIR` (it holds cmd/ and root/)",
            )
        if not self.path.is_dir():
            raise CaptureError(f"{self.path} is not a folder", "pass a capture folder, not a file")
        if not (self.path / "cmd").is_dir() and not (self.path / "root").is_dir():
            raise CaptureError(
                f"{self.path} holds neither cmd/ nor root/, so it is not a capture",
                "make one with `rocmkit snapshot DIR`; see docs/captures.md for the layout",
            )
        self._env = self._load_env()
        self._real_root = os.path.realpath(self.path)

    @property
    def label(self) -> str:
        return f"capture:{self.path}"

    def _open_dir(self, folder: Path) -> int | None:
        """A descriptor of ``folder`` when it lies inside the capture, or None (take the slow path).

        The check is on the descriptor (/proc/self/fd), so a folder swapped for a link after it
        is still refused; files are then opened relative to it without following links. One
        open and one readlink a file, where realpath costs one lstat per path component
        (about 1 ms a file on a loaded machine: 0.3 s for an 8-GPU node's health files)."""
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            where = ""
        if where != self._real_root and not where.startswith(self._real_root.rstrip("/") + "/"):
            os.close(fd)
            return None
        return fd

    def _quick_read(self, p: Path) -> object:
        """The text of ``p`` through its verified folder; ``_SLOW`` for anything unusual (a link,
        not a regular file, over the cap, no /proc), which the checked path then refuses or reads."""
        fd = self._open_dir(p.parent)
        if fd is None:
            return _SLOW
        try:
            try:
                f = os.open(p.name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError:
                return _SLOW  # ELOOP: a link, which the checked path follows or refuses
            try:
                st = os.fstat(f)
                if stat.S_ISDIR(st.st_mode):
                    return None  # a folder a probe lists: "not a file on that machine"
                if not stat.S_ISREG(st.st_mode) or st.st_size > CAPTURE_MAX_BYTES:
                    return _SLOW
                chunks: list[bytes] = []
                size = 0
                while size <= CAPTURE_MAX_BYTES:
                    chunk = os.read(f, CAPTURE_MAX_BYTES + 1 - size)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                if size > CAPTURE_MAX_BYTES:
                    return _SLOW
                return b"".join(chunks).decode(errors="replace")
            finally:
                os.close(f)
        except OSError:
            return _SLOW
        finally:
            os.close(fd)

    def _load_env(self) -> dict[str, str]:
        from rocmkit.util.safeload import loads_json

        env_file = self.path / "env.json"
        if not env_file.exists() and not env_file.is_symlink():
            return {}
        text = self._read_text(env_file)
        try:
            data = loads_json(text, str(env_file), max_bytes=1024 * 1024)
        except DataError as exc:
            raise CaptureError(
                exc.message, "fix or delete env.json: it must be an object of variable names to strings"
            ) from exc
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise CaptureError(f"{env_file} must be a JSON object of strings", "fix or delete env.json")
        return {str(k): v for k, v in data.items()}

    def _read_text(self, p: Path) -> str:
        try:
            data = read_bounded(p, max_bytes=CAPTURE_MAX_BYTES, root=self.path)
        except BoundedReadError as exc:
            raise CaptureError(f"cannot use {p}: {exc}", exc.fix) from exc
        return data.decode(errors="replace")

    def _exists(self, p: Path) -> bool:
        # A dangling or escaping link still "exists" here: reading it then says why it is refused.
        return p.exists() or p.is_symlink()

    def command(self, name: str) -> CommandResult:
        argv = COMMANDS.get(name, (name,))
        out_file = self.path / "cmd" / name
        err_file = self.path / "cmd" / f"{name}.err"
        rc_file = self.path / "cmd" / f"{name}.rc"
        if not self._exists(out_file) and not self._exists(err_file):
            return CommandResult(argv=argv, status="absent", error=f"{argv[0]}: not in capture")
        stdout = self._read_text(out_file) if self._exists(out_file) else ""
        stderr = self._read_text(err_file) if self._exists(err_file) else ""
        rc = 0
        if self._exists(rc_file):
            raw = self._read_text(rc_file).strip()
            if raw.split()[:1] == ["timeout"]:
                # "timeout" or "timeout <seconds>" (the limit the tool ran under).
                limit = raw.split()[1] if len(raw.split()) > 1 else ""
                try:
                    timeout_s = float(limit) if limit else TIMEOUTS.get(name, 10.0)
                except ValueError:
                    timeout_s = TIMEOUTS.get(name, 10.0)
                if not 0 < timeout_s < 1e6:  # nan, inf, negative: not a limit a tool ran under
                    timeout_s = TIMEOUTS.get(name, 10.0)
                return CommandResult(
                    argv=argv,
                    status="timeout",
                    stdout=stdout,
                    stderr=stderr,
                    timeout_s=timeout_s,
                )
            try:
                rc = int(raw)
                if not -255 <= rc <= 255:
                    raise ValueError(raw)
            except ValueError as exc:
                raise CaptureError(
                    f"{rc_file} should hold an exit code, not {raw[:40]!r}", "write the number alone"
                ) from exc
        status: RunStatus = "ok" if rc == 0 else ("signal" if rc < 0 else "failed")
        return CommandResult(argv=argv, status=status, returncode=rc, stdout=stdout, stderr=stderr)

    def read(self, path: str) -> str | None:
        p = self.path / "root" / path.lstrip("/")
        quick = self._quick_read(p)
        if quick is not _SLOW:
            return quick if isinstance(quick, str) else None
        if not self._exists(p) or (p.is_dir() and not p.is_symlink()):
            return None  # absent (or a folder a probe lists): "not on that machine"
        return self._read_text(p)

    def listdir(self, path: str) -> list[str] | None:
        p = self.path / "root" / path.lstrip("/")
        fd = self._open_dir(p)
        if fd is not None:
            try:
                return sorted(os.listdir(fd))
            except OSError:
                return None
            finally:
                os.close(fd)
        try:
            real = inside(p, self.path)
        except BoundedReadError as exc:
            raise CaptureError(f"cannot use {p}: {exc}", exc.fix) from exc
        try:
            return sorted(os.listdir(real))
        except OSError:
            return None

    def environ(self) -> Mapping[str, str]:
        return self._env


class RecordingSource:
    """A source that remembers every file read and folder listed under ``prefixes``, so that
    a snapshot stores exactly what a probe read (the per-GPU hardware files, whose names
    depend on the machine: RAS blocks, hwmon sensors, firmware)."""

    def __init__(self, inner: Source, prefixes: tuple[str, ...]) -> None:
        import threading

        self.inner = inner
        self.prefixes = prefixes
        self.files: dict[str, str] = {}
        self.folders: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    @property
    def label(self) -> str:
        return self.inner.label

    def _mine(self, path: str) -> bool:
        return any(path == p or path.startswith(p.rstrip("/") + "/") for p in self.prefixes)

    def command(self, name: str) -> CommandResult:
        return self.inner.command(name)

    def read(self, path: str) -> str | None:
        text = self.inner.read(path)
        if text is not None and self._mine(path):
            with self._lock:
                self.files[path] = text
        return text

    def listdir(self, path: str) -> list[str] | None:
        entries = self.inner.listdir(path)
        if entries is not None and self._mine(path):
            with self._lock:
                self.folders[path] = list(entries)
        return entries

    def environ(self) -> Mapping[str, str]:
        return self.inner.environ()


def _write_recorded(rec: RecordingSource, dest_root: Path) -> list[str]:
    """Write what ``rec`` saw: files at their paths, and each listed entry that was not read
    as an empty folder (replay then lists the same names: hive members, unread attributes)."""
    written = []
    for path, text in sorted(rec.files.items()):
        target = dest_root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
        written.append(f"root{path}")
    for folder, entries in sorted(rec.folders.items()):
        for name in entries:
            child = f"{folder.rstrip('/')}/{name}"
            if child not in rec.files and not (dest_root / child.lstrip("/")).exists():
                (dest_root / child.lstrip("/")).mkdir(parents=True, exist_ok=True)
    return written


def _copy_tree(src: Source, path: str, dest_root: Path, depth: int = 0) -> None:
    if depth > 3:
        return
    entries = src.listdir(path)
    if entries is None:
        return
    (dest_root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
    for name in entries:
        child = f"{path.rstrip('/')}/{name}"
        text = src.read(child)
        if text is not None:
            target = dest_root / child.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, text)
        else:
            _copy_tree(src, child, dest_root, depth + 1)


# A snapshot is meant for public bug reports, and a kernel log holds MAC addresses,
# serial numbers and disk labels. Keep only the lines about GPUs, KFD and PCIe: every
# line the dmesg parser reads matches one of these, so detection on the snapshot
# still equals detection live.
_GPU_KERNEL_WORDS = ("kfd", "amdgpu", "atomics", "drm", "iommu", "amd-vi", "nvidia", "nvrm", "hsa")


def gpu_kernel_lines(text: str) -> str:
    """The lines of a kernel log that concern GPUs (see ``_GPU_KERNEL_WORDS``)."""
    kept = [line for line in text.splitlines() if any(w in line.lower() for w in _GPU_KERNEL_WORDS)]
    return "".join(line + "\n" for line in kept)


def _clear_previous_snapshot(dest: Path, extra_files: tuple[str, ...]) -> None:
    """Remove what an earlier snapshot into ``dest`` wrote (``snapshot --force``).

    A capture replays whatever files it holds: a stale ``cmd/rocminfo.txt.rc`` or
    ``/opt/rocm-X`` left from an older snapshot would be replayed as this machine's.
    Only paths this function writes are removed; other files in ``dest`` are kept.
    """
    cmd = dest / "cmd"
    for name in COMMANDS:
        for suffix in ("", ".err", ".rc"):
            with contextlib.suppress(FileNotFoundError):
                (cmd / f"{name}{suffix}").unlink()
    root = dest / "root"
    for path in (*FILES, *extra_files):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            (root / path.lstrip("/")).unlink()
    for tree in (*TREES, DRM, MODPROBE, PCI_DEVICES):
        shutil.rmtree(root / tree.lstrip("/"), ignore_errors=True)
    for folder in LIB_DIRS:
        with contextlib.suppress(OSError):  # no such folder in the earlier snapshot
            for entry in (root / folder.lstrip("/")).iterdir():
                if entry.name.startswith(LIB_PREFIXES) and not entry.is_dir():
                    entry.unlink()
    with contextlib.suppress(OSError):  # no opt/ from an earlier snapshot
        for entry in (root / "opt").iterdir():
            if entry.name.startswith("rocm") and entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        (dest / "env.json").unlink()


def snapshot(
    source: Source, dest: Path, extra_files: tuple[str, ...] = (), recorded: RecordingSource | None = None
) -> list[str]:
    """Write every command and file of the capture format that exists on ``source``, and what
    ``recorded`` saw a probe read (the per-GPU hardware files).

    Returns the relative paths written. Absent commands and files are left out,
    exactly as the format says ("absent means not installed").
    """
    dest = Path(dest)
    created = not dest.exists()
    try:
        if created:
            # A capture holds host facts (dmesg lines, PCI ids, the hostname): private until
            # its owner chooses to share it.
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.mkdir(mode=0o700)
        (dest / "cmd").mkdir(parents=True, exist_ok=True)
        (dest / "root").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise storage_error(exc) or CaptureError(
            f"cannot create {dest}: {exc.strerror}", "choose a folder you can write to"
        ) from exc
    try:
        return _write_snapshot(source, dest, extra_files, recorded)
    except BaseException as exc:
        # A half-written capture would replay as a machine with half its tools: leave none.
        if created:
            shutil.rmtree(dest, ignore_errors=True)
        else:
            _clear_previous_snapshot(dest, extra_files)
        if not isinstance(exc, OSError):
            raise
        full = storage_error(exc)
        if full is not None:
            raise full from exc
        raise CaptureError(
            f"cannot write {exc.filename or dest}: {exc.strerror or exc}",
            "choose a new folder you can write to",
        ) from exc


def _write_snapshot(
    source: Source, dest: Path, extra_files: tuple[str, ...], recorded: RecordingSource | None = None
) -> list[str]:
    written: list[str] = []
    _clear_previous_snapshot(dest, extra_files)
    # Concurrently, as detection does: a hung tool costs its timeout once, not once per tool.
    from concurrent.futures import ThreadPoolExecutor

    from rocmkit.parsers.platform import wsl_signs

    on_wsl = bool(wsl_signs(source.read("/proc/sys/kernel/osrelease"), source.read("/proc/version"), {}, False))
    names = [n for n in COMMANDS if on_wsl or n not in WSL_ONLY]
    with ThreadPoolExecutor(max_workers=len(names), thread_name_prefix="rocmkit-snapshot") as pool:
        futures = {name: pool.submit(source.command, name) for name in names}
        results = {name: fut.result() for name, fut in futures.items()}
    for name, res in results.items():
        if res.status in ("absent", "error"):
            continue
        stdout = gpu_kernel_lines(res.stdout) if name == "dmesg.txt" else res.stdout
        write_text_atomic(dest / "cmd" / name, stdout)
        written.append(f"cmd/{name}")
        if res.stderr:
            write_text_atomic(dest / "cmd" / f"{name}.err", res.stderr)
        if res.status == "timeout":
            limit = f" {res.timeout_s:g}" if res.timeout_s is not None else ""
            write_text_atomic(dest / "cmd" / f"{name}.rc", f"timeout{limit}\n")
        elif res.returncode not in (0, None):
            write_text_atomic(dest / "cmd" / f"{name}.rc", f"{res.returncode}\n")
    for path in (*FILES, *extra_files):
        text = source.read(path)
        if text is None:
            continue
        target = dest / "root" / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
        written.append(f"root{path}")
    for tree in TREES:
        _copy_tree(source, tree, dest / "root")
    if recorded is not None:
        written += _write_recorded(recorded, dest / "root")
    from rocmkit.parsers.host import gpu_module_options

    for conf in sorted(source.listdir(MODPROBE) or [])[:64]:
        kept = gpu_module_options(source.read(f"{MODPROBE}/{conf}")) if conf.endswith(".conf") else ()
        if kept:
            target = dest / "root" / MODPROBE.lstrip("/") / conf
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, "\n".join(kept) + "\n")
            written.append(f"root{MODPROBE}/{conf}")
    for node in source.listdir(DRM) or []:
        if not node.startswith("renderD"):
            continue
        for name in DRM_FILES:
            text = source.read(f"{DRM}/{node}/device/{name}")
            if text is not None:
                target = dest / "root" / DRM.lstrip("/") / node / "device" / name
                target.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(target, text)
                written.append(f"root{DRM}/{node}/device/{name}")
    for folder in LIB_DIRS:
        for name in lib_entries(source.listdir(folder)):
            target = dest / "root" / folder.lstrip("/") / name
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, "")  # the name is the fact; the library is not copied
            written.append(f"root{folder}/{name}")
    # ROCM_PATH's folder may hold no .info/version: keep the folder, so that replay sees
    # it exists (detection warns about a ROCM_PATH that does not).
    rocm_path = source.environ().get("ROCM_PATH", "").strip("/")
    if rocm_path and source.listdir(f"/{rocm_path}") is not None:
        (dest / "root" / rocm_path).mkdir(parents=True, exist_ok=True)
    # Versioned ROCm installs are detected from folder names and their .info/version.
    for name in source.listdir("/opt") or []:
        if name.startswith("rocm"):
            text = source.read(f"/opt/{name}/.info/version")
            if text is not None:
                target = dest / "root" / "opt" / name / ".info" / "version"
                target.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(target, text)
            else:
                (dest / "root" / "opt" / name).mkdir(parents=True, exist_ok=True)
    env = relevant_env(source.environ())
    write_text_atomic(dest / "env.json", json.dumps(env, indent=2, sort_keys=True) + "\n")
    written.append("env.json")
    return written


def remove_capture(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
