"""Probes: what to read and run on a :class:`~rocmkit.sources.Source`, per vendor.

A probe asks its source for raw text and hands it to the pure parsers; nothing
here touches the machine directly. Commands of all probes run concurrently
(:func:`gather`), so detection takes as long as the slowest tool, not the sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor

from rocmkit.machine import Problem
from rocmkit.proc.runner import CommandResult
from rocmkit.sources import Source

Results = Mapping[str, CommandResult]


def gather(source: Source, names: Iterable[str]) -> dict[str, CommandResult]:
    """Run every named command of ``source`` at once; each keeps its own timeout."""
    unique = list(dict.fromkeys(names))
    if not unique:
        return {}
    with ThreadPoolExecutor(max_workers=len(unique), thread_name_prefix="rocmkit-probe") as pool:
        futures = {name: pool.submit(source.command, name) for name in unique}
        return {name: fut.result() for name, fut in futures.items()}


def output(results: Results, name: str) -> CommandResult | None:
    """The result of ``name`` when it ran (ok or not); None when the tool is absent."""
    res = results.get(name)
    if res is None or res.status == "absent":
        return None
    return res


def tool_problem(res: CommandResult, tool: str, hint: str | None = None) -> Problem | None:
    """A problem for a command that timed out, failed, or died; None when it was fine."""
    if res.status in ("ok", "absent"):
        return None
    if res.status == "timeout":
        return Problem(
            source=tool,
            message=res.describe(),
            hint=hint
            or "a hung tool often means a wedged GPU or driver: check `dmesg` and `sudo dmesg | grep -i amdgpu`; "
            "set ROCMKIT_PROBE_TIMEOUT to wait longer",
            severity="warning",
        )
    if res.status == "signal":
        return Problem(
            source=tool,
            message=res.describe(),
            hint=hint or "the tool crashed; run it yourself to see why, and check `dmesg`",
        )
    return Problem(
        source=tool, message=res.describe(), hint=hint or f"run `{' '.join(res.argv)}` yourself to see why"
    )
