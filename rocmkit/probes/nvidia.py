"""NVIDIA: the kernel module version files and nvidia-smi (query CSV first, the table as fallback)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocmkit.machine import Problem
from rocmkit.parsers import nvidia_smi
from rocmkit.parsers.records import GpuRecord
from rocmkit.probes import Results, output, tool_problem
from rocmkit.sources import Source

COMMAND_NAMES = ("nvidia-smi-query.csv", "nvidia-smi.txt")


@dataclass(frozen=True, kw_only=True)
class NvidiaFindings:
    listings: Mapping[str, tuple[GpuRecord, ...]]
    driver_version: str | None = None
    cuda_version: str | None = None
    present: bool = False  # a driver or a tool was seen: the machine has an NVIDIA stack
    problems: tuple[Problem, ...] = ()


def probe(source: Source, results: Results) -> NvidiaFindings:
    problems: list[Problem] = []
    listings: dict[str, tuple[GpuRecord, ...]] = {}
    # Same order as uv: the module's sysfs version, /proc, then nvidia-smi.
    driver = nvidia_smi.parse_driver_version(source.read("/sys/module/nvidia/version"))
    driver = driver or nvidia_smi.parse_driver_version(source.read("/proc/driver/nvidia/version"))
    present = driver is not None
    cuda = None
    for name, key, fn in (
        ("nvidia-smi-query.csv", "nvidia-smi query", nvidia_smi.parse_query_csv),
        ("nvidia-smi.txt", "nvidia-smi", nvidia_smi.parse_table),
    ):
        res = output(results, name)
        if res is None:
            continue
        present = True
        r = fn(res.stdout + ("\n" + res.stderr if res.stderr else ""))
        if r.gpus:
            listings[key] = r.gpus
        driver = driver or r.driver_version
        cuda = cuda or r.cuda_version
        problems.extend(p for p in r.problems if p.message not in {q.message for q in problems})
        if not r.problems:
            p = tool_problem(res, "nvidia-smi")
            if p:
                problems.append(p)
    return NvidiaFindings(
        listings=listings, driver_version=driver, cuda_version=cuda, present=present, problems=tuple(problems)
    )
