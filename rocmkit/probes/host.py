"""Host: distro, kernel, glibc, Python, CPU, memory, container, user and groups, device nodes, PCI GPUs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.machine import DrmMemory, Host, Problem
from rocmkit.parsers import host as hp
from rocmkit.parsers import lspci
from rocmkit.parsers.records import GpuRecord
from rocmkit.probes import Results, output, tool_problem
from rocmkit.sources import Source

COMMAND_NAMES = ("uname.txt", "id.txt", "ldd-version.txt", "devices.txt", "python.txt", "lspci.txt")


@dataclass(frozen=True, kw_only=True)
class HostFindings:
    host: Host
    pci_gpus: tuple[GpuRecord, ...] = ()
    problems: tuple[Problem, ...] = ()


def _text(results: Results, name: str) -> str | None:
    res = output(results, name)
    return res.stdout if res is not None and res.ok else None


def probe(source: Source, results: Results, env: Mapping[str, str]) -> HostFindings:
    problems: list[Problem] = []
    osr = hp.parse_os_release(source.read("/etc/os-release"))
    os_name = osr.get("PRETTY_NAME") or osr.get("NAME")
    os_version = osr.get("VERSION_ID")
    if not osr:
        os_name, os_version = hp.parse_system_release(source.read("/etc/system-release"))
    kernel, arch = hp.parse_uname(_text(results, "uname.txt"))
    cpu = hp.parse_cpuinfo(source.read("/proc/cpuinfo"))
    ident = hp.parse_id(_text(results, "id.txt"))
    devs = hp.parse_devices(_text(results, "devices.txt"))
    numa = (source.read("/proc/sys/kernel/numa_balancing") or "").strip()
    cmdline = (source.read("/proc/cmdline") or "").strip()
    hostname = (source.read("/proc/sys/kernel/hostname") or "").strip()
    container = hp.detect_container(
        dockerenv=source.read("/.dockerenv") is not None,
        containerenv=source.read("/run/.containerenv"),
        cgroups=(source.read("/proc/1/cgroup"), source.read("/proc/self/cgroup")),
        environ=env,
    )
    options: list[str] = []
    for conf in sorted(source.listdir("/etc/modprobe.d") or [])[:64]:
        if conf.endswith(".conf"):
            options += hp.gpu_module_options(source.read(f"/etc/modprobe.d/{conf}"))
    drm: list[DrmMemory] = []
    for node in sorted(source.listdir("/sys/class/drm") or []):
        if not node.startswith("renderD"):
            continue
        dev = f"/sys/class/drm/{node}/device"
        gtt, vram = hp.parse_int(source.read(f"{dev}/mem_info_gtt_total")), hp.parse_int(source.read(f"{dev}/mem_info_vram_total"))
        if gtt is not None or vram is not None:
            drm.append(DrmMemory(node=node, pci_bus_id=hp.parse_pci_slot(source.read(f"{dev}/uevent")),
                                 vram_bytes=vram, gtt_bytes=gtt))
    host = Host(
        ttm_pages_limit=hp.parse_int(source.read("/sys/module/ttm/parameters/pages_limit")),
        amdgpu_gttsize_mib=hp.parse_int(source.read("/sys/module/amdgpu/parameters/gttsize")),
        modprobe_options=tuple(options),
        drm_memory=tuple(drm),
        hostname=hostname or None,
        os_id=osr.get("ID") or None,
        os_version=os_version or None,
        os_name=os_name or None,
        kernel=kernel,
        arch=arch,
        glibc=hp.parse_ldd_version(_text(results, "ldd-version.txt")),
        python=hp.parse_python(_text(results, "python.txt")),
        cpu_model=cpu.model,
        cpu_cores=cpu.logical_cpus,
        memory_bytes=hp.parse_meminfo_total(source.read("/proc/meminfo")),
        container=container,
        user=ident.user,
        uid=ident.uid,
        groups=ident.groups,
        gids=ident.gids,
        devices=devs.devices,
        kernel_cmdline=cmdline or None,
        numa_balancing=(numa == "1") if numa in {"0", "1"} else None,
        shm_bytes=devs.shm_bytes,
    )
    pci: tuple[GpuRecord, ...] = ()
    res = output(results, "lspci.txt")
    if res is not None:
        pci = lspci.parse_lspci(res.stdout).gpus
        p = tool_problem(res, "lspci")
        if p:
            problems.append(p)
    for name, tool in (("uname.txt", "uname"), ("id.txt", "id"), ("ldd-version.txt", "ldd")):
        res = output(results, name)
        if tool == "ldd" and res is not None and "musl" in res.stderr:
            continue  # musl's ldd prints its banner to stderr and exits 1: no glibc, not a failure
        if res is not None:
            p = tool_problem(res, tool)
            if p:
                problems.append(p)
    return HostFindings(host=host, pci_gpus=pci, problems=tuple(problems))
