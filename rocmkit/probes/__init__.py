"""Probes: what to read and run on a :class:`~rocmkit.sources.Source`, per vendor.

A probe asks its source for raw text and hands it to the pure parsers; nothing
here touches the machine directly. Commands of all probes run concurrently
(:func:`gather`), so detection takes as long as the slowest tool, not the sum.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from platform import libc_ver  # by name: rocmkit.probes.platform is a probe

from rocmkit.machine import Problem
from rocmkit.proc.runner import CommandResult
from rocmkit.sources import Source

Results = Mapping[str, CommandResult]


# A probe thread costs address space before it reads a byte: its stack (RLIMIT_STACK, 8 MiB
# by default) and, under glibc, a malloc arena of its own, 64 MiB reserved (up to 8 per core).
# Detection runs ~25 commands at once: ~1.7 GiB of address space, past a `ulimit -v` of 1 GiB
# (HPC login nodes set one) with every tool quiet. The threads only start a command and read
# its pipes, so a small stack is plenty, and glibc is asked for few arenas (the GIL keeps them
# from contending anyway). The output they keep is bounded by proc.runner (MAX_HELD_BYTES).
PROBE_STACK_BYTES = 1024 * 1024
ARENA_MAX = 2
_lock = threading.Lock()
_arenas_capped = False


def _cap_malloc_arenas() -> None:
    """glibc's M_ARENA_MAX, once, unless MALLOC_ARENA_MAX chose it; elsewhere nothing."""
    global _arenas_capped
    if _arenas_capped:
        return
    _arenas_capped = True
    if os.environ.get("MALLOC_ARENA_MAX") or libc_ver()[0] != "glibc":
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(-8, ARENA_MAX)  # M_ARENA_MAX (malloc.h)


def gather(source: Source, names: Iterable[str]) -> dict[str, CommandResult]:
    """Run every named command of ``source`` at once; each keeps its own timeout."""
    unique = list(dict.fromkeys(names))
    if not unique:
        return {}
    with _lock:
        _cap_malloc_arenas()
        pool = ThreadPoolExecutor(max_workers=len(unique), thread_name_prefix="rocmkit-probe")
        # Threads start in submit(): the small stack is theirs, and the old size is back after.
        before = threading.stack_size(PROBE_STACK_BYTES)
        try:
            futures = {name: pool.submit(source.command, name) for name in unique}
        finally:
            threading.stack_size(before)
    with pool:
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
