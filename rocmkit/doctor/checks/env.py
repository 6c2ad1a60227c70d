"""Level-0 environment checks: static facts from detection, no GPU work.

They run in-process in milliseconds (also inside an image build without a
GPU, and on a capture with ``--capture``). Each failure mode and its fix is in
``docs/failure-modes.md``; the row number is cited as
"(#N)" next to the code that handles it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rocmkit.arch import base_arch, override_to_gfx
from rocmkit.doctor.checks import archs
from rocmkit.doctor.checks.outcome import result
from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.machine import DeviceNode, Gpu, Machine
from rocmkit.parsers import dmesg

GIB = 1024**3
# Docker's default /dev/shm is 64 MiB; PyTorch DataLoader workers and RCCL need
# far more. AMD's own sample `docker run` uses --shm-size=4g (#16).
DEFAULT_SHM_MIN_BYTES = 1 * GIB
VISIBILITY_VARS = (
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
)


ROCM_TOOLS = ("rocminfo", "rocm-smi", "amd-smi", "rocm_agent_enumerator", "hipconfig", "/dev/kfd")


def _amd_relevant(m: Machine) -> bool:
    """AMD GPUs, or ROCm installed: a ROCm tool that ran and complained counts too
    (rocminfo on a node whose amdgpu is not loaded finds no GPU at all)."""
    return (
        bool(m.amd_gpus)
        or bool(m.rocm.driver_loaded)
        or m.rocm.version is not None
        or bool(m.rocm.installs)
        or any(p.source in ROCM_TOOLS for p in m.problems)
    )


def _kfd_problem(m: Machine) -> tuple[str, str] | None:
    """What a ROCm tool said about /dev/kfd, when the nodes themselves were not probed
    (captures): "denied" (#1, #2) or "missing" (#5, #13)."""
    for p in m.problems:
        text = p.message.lower()
        if "/dev/kfd" not in text:
            continue
        if "permission denied" in text:
            return "denied", p.message
        if "does not exist" in text or "no such file" in text:
            return "missing", p.message
    return None


def _in_container(m: Machine) -> bool:
    return m.host.container is not None


def _nodes(m: Machine) -> tuple[DeviceNode | None, list[DeviceNode]]:
    kfd = next((d for d in m.host.devices if d.path == "/dev/kfd"), None)
    render = [d for d in m.host.devices if d.path.startswith("/dev/dri/renderD")]
    return kfd, render


def _group_remedy(m: Machine, nodes: Sequence[DeviceNode]) -> str:
    """The group fix: numeric --group-add in a container (group ids differ between
    host and image, #15), usermod plus a new login on a host (#1)."""
    gids = sorted({n.gid for n in nodes if n.gid is not None})
    names = sorted({n.group for n in nodes if n.group})
    if _in_container(m):
        adds = " ".join(f"--group-add {g}" for g in gids) or "--group-add $(stat -c %g /dev/kfd)"
        return f"start the container with `--device=/dev/kfd --device=/dev/dri {adds}` (numeric ids: the image's group names may not match the host's)"
    groups = ",".join(names) or "render,video"
    return f"`sudo usermod -aG {groups} $USER`, then log out and back in (a running session keeps the groups it started with)"


def _image_build(ctx: CheckContext, what: str) -> CheckResult | None:
    """Not applicable in an image build: no GPU is attached to ``docker build``, so the
    device nodes, groups and driver are judged where the image runs, not here."""
    if not ctx.image_build:
        return None
    why = "--image-build" if not ctx.machine.overrides.get("ROCMKIT_GFX") else (
        f"ROCMKIT_GFX={ctx.machine.overrides['ROCMKIT_GFX']} is set and /dev/kfd does not exist"
    )
    return result(
        Status.SKIP,
        f"not applicable in an image build ({why}): {what} are checked where the image runs",
        "run `rocmkit doctor` in the container started with `--device=/dev/kfd --device=/dev/dri`; "
        "on a host, unset ROCMKIT_GFX to check its own devices",
        not_applicable="image_build",
    )


def _wsl(m: Machine, what: str) -> CheckResult | None:
    """WSL2 has no amdgpu, /dev/kfd or render-node groups: the env.wsl_* checks judge its GPU path."""
    if not m.platform.wsl:
        return None
    return result(
        Status.SKIP, f"WSL2: {what} are not used; the GPU is reached through /dev/dxg (env.wsl_runtime)",
        not_applicable="wsl",
    )


@check("env.amdgpu_driver", level=0, description="The amdgpu kernel driver is loaded (#5).")
def amdgpu_driver(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _image_build(ctx, "the kernel driver and its devices")) is not None:
        return na
    if (na := _wsl(m, "amdgpu and /dev/kfd")) is not None:
        return na
    if not _amd_relevant(m):
        return result(Status.SKIP, "no AMD GPU or ROCm on this machine")
    loaded = m.rocm.driver_loaded
    version = m.rocm.driver_version
    if loaded is None:
        return result(Status.SKIP, "whether amdgpu is loaded is unknown (not recorded by detection)")
    if loaded:
        return result(
            Status.PASS,
            f"amdgpu is loaded{f' (version {version})' if version else ''}",
            driver_version=version,
        )
    if _in_container(m):
        remedy = "load amdgpu on the host (containers share the host's kernel): `sudo modprobe amdgpu` there"
    else:
        remedy = (
            "`sudo modprobe amdgpu`; if it fails, see `dmesg | grep -i amdgpu`, `dkms status` "
            "(module not built for this kernel) and `mokutil --sb-state` (Secure Boot rejects an unsigned DKMS module)"
        )
    return result(
        Status.FAIL,
        "the amdgpu kernel module is not loaded, so ROCm sees no GPU",
        remedy,
        kernel=m.host.kernel,
    )


@check(
    "env.device_nodes",
    level=0,
    description="/dev/kfd and the render nodes exist and are read-writable (#1, #13, #14).",
)
def device_nodes(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _image_build(ctx, "/dev/kfd and the render nodes")) is not None:
        return na
    if (na := _wsl(m, "amdgpu and /dev/kfd")) is not None:
        return na
    if not _amd_relevant(m):
        return result(Status.SKIP, "no AMD GPU or ROCm on this machine")
    kfd, render = _nodes(m)
    said = _kfd_problem(m)
    if not m.host.devices and said is None:
        return result(Status.SKIP, "device nodes were not probed (not in this capture)")
    if said is not None and said[0] == "denied" and (kfd is None or kfd.readable is None):
        nodes = [n for n in (kfd, *render) if n is not None]
        return result(Status.FAIL, said[1], _group_remedy(m, nodes))
    if (kfd is None and (said is not None or m.host.devices)) or (kfd is not None and not kfd.exists):
        if _in_container(m):
            remedy = "start the container with `--device=/dev/kfd --device=/dev/dri` (and the host must have amdgpu loaded)"
        else:
            remedy = "load the amdgpu driver (see env.amdgpu_driver); /dev/kfd appears when it binds a GPU"
        return result(
            Status.FAIL,
            "/dev/kfd does not exist: no process here can use a GPU through ROCm",
            remedy,
        )
    assert kfd is not None
    present = [n for n in render if n.exists]
    if not present:
        remedy = (
            "start the container with `--device=/dev/dri`"
            if _in_container(m)
            else "check that amdgpu bound the GPU: `dmesg | grep -i amdgpu`"
        )
        return result(Status.FAIL, "no /dev/dri/renderD* node exists", remedy)
    nodes = [kfd, *present]
    denied = [n for n in nodes if n.readable is False or n.writable is False]
    unknown = [n for n in nodes if n.readable is None or n.writable is None]
    paths = [n.path for n in nodes]
    if denied:
        listing = ", ".join(f"{n.path} ({n.mode or '?'} group {n.group or n.gid})" for n in denied)
        return result(
            Status.FAIL,
            f"cannot open read-write: {listing}",
            _group_remedy(m, denied),
            denied=[n.path for n in denied],
        )
    if unknown:
        return result(
            Status.SKIP,
            f"access to {', '.join(n.path for n in unknown)} was not probed",
            nodes=paths,
        )
    return result(
        Status.PASS, f"/dev/kfd and {len(present)} render node(s) are read-writable", nodes=paths
    )


@check(
    "env.device_groups",
    level=0,
    description="The process is in the groups that own the GPU device nodes (#1, #15).",
)
def device_groups(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if (na := _image_build(ctx, "the device nodes' groups")) is not None:
        return na
    if (na := _wsl(m, "amdgpu and /dev/kfd")) is not None:
        return na
    if not _amd_relevant(m):
        return result(Status.SKIP, "no AMD GPU or ROCm on this machine")
    kfd, render = _nodes(m)
    nodes = [n for n in (kfd, *render) if n is not None and n.exists and n.gid is not None]
    if not nodes:
        return result(Status.SKIP, "the device nodes' owning groups were not probed")
    if m.host.uid == 0:
        return result(Status.PASS, "running as root: group membership does not matter")
    if not m.host.gids:
        return result(Status.SKIP, "this process's groups are unknown")
    missing = [n for n in nodes if n.gid not in m.host.gids]
    # A node open to everyone (mode ...rw-) works without the group.
    blocking = [n for n in missing if not (n.mode and n.mode[-3:-1] == "rw")]
    if not blocking:
        groups = sorted({n.group or str(n.gid) for n in nodes})
        return result(Status.PASS, f"in the owning group(s) {', '.join(groups)}")
    unnamed = [n for n in blocking if not n.group]
    parts = ", ".join(f"{n.path} (group {n.group or '?'} gid {n.gid})" for n in blocking)
    message = f"not in the group owning {parts}; process gids are {list(m.host.gids)}"
    if _in_container(m) and unnamed:
        # The container's /etc/group has no name for the host's gid: `groups: cannot
        # find name for group ID 993`, and `--group-add render` adds the image's id.
        message += " (this gid has no name inside the container: the host's and the image's group ids differ)"
    return result(
        Status.FAIL,
        message,
        _group_remedy(m, blocking),
        missing_gids=sorted({n.gid for n in blocking if n.gid is not None}),
    )


@check(
    "env.driver_window",
    level=0,
    description="The amdgpu kernel driver and the ROCm user space are within their window (#6).",
)
def driver_window(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    if not _amd_relevant(m):
        return result(Status.SKIP, "no AMD GPU or ROCm on this machine")
    rocm, driver = m.rocm.version, m.rocm.driver_version
    if rocm is None or driver is None:
        what = "ROCm user space" if rocm is None else "amdgpu driver"
        return result(Status.SKIP, f"the {what} version is unknown")
    window = archs.driver_window(driver)
    if window is None:
        return result(
            Status.SKIP,
            f"amdgpu {driver} is not an amdgpu-dkms release in matrices/rocm.toml (an in-tree kernel driver?)",
            rocm=rocm,
            driver=driver,
        )
    fits = window.contains(rocm)
    if fits is None:
        return result(Status.SKIP, f"{window.describe()}; cannot compare with ROCm {rocm}")
    if fits:
        return result(
            Status.PASS, f"{window.describe()}; ROCm {rocm} is inside", rocm=rocm, driver=driver
        )
    return result(
        Status.FAIL,
        f"{window.describe()}, not ROCm {rocm}: expect `HSA Error: Incompatible kernel and userspace`",
        f"install the amdgpu-dkms of ROCm {'.'.join(rocm.split('.')[:2])} (amdgpu-install from repo.radeon.com), "
        "or use a ROCm release inside the driver's window",
        rocm=rocm,
        driver=driver,
        window=[window.userspace_min, window.userspace_max],
    )


@check(
    "env.hsa_override",
    level=0,
    description="HSA_OVERRIDE_GFX_VERSION, if set, fits every visible GPU (same family only) (#7, #9).",
)
def hsa_override(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    value = m.env.get("HSA_OVERRIDE_GFX_VERSION")
    gpus = [g for g in m.amd_gpus if g.visible and base_arch(g.arch)]
    if not value:
        needing = [(g, archs.recommended_override(g.arch)) for g in gpus]
        hints = [f"GPU {g.index} {base_arch(g.arch)} usually runs with {v}" for g, v in needing if v]
        if hints:
            return result(
                Status.PASS,
                "not set; if torch reports `invalid device function`: " + "; ".join(hints),
                suggested={str(g.index): v for g, v in needing if v},
            )
        return result(Status.PASS, "not set")
    target = override_to_gfx(value)
    if target is None:
        return result(
            Status.FAIL,
            f"HSA_OVERRIDE_GFX_VERSION={value!r} is not a version like 10.3.0",
            "unset HSA_OVERRIDE_GFX_VERSION, or set it to MAJOR.MINOR.STEP (10.3.0 for RDNA2, 11.0.0 for RDNA3)",
        )
    if not gpus:
        return result(
            Status.WARN,
            f"HSA_OVERRIDE_GFX_VERSION={value} is set but no AMD GPU with a known arch is visible",
            "unset it unless you know why it is set",
        )
    fits = [archs.override_fit(base_arch(g.arch) or "", value) for g in gpus]
    cross = [(g, f) for g, f in zip(gpus, fits, strict=True) if f.verdict == "cross"]
    family = [(g, f) for g, f in zip(gpus, fits, strict=True) if f.verdict == "family"]
    details: dict[str, Any] = {
        "value": value,
        "reports_as": target,
        "gpus": {str(g.index): f.verdict for g, f in zip(gpus, fits, strict=True)},
    }
    if cross:
        listing = ", ".join(f"GPU {g.index} {f.arch}" for g, f in cross)
        fixes = sorted({f"{f.arch}: {f.usual}" for _, f in cross if f.usual})
        remedy = "unset HSA_OVERRIDE_GFX_VERSION" + (
            f", or use the value for your GPU ({'; '.join(fixes)})" if fixes else ""
        )
        if len(gpus) > 1:
            remedy += (
                "; the override applies to every visible GPU, so hide the others with HIP_VISIBLE_DEVICES"
            )
        return result(
            Status.FAIL,
            f"HSA_OVERRIDE_GFX_VERSION={value} makes {listing} report {target}, another ISA family: "
            "expect HSA_STATUS_ERROR_INVALID_ISA, a crash or wrong results",
            remedy,
            **details,
        )
    if family:
        listing = ", ".join(
            f"GPU {g.index} {f.arch}" + (f" (usual: {f.usual})" if f.usual else "") for g, f in family
        )
        return result(
            Status.WARN,
            f"HSA_OVERRIDE_GFX_VERSION={value} runs {target} code on {listing}: same family, but not the usual value",
            "use the matrix's value for the GPU (see `rocmkit detect`), or unset it if torch supports the GPU natively",
            **details,
        )
    return result(
        Status.PASS, f"HSA_OVERRIDE_GFX_VERSION={value} fits every visible GPU ({target})", **details
    )


def _parse_mask(value: str) -> list[str]:
    return [t.strip() for t in value.split(",") if t.strip()]


@check(
    "env.visible_devices",
    level=0,
    description="GPU visibility variables agree and name GPUs that exist (#11).",
)
def visible_devices(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    env = {k: v for k, v in m.env.items() if k in VISIBILITY_VARS}
    vendor_gpus = m.amd_gpus if m.amd_gpus else m.nvidia_gpus
    if not env:
        return result(
            Status.PASS, f"no visibility variable set: all {len(vendor_gpus)} GPU(s) visible"
        )
    problems: list[str] = []
    status = Status.PASS
    for var, value in env.items():
        tokens = _parse_mask(value)
        if not tokens or tokens == ["-1"]:
            problems.append(f"{var}={value!r} hides every GPU")
            status = Status.WARN
            continue
        indices = [int(t) for t in tokens if (t.isascii() and t.isdigit())]
        if vendor_gpus and any(i >= len(vendor_gpus) for i in indices):
            problems.append(f"{var}={value} names GPU {max(indices)}, but there are only {len(vendor_gpus)}")
            status = Status.FAIL
    amd_vars = [
        v for v in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES") if v in env
    ]
    if m.amd_gpus and len(amd_vars) > 1:
        values = {env[v] for v in amd_vars}
        # HIP applies its mask to the GPUs ROCR already left, in a different numbering;
        # HIP also honours CUDA_VISIBLE_DEVICES. Two masks compose, often to nothing.
        problems.append(
            " and ".join(f"{v}={env[v]}" for v in amd_vars)
            + (" disagree" if len(values) > 1 else " are all set")
            + ": HIP applies its mask after ROCR's, renumbered, so they compose"
        )
        if status is Status.PASS:
            status = Status.WARN
    if status is Status.PASS:
        return result(
            Status.PASS,
            ", ".join(f"{k}={v}" for k, v in env.items()) + " is consistent",
            variables=env,
        )
    return result(
        status,
        "; ".join(problems),
        "use one mechanism: ROCR_VISIBLE_DEVICES (or HIP_VISIBLE_DEVICES) alone, with indices from `rocm-smi`, and unset the others",
        variables=env,
    )


@check(
    "env.igpu",
    level=0,
    description="An integrated GPU next to a discrete one is hidden, not device 0 (#8, #10).",
)
def igpu(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    amd = list(m.amd_gpus)
    if not amd:
        return result(Status.SKIP, "no AMD GPU detected")
    kinds = [(g, archs.is_integrated(g)) for g in amd]
    integrated = [g for g, k in kinds if k]
    discrete = [g for g, k in kinds if k is False]
    if not integrated or not discrete:
        unknown = [g for g, k in kinds if k is None]
        if unknown and len(amd) > 1:
            return result(
                Status.SKIP,
                f"could not tell whether GPU(s) {', '.join(str(g.index) for g in unknown)} are integrated",
            )
        return result(Status.PASS, "no integrated GPU next to a discrete one")
    visible_igpus = [g for g in integrated if g.visible]
    if not visible_igpus:
        return result(
            Status.PASS,
            f"integrated GPU(s) {', '.join(_label(g) for g in integrated)} hidden by the visibility mask",
        )
    position = {g.index: i for i, g in enumerate(amd)}
    keep = ",".join(str(position[g.index]) for g in discrete)
    first = min(amd, key=lambda g: g.index)
    where = "is device 0, so torch's cuda:0 is the iGPU, and" if first in visible_igpus else "is visible, and"
    return result(
        Status.WARN,
        f"integrated GPU {', '.join(_label(g) for g in visible_igpus)} {where} a wheel without its arch aborts with "
        "hipErrorNoBinaryForGpu or `invalid device function`",
        f"export ROCR_VISIBLE_DEVICES={keep} (the discrete GPUs), or disable the iGPU in the BIOS",
        igpus=[g.index for g in visible_igpus],
        keep=keep,
    )


def _label(g: Gpu) -> str:
    return f"{g.index} ({base_arch(g.arch) or '?'}{', ' + g.name if g.name else ''})"


@check(
    "env.shm",
    level=0,
    description="/dev/shm is big enough for DataLoader workers and RCCL (#16).",
    options={"shm_min_bytes": "bytes /dev/shm must hold"},
    option_kinds={"shm_min_bytes": "positive_int"},
)
def shm(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    size = m.host.shm_bytes
    if size is None:
        return result(Status.SKIP, "the size of /dev/shm is unknown")
    minimum = int(ctx.options.get("shm_min_bytes", DEFAULT_SHM_MIN_BYTES))
    fig = (Figure(name="shm_size", value=round(size / GIB, 3), unit="GiB"),)
    if size >= minimum:
        return result(Status.PASS, f"/dev/shm is {size / GIB:.1f} GiB", figures=fig)
    remedy = (
        "run the container with `--ipc=host` or `--shm-size=8g`"
        if _in_container(m)
        else "`sudo mount -o remount,size=8G /dev/shm` (and set it in /etc/fstab)"
    )
    return result(
        Status.WARN,
        f"/dev/shm is only {size / 2**20:.0f} MiB (< {minimum / GIB:.0f} GiB): DataLoader workers die with `Unexpected bus error`",
        remedy,
        figures=fig,
    )


def _multi_amd(m: Machine) -> list[Gpu]:
    return [g for g in m.amd_gpus if archs.is_integrated(g) is not True]


@check(
    "env.iommu", level=0, description="Multi-GPU AMD nodes boot with iommu=pt (RCCL hangs otherwise) (#17)."
)
def iommu(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    gpus = _multi_amd(m)
    if len(gpus) < 2:
        return result(Status.SKIP, "only relevant on nodes with two or more AMD GPUs")
    cmdline = m.host.kernel_cmdline
    if cmdline is None:
        return result(Status.SKIP, "the kernel command line is unknown")
    tokens = cmdline.split()
    if "iommu=pt" in tokens or "amd_iommu=off" in tokens or "iommu=off" in tokens:
        mode = next(t for t in tokens if t in ("iommu=pt", "amd_iommu=off", "iommu=off"))
        return result(Status.PASS, f"kernel booted with {mode}")
    return result(
        Status.WARN,
        f"{len(gpus)} AMD GPUs but the kernel command line lacks iommu=pt: RCCL warns and all_reduce can hang",
        "add `iommu=pt` to GRUB_CMDLINE_LINUX in /etc/default/grub, run `sudo update-grub` (or `grub2-mkconfig -o /boot/grub2/grub.cfg`) and reboot",
        cmdline=cmdline,
    )


@check("env.numa_balancing", level=0, description="NUMA auto-balancing is off on multi-GPU AMD nodes.")
def numa_balancing(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    gpus = _multi_amd(m)
    if len(gpus) < 2:
        return result(Status.SKIP, "only relevant on nodes with two or more AMD GPUs")
    on = m.host.numa_balancing
    if on is None:
        return result(Status.SKIP, "kernel.numa_balancing is unknown")
    if not on:
        return result(Status.PASS, "NUMA auto-balancing is off")
    return result(
        Status.WARN,
        "NUMA auto-balancing is on: page migrations stall GPU work (AMD's Instinct tuning guides turn it off)",
        "`sudo sysctl -w kernel.numa_balancing=0`, and persist it in /etc/sysctl.d/90-rocm.conf",
    )


def _kernel_log_unread(m: Machine) -> str | None:
    """Why the kernel log says nothing here, or None when it was read."""
    if m.kernel_log_read is None:
        return "the kernel log was not read (no dmesg in this capture or report)"
    if not m.kernel_log_read:
        return "dmesg could not be read by this user (kernel.dmesg_restrict)"
    return None


def _kernel_result(ctx: CheckContext, kind: str, bad: str, remedy: str) -> CheckResult:
    """Shared shape of the dmesg checks: FAIL on a matching line (even in a partial
    read), PASS when the whole log was read and holds none, SKIP otherwise."""
    m = ctx.machine
    lines = [k for k in m.kernel_messages if k.kind == kind]
    if lines:
        devices = ", ".join(k.device or "?" for k in lines)
        return result(
            Status.FAIL,
            f"the kernel refused GPU {devices}: {bad} (dmesg: `{lines[0].text}`)",
            remedy,
            devices=[k.device for k in lines],
            lines=[k.text for k in lines],
        )
    if not _amd_relevant(m):
        return result(Status.SKIP, "no AMD GPU or ROCm on this machine")
    unread = _kernel_log_unread(m)
    if unread is not None:
        return result(
            Status.SKIP,
            unread,
            "to check by hand: `sudo dmesg | grep -i kfd`" if m.kernel_log_read is False else None,
        )
    return result(Status.PASS, "the kernel log has no such KFD refusal")


@check(
    "env.kfd_asic",
    level=0,
    description="KFD accepted every AMD GPU: no `kfd not supported on this ASIC` in dmesg (#3).",
)
def kfd_asic(ctx: CheckContext) -> CheckResult:
    # rocminfo then says "Unable to open /dev/kfd read-write: Cannot allocate memory"
    # (ROCm/rocminfo#27): the chip predates what KFD supports (pre-GCN3, legacy#2232).
    return _kernel_result(
        ctx,
        dmesg.KFD_ASIC,
        "KFD (ROCm's kernel driver) does not support this chip, so ROCm cannot compute on it",
        "use a GPU on the ROCm support list (https://rocm.docs.amd.com, 'System requirements'); "
        "this one can still drive displays, and PyTorch can use the CPU wheels",
    )


@check(
    "env.pcie_atomics",
    level=0,
    description="No GPU was skipped for lack of PCIe atomics: `PCI rejects atomics` in dmesg (#4).",
)
def pcie_atomics(ctx: CheckContext) -> CheckResult:
    # Slots wired to the chipset/PCH, old CPUs and some laptops cannot route PCIe
    # atomic operations, which KFD requires of these GPUs (legacy#364, #722, #1214).
    return _kernel_result(
        ctx,
        dmesg.PCIE_ATOMICS,
        "its PCIe slot does not pass atomic operations, which ROCm needs on this GPU",
        "move the GPU to a PCIe slot wired to the CPU, not to the chipset (the board manual says "
        "which); ROCm Validation Suite's `peqt` module reports whether atomics reach each GPU",
    )


@check(
    "env.virtual_gpu",
    level=0,
    description="No AMD GPU is an SR-IOV virtual function ROCm may not support (#23).",
)
def virtual_gpu(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    amd = list(m.amd_gpus)
    if not amd:
        return result(Status.SKIP, "no AMD GPU detected")
    vfs = [g for g in amd if g.virtual_function]
    if vfs:
        return result(
            Status.WARN,
            f"GPU {', '.join(_label(g) for g in vfs)} is an SR-IOV virtual function (a virtualized GPU): "
            "ROCm supports only some GPUs and hypervisors this way, and on the others "
            "hipGetDeviceCount fails with hipErrorInvalidDevice (error 101)",
            "check this GPU and hypervisor against ROCm's virtualization support list; "
            "otherwise ask for a bare-metal or whole-GPU passthrough instance",
            gpus=[g.index for g in vfs],
        )
    if all(g.virtual_function is None for g in amd):
        return result(Status.SKIP, "whether the GPUs are virtual functions is unknown (no lspci)")
    return result(Status.PASS, f"{len(amd)} AMD GPU(s), none an SR-IOV virtual function")


@check(
    "env.amdgpu_ids",
    level=0,
    description="libdrm finds amdgpu.ids (missing, it is cosmetic: a warning, never a failure) (#22).",
)
def amdgpu_ids(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    said = [p for p in m.problems if "amdgpu.ids" in p.message]
    if said:
        tools = sorted({p.source for p in said})
        return result(
            Status.WARN,
            f"{said[0].message.split(' (')[0]} (printed by {', '.join(tools)}): cosmetic, GPU marketing "
            "names fall back to generic ones; compute is unaffected",
            said[0].hint,
            tools=tools,
        )
    if not _amd_relevant(m):
        return result(Status.SKIP, "no AMD GPU or ROCm on this machine")
    return result(Status.PASS, "no tool complained about a missing amdgpu.ids")


@check("env.detection", level=0, description="Detection ran its probes without errors.")
def detection(ctx: CheckContext) -> CheckResult:
    m = ctx.machine
    serious = [p for p in m.problems if p.severity in ("error", "warning")]
    if not serious:
        return result(Status.PASS, f"{len(m.gpus)} GPU(s) detected, no probe problems")
    first = serious[0]
    more = f" (+{len(serious) - 1} more)" if len(serious) > 1 else ""
    return result(
        Status.WARN,
        f"{first.source}: {first.message}{more}",
        first.hint,
        problems=[
            {"source": p.source, "message": p.message, "hint": p.hint, "severity": p.severity}
            for p in serious
        ],
    )


# Triton and inductor caches for the kernels in this suite take tens of MB; a real
# model's compiled graphs take hundreds.
DEFAULT_CACHE_MIN_FREE_BYTES = 2 * GIB


@check(
    "env.cache_dir",
    options={"cache_min_free_bytes": "free bytes the cache folder needs"},
    option_kinds={"cache_min_free_bytes": "positive_int"},
    level=0,
    description="rocmkit's cache folder (Triton and inductor compile caches) is safe (no other user can "
    "write it), writable and has room.",
    needs=("live",),
)
def cache_dir(ctx: CheckContext) -> CheckResult:
    import shutil
    import tempfile

    from rocmkit.util.trust import CACHE_FIX, folder_problem

    path = Path(ctx.cache_dir)
    # Compiled kernels (.so files) and detection facts are loaded back from here: a folder
    # another user can write would let that user run code as whoever runs the doctor.
    unsafe = folder_problem(path)
    if unsafe:
        return result(
            Status.FAIL,
            f"the cache folder {path} is not safe to load compiled kernels from: {unsafe}; this run "
            "compiled into a private temporary folder and used no cached detection",
            CACHE_FIX,
            path=str(path),
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".rocmkit-probe-"):
            pass
    except OSError as exc:
        return result(
            Status.FAIL,
            f"cannot write to the cache folder {path}: {exc.strerror or exc}",
            "set ROCMKIT_CACHE_DIR to a folder you can write to (Triton cannot compile without one)",
            path=str(path),
        )
    free = shutil.disk_usage(path).free
    minimum = int(ctx.options.get("cache_min_free_bytes", DEFAULT_CACHE_MIN_FREE_BYTES))
    fig = (Figure(name="cache_free", value=round(free / GIB, 2), unit="GiB"),)
    if free < minimum:
        return result(
            Status.WARN,
            f"only {free / GIB:.1f} GiB free for compile caches at {path}",
            "free space there, or point ROCMKIT_CACHE_DIR at a bigger disk",
            figures=fig,
            path=str(path),
        )
    return result(
        Status.PASS, f"{path} is writable, {free / GIB:.0f} GiB free", figures=fig, path=str(path)
    )
