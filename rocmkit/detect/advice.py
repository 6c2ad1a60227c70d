"""Problems that need the merged view: driverless GPUs and device permissions, with fixes."""

from __future__ import annotations

from collections.abc import Sequence

from rocmkit.machine import DeviceNode, Gpu, Host, Problem
from rocmkit.parsers.rocminfo import KFD_GROUP_HINT


def driverless(gpus: Sequence[Gpu], kfd_refused: bool = False) -> list[Problem]:
    """GPUs that only lspci sees: the hardware is there, the driver is not (or, when the
    kernel log says so, KFD refused the GPU: then loading amdgpu is not the fix)."""
    problems = []
    amd_hint = (
        "the kernel's KFD refused it: see the dmesg line reported with it"
        if kfd_refused
        else "load the amdgpu driver (a recent kernel or amdgpu-dkms), then check "
        "`ls /sys/class/kfd/kfd/topology/nodes` and `dmesg | grep -i amdgpu`"
    )
    for vendor, hint in (
        ("amd", amd_hint),
        ("nvidia", "install the NVIDIA driver and reboot; `nvidia-smi` must list the GPU"),
    ):
        mine = [g for g in gpus if g.vendor == vendor]
        if mine and all(g.sources[:1] == ("lspci",) for g in mine):
            problems.append(
                Problem(
                    source="lspci",
                    message=f"lspci shows {len(mine)} {vendor.upper()} GPU(s) but no driver tool sees them",
                    hint=hint,
                    severity="error",
                )
            )
    return problems


def _owner(dev: DeviceNode) -> str:
    if dev.group:
        return f"group {dev.group}"
    return f"gid {dev.gid}, a group with no name here" if dev.gid is not None else "an unknown group"


def device_problems(host: Host, has_amd: bool, container: str | None) -> list[Problem]:
    problems = []
    kfd = next((d for d in host.devices if d.path == "/dev/kfd"), None)
    gid = next((d.gid for d in host.devices if d.gid is not None and d.path != "/dev/shm"), None)
    group_hint = (
        f"start the container with --group-add {gid if gid is not None else '<the device group id>'} "
        "(podman: --group-add keep-groups)"
        if container
        else KFD_GROUP_HINT
    )
    if kfd is not None and kfd.exists and (kfd.readable is False or kfd.writable is False):
        groups = ", ".join(host.groups) or "none"
        problems.append(
            Problem(
                source="/dev/kfd",
                message=f"/dev/kfd is not read-writable for this user (owned by {_owner(kfd)}); your groups: {groups}",
                hint=group_hint,
                severity="error",
            )
        )
    if has_amd and kfd is not None and not kfd.exists:
        hint = (
            "start the container with --device=/dev/kfd --device=/dev/dri (and --group-add video/render)"
            if container
            else "the amdgpu driver is not loaded: check `lsmod | grep amdgpu` and `dmesg | grep -i amdgpu`"
        )
        problems.append(
            Problem(
                source="/dev/kfd",
                message="AMD GPUs are present but /dev/kfd does not exist",
                hint=hint,
                severity="error",
            )
        )
    # Render nodes matter to ROCm only when an AMD GPU is here (an Intel iGPU has them too).
    bad = [
        d
        for d in host.devices
        if has_amd and d.path.startswith("/dev/dri/") and d.exists and d.writable is False
    ]
    if bad:
        problems.append(
            Problem(
                source="/dev/dri",
                message=f"{', '.join(d.path for d in bad)} not writable for this user (owned by {_owner(bad[0])})",
                hint=group_hint,
                severity="error",
            )
        )
    return problems
