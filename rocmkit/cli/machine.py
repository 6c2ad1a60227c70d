"""The machine a command works on: a capture replayed, or this machine, detected or read
from the detection cache (:mod:`rocmkit.cache.detect_cache`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmkit.machine import Machine


def machine_for(capture: Path | None, *, fresh: bool, replayable: bool = True) -> Machine:
    """The machine to report or plan for. This machine's output may be replayed by the
    output cache when ``replayable`` (the caller's output depends on nothing else)."""
    if capture is not None:
        from rocmkit.detect import load_machine

        return load_machine(capture)
    from rocmkit.cache import output_cache
    from rocmkit.cache.detect_cache import machine_at
    from rocmkit.util.paths import cache_dir

    machine, detected_at, _ = machine_at(cache_dir(), fresh=fresh)
    if replayable:
        output_cache.cacheable(detected_at)
    return machine
