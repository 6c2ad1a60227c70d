"""AMD: the KFD topology, rocminfo, amd-smi, rocm-smi, rocm_agent_enumerator, ROCm installs, amdgpu."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.machine import Problem, RocmInstall
from rocmkit.parsers import amd_smi, kfd, rocm_smi, rocminfo, versions
from rocmkit.parsers.records import GpuRecord
from rocmkit.probes import Results, output, tool_problem
from rocmkit.sources import COMMANDS, Source

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"

COMMAND_NAMES = (
    "rocminfo.txt",
    "amd-smi-static.json",
    "amd-smi-list.txt",
    "amd-smi-version.txt",
    "rocm-smi.txt",
    "rocm-smi-productname.txt",
    "rocm-smi.json",
    "rocm-smi.csv",
    "rocm-smi-productname.csv",
    "rocm-smi-driverversion.csv",
    "rocm_agent_enumerator.txt",
    "hipconfig-version.txt",
)


@dataclass(frozen=True, kw_only=True)
class AmdFindings:
    # listing name -> what it showed; the keys are the names detect's precedence table uses.
    listings: Mapping[str, tuple[GpuRecord, ...]]
    cpu_agents: int | None = None
    driver_loaded: bool | None = None
    driver_versions: tuple[tuple[str, str], ...] = ()  # (where from, version), best first
    installs: tuple[RocmInstall, ...] = ()
    rocm_version: str | None = None
    hip_version: str | None = None
    tools_seen: tuple[str, ...] = ()  # ROCm tools that exist here (ran, whatever their result)
    problems: tuple[Problem, ...] = ()


def _kfd_nodes(source: Source) -> list[kfd.KfdNode]:
    nodes = []
    for n in kfd.node_numbers(source.listdir(KFD_NODES)):
        base = f"{KFD_NODES}/{n}"
        props = source.read(f"{base}/properties")
        if props is None:
            continue
        banks = []
        for b in sorted(source.listdir(f"{base}/mem_banks") or ()):
            text = source.read(f"{base}/mem_banks/{b}/properties")
            if text is not None:
                banks.append(text)
        nodes.append(kfd.KfdNode(node=n, properties=props, mem_banks=tuple(banks)))
    return nodes


def _installs(
    source: Source, env: Mapping[str, str], results: Results
) -> tuple[tuple[RocmInstall, ...], str | None, str | None, list[Problem]]:
    """Every ROCm install found, the release in use, and the HIP version."""
    problems: list[Problem] = []
    installs: list[RocmInstall] = []
    by_path: dict[str, str | None] = {}

    def add(path: str, version: str | None, how: str) -> None:
        if path in by_path:
            return
        by_path[path] = version
        installs.append(RocmInstall(path=path, version=version, source=how))

    rocm_path = (env.get("ROCM_PATH") or "").rstrip("/") or None
    if rocm_path:
        v = versions.parse_rocm_version_file(source.read(f"{rocm_path}/.info/version"))
        if v is None and source.listdir(rocm_path) is None:
            # A stale ROCM_PATH is not an install: tools built against it fail to find ROCm.
            problems.append(
                Problem(
                    source="environment",
                    message=f"ROCM_PATH={rocm_path} does not exist",
                    hint="unset ROCM_PATH, or point it at a ROCm install such as /opt/rocm",
                    severity="warning",
                )
            )
            rocm_path = None
        else:
            add(rocm_path, v, "ROCM_PATH")
    default = versions.parse_rocm_version_file(source.read("/opt/rocm/.info/version"))
    for name in sorted(source.listdir("/opt") or ()):
        folder_v = versions.version_from_folder(name)
        if folder_v is None:
            continue
        file_v = versions.parse_rocm_version_file(source.read(f"/opt/{name}/.info/version"))
        add(f"/opt/{name}", file_v or folder_v, ".info/version" if file_v else "folder name")
    if default is not None and default not in {i.version for i in installs}:
        add("/opt/rocm", default, ".info/version")
    hip_full = hip_mm = None
    hip = output(results, "hipconfig-version.txt")
    if hip is not None and hip.ok:
        hip_full, hip_mm = versions.parse_hipconfig_version(hip.stdout)
    smi_v = None
    smi = output(results, "amd-smi-version.txt")
    if smi is not None and smi.ok:
        smi_v = amd_smi.parse_version(smi.stdout).rocm_version
    # In use: ROCM_PATH's release, else /opt/rocm's, else the only install, else what the
    # tools on PATH belong to (hipconfig gives major.minor only).
    in_use = by_path.get(rocm_path) if rocm_path else None
    if in_use is None:
        in_use = default
    versioned = {i.version for i in installs if i.version}
    if in_use is None and len(versioned) == 1:
        in_use = next(iter(versioned))
    if in_use is None and len(versioned) > 1:
        problems.append(
            Problem(
                source="rocm",
                message=f"several ROCm installs ({', '.join(sorted(versioned))}) and none is selected",
                hint="set ROCM_PATH to the one to use, or ROCMKIT_ROCM_VERSION",
                severity="info",
            )
        )
    if in_use is None:
        in_use = smi_v or hip_mm
    return tuple(installs), in_use, hip_full, problems


def probe(source: Source, results: Results, env: Mapping[str, str]) -> AmdFindings:
    problems: list[Problem] = []
    listings: dict[str, tuple[GpuRecord, ...]] = {}
    drivers: list[tuple[str, str]] = []
    driver_loaded: bool | None = None
    cpu_agents: int | None = None

    module_v = versions.parse_module_version(source.read("/sys/module/amdgpu/version"))
    if module_v:
        drivers.append(("/sys/module/amdgpu/version", module_v))
    initstate = source.read("/sys/module/amdgpu/initstate")
    if initstate is not None:
        driver_loaded = initstate.strip() == "live"

    nodes = _kfd_nodes(source)
    if nodes:
        k = kfd.parse_kfd(nodes)
        listings["kfd"] = k.gpus
        cpu_agents = k.cpu_nodes
        problems.extend(k.problems)
        driver_loaded = True

    res = output(results, "rocminfo.txt")
    if res is not None:
        r = rocminfo.parse_rocminfo(res.stdout, res.stderr)
        if r.gpus or res.ok:
            listings["rocminfo"] = r.gpus
        if cpu_agents is None:
            cpu_agents = r.cpu_agents
        if r.driver_version:
            drivers.append(("rocminfo", r.driver_version))
        if driver_loaded is None:
            driver_loaded = r.driver_loaded
        problems.extend(r.problems)
        if not r.problems:
            p = tool_problem(res, "rocminfo")
            if p:
                problems.append(p)

    parsers = (
        ("amd-smi-static.json", "amd-smi static", amd_smi.parse_static_json),
        ("amd-smi-list.txt", "amd-smi list", amd_smi.parse_list),
    )
    amd_smi_status: set[str] = set()
    for name, key, fn in parsers:
        res = output(results, name)
        if res is None:
            continue
        a = fn(res.stdout)
        if a.gpus:
            listings[key] = a.gpus
        if a.driver_version:
            drivers.append((key, a.driver_version))
        if res.ok:
            problems.extend(a.problems)
        p = tool_problem(res, "amd-smi")
        if p and res.status not in amd_smi_status:
            amd_smi_status.add(res.status)
            problems.append(p)

    smi_parsers = (
        ("rocm-smi.json", "rocm-smi json", rocm_smi.parse_json),
        ("rocm-smi-productname.txt", "rocm-smi productname", rocm_smi.parse_productname),
        ("rocm-smi-productname.csv", "rocm-smi productname csv", rocm_smi.parse_csv),
        ("rocm-smi.csv", "rocm-smi csv", rocm_smi.parse_csv),
        ("rocm-smi.txt", "rocm-smi", rocm_smi.parse_concise),
        ("rocm-smi-driverversion.csv", "rocm-smi driver", rocm_smi.parse_csv),
    )
    seen_msgs: set[str] = set()
    seen_status: set[str] = set()  # one hung or broken rocm-smi is one problem, not six
    for name, key, sfn in smi_parsers:
        res = output(results, name)
        if res is None:
            continue
        s = sfn(res.stdout)
        if s.gpus and key != "rocm-smi driver":
            listings[key] = s.gpus
        if s.driver_version:
            drivers.append((key, s.driver_version))
        for prob in s.problems if res.ok else ():
            if prob.message not in seen_msgs:
                seen_msgs.add(prob.message)
                problems.append(prob)
        p = tool_problem(res, "rocm-smi")
        if p and res.status not in seen_status:
            seen_status.add(res.status)
            problems.append(p)

    res = output(results, "rocm_agent_enumerator.txt")
    if res is not None:
        enum = rocminfo.parse_agent_enumerator(res.stdout)
        if enum:
            listings["rocm_agent_enumerator"] = enum
        p = tool_problem(res, "rocm_agent_enumerator")
        if p:
            problems.append(p)

    installs, version, hip_full, install_problems = _installs(source, env, results)
    problems.extend(install_problems)
    res = output(results, "hipconfig-version.txt")
    if res is not None:
        p = tool_problem(res, "hipconfig")
        if p:
            problems.append(p)
    return AmdFindings(
        listings=listings,
        cpu_agents=cpu_agents,
        driver_loaded=driver_loaded,
        driver_versions=tuple(drivers),
        installs=installs,
        rocm_version=version,
        hip_version=hip_full,
        tools_seen=tuple(sorted({COMMANDS[n][0] for n in COMMAND_NAMES if output(results, n) is not None})),
        problems=tuple(problems),
    )
