"""``dmesg``: the kernel lines that say why KFD (ROCm's kernel side) refused a GPU.

A refused GPU is invisible to rocminfo and torch while lspci still lists it, and
only the kernel log says why. The forms below are quoted from public bug reports
(``docs/failure-modes.md``):

- ``amdgpu 0000:02:00.0: kfd not supported on this ASIC`` (ROCm/rocminfo#27, #3)
- ``kfd kfd: amdgpu: PITCAIRN  not supported in kfd`` (ROCm legacy#2232, #3)
- ``kfd kfd: DID 7340 is missing in supported_devices`` (ROCm legacy#1318, #3)
- ``kfd kfd: skipped device 1002:67df, PCI rejects atomics`` and, on newer kernels,
  ``kfd kfd: amdgpu: skipped device 1002:67df, PCI rejects atomics`` (legacy#364,
  #1214, #827, #4)

Lines may carry a ``[    7.026427]`` timestamp or a ``<6>`` syslog level; both are
dropped. Pure and total: any text gives a result, nothing raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocmkit.machine import KernelMessage
from rocmkit.parsers.records import strip_ansi

KFD_ASIC = "kfd_asic"
PCIE_ATOMICS = "pcie_atomics"
# amdgpu's memory sizes at load (not refusals): "[drm] amdgpu: 512M of VRAM memory ready",
# "amdgpu 0000:c5:00.0: amdgpu: amdgpu: 122880M of GTT memory ready." (ROCm/legacy-rocm-build#5853),
# and its note that the old parameter is on its way out: "Configuring gttsize via module parameter
# is deprecated, please use ttm.pages_limit" (ROCm/legacy-rocm-build#5595).
VRAM_READY = "vram_ready"
GTT_READY = "gtt_ready"
GTTSIZE_DEPRECATED = "gttsize_deprecated"
UNKNOWN_PARAMETER = "unknown_parameter"  # "amdgpu: unknown parameter 'gtt_size' ignored"
MEMORY_KINDS = (VRAM_READY, GTT_READY, GTTSIZE_DEPRECATED, UNKNOWN_PARAMETER)

_PREFIX = re.compile(r"^\s*(?:<\d+>)?\s*(?:\[\s*\d+(?:\.\d+)?\]\s*)?")
_PCI_ID = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}"
_BUS = r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
# (kind, a literal the pattern cannot match without, the pattern). The literal is looked for
# first: a searched pattern with ``.*`` in it costs quadratic time on each line it does not match,
# and a host's log is thousands of lines of which almost none are these.
_PATTERNS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (PCIE_ATOMICS, "PCI rejects atomics", re.compile(rf"skipped device (?P<dev>{_PCI_ID}), PCI rejects atomics")),
    (KFD_ASIC, "kfd not supported on this ASIC", re.compile(rf"(?:amdgpu (?P<dev>{_BUS}): )?kfd not supported on this ASIC")),
    (KFD_ASIC, "not supported in kfd", re.compile(r"kfd kfd: (?:amdgpu: )?(?P<dev>[A-Za-z0-9_]+)\s+not supported in kfd")),
    (KFD_ASIC, "is missing in supported_devices", re.compile(r"DID (?P<dev>[0-9a-fA-F]{4}) is missing in supported_devices")),
    (VRAM_READY, "M of VRAM memory ready", re.compile(rf"(?:amdgpu (?P<dev>{_BUS}): )?.*amdgpu: \d+M of VRAM memory ready")),
    (GTT_READY, "M of GTT memory ready", re.compile(rf"(?:amdgpu (?P<dev>{_BUS}): )?.*amdgpu: \d+M of GTT memory ready")),
    (GTTSIZE_DEPRECATED, "Configuring gttsize via module parameter is deprecated",
     re.compile(rf"(?:amdgpu (?P<dev>{_BUS}): )?.*Configuring gttsize via module parameter is deprecated")),
    (UNKNOWN_PARAMETER, ": unknown parameter '", re.compile(r"(?P<dev>amdgpu|ttm): unknown parameter '[^']+' ignored")),
)
# `dmesg` run without the right to read the ring buffer (kernel.dmesg_restrict=1):
# "dmesg: read kernel buffer failed: Operation not permitted".
_DENIED = re.compile(r"read kernel buffer failed|Operation not permitted|Permission denied")


@dataclass(frozen=True, kw_only=True)
class DmesgResult:
    messages: tuple[KernelMessage, ...] = ()


def _device(pattern_dev: str | None, text: str) -> str | None:
    if pattern_dev is None:
        return None
    if re.fullmatch(r"[0-9a-fA-F]{4}", pattern_dev) and "DID" in text:
        return f"1002:{pattern_dev.lower()}"  # KFD names only AMD's device id
    if re.fullmatch(_PCI_ID, pattern_dev):
        return pattern_dev.lower()
    return pattern_dev


def parse_dmesg(text: str) -> DmesgResult:
    """Every KFD refusal in ``text``, once per (kind, device), in log order."""
    seen: set[tuple[str, str | None]] = set()
    found: list[KernelMessage] = []
    for raw in strip_ansi(text).splitlines():
        line = _PREFIX.sub("", raw).strip()
        for kind, needle, pattern in _PATTERNS:
            m = pattern.search(line) if needle in line else None
            if m is None:
                continue
            device = _device(m.group("dev"), line)
            if (kind, device) not in seen:  # a driver reload repeats every line
                seen.add((kind, device))
                found.append(KernelMessage(kind=kind, text=line, device=device))
            break
    return DmesgResult(messages=tuple(found))


def read_denied(stderr: str) -> bool:
    """Whether dmesg's stderr says the kernel log may not be read by this user."""
    return bool(_DENIED.search(stderr))
