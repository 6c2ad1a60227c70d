"""The kernel log (``dmesg``) and libdrm's stderr noise: why a GPU is refused, and
what is only cosmetic.

dmesg needs privileges on many distributions (``kernel.dmesg_restrict=1``): a
refusal is recorded as "could not read" (an info problem), never as an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmkit.machine import KernelMessage, Problem
from rocmkit.parsers import dmesg, libdrm
from rocmkit.probes import Results, output

COMMAND_NAMES = ("dmesg.txt",)

# What each refusal means, for `rocmkit detect` (the doctor's env.* checks give the fix).
_HINTS = {
    dmesg.KFD_ASIC: "KFD (ROCm's kernel driver) does not support this chip: ROCm cannot compute on it "
    "(`rocmkit doctor`, check env.kfd_asic)",
    dmesg.PCIE_ATOMICS: "the GPU's PCIe slot does not pass atomic operations: move it to a slot wired to "
    "the CPU (`rocmkit doctor`, check env.pcie_atomics)",
}


def _refusals(messages: tuple[KernelMessage, ...]) -> tuple[Problem, ...]:
    return tuple(
        Problem(source="dmesg", message=k.text, hint=_HINTS.get(k.kind), severity="error")
        for k in messages
        if k.kind in _HINTS  # memory sizes and parameter notes are facts, not refusals
    )


@dataclass(frozen=True, kw_only=True)
class KernelFindings:
    messages: tuple[KernelMessage, ...] = ()
    read: bool | None = None  # None: dmesg absent (not run, or not in the capture)
    problems: tuple[Problem, ...] = ()


def probe(results: Results) -> KernelFindings:
    res = output(results, "dmesg.txt")
    if res is None:
        return KernelFindings()
    if not res.ok:
        why = res.stderr.strip().splitlines()[-1] if res.stderr.strip() else res.describe()
        hint = (
            "the kernel log is restricted to root (kernel.dmesg_restrict=1): run "
            "`sudo dmesg | grep -i -e kfd -e amdgpu` to see why a GPU was refused"
            if dmesg.read_denied(res.stderr)
            else "run `dmesg | grep -i -e kfd -e amdgpu` yourself"
        )
        problem = Problem(
            source="dmesg", message=f"could not read the kernel log: {why}", hint=hint, severity="info"
        )
        # What it printed before failing still counts (a partial read).
        partial = dmesg.parse_dmesg(res.stdout).messages
        return KernelFindings(messages=partial, read=False, problems=(problem, *_refusals(partial)))
    messages = dmesg.parse_dmesg(res.stdout).messages
    return KernelFindings(messages=messages, read=True, problems=_refusals(messages))


def libdrm_problems(results: Results) -> tuple[Problem, ...]:
    """One info problem per tool whose stderr shows libdrm missing amdgpu.ids (#22)."""
    found: list[Problem] = []
    for name, res in results.items():
        path = libdrm.missing_amdgpu_ids(res.stderr) if res.stderr else None
        if path is None:
            continue
        found.append(
            Problem(
                source=res.argv[0] if res.argv else name,
                message=f"{path}: No such file or directory (libdrm's GPU name table)",
                hint="cosmetic: only GPU marketing names are affected; install libdrm's ids file "
                "(Debian/Ubuntu `libdrm-common`, Fedora `libdrm`) or bind-mount the host's "
                "/usr/share/libdrm into the container",
                severity="info",
            )
        )
    return tuple(found)
