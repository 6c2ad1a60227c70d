"""Count compile-cache hits and misses in this process, for the report's cache hit rate.

Triton calls ``triton.knobs.compilation.listener`` after every compile with
``cache_hit`` (Triton 3.3+); inductor keeps ``fxgraph_cache_hit``/``_miss`` in
``torch._dynamo.utils.counters``. Neither is imported here: a process that never
imported them compiled nothing, so there is nothing to count.
"""

from __future__ import annotations

import sys
from typing import Any

_TRITON = {"hits": 0, "misses": 0}
_INDUCTOR_START = {"hits": 0, "misses": 0}


def _inductor_counts() -> dict[str, int]:
    utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(utils, "counters", None) if utils is not None else None
    if counters is None:
        return {"hits": 0, "misses": 0}
    found = counters.get("inductor", {})
    return {"hits": int(found.get("fxgraph_cache_hit", 0)), "misses": int(found.get("fxgraph_cache_miss", 0))}


def install() -> None:
    """Start counting from zero; chains any listener already set (a user's or torch's)."""
    _TRITON.update(hits=0, misses=0)
    _INDUCTOR_START.update(_inductor_counts())
    triton = sys.modules.get("triton")
    knobs = getattr(triton, "knobs", None) if triton is not None else None
    compilation = getattr(knobs, "compilation", None)
    if compilation is None or not hasattr(compilation, "listener"):
        return
    previous = compilation.listener

    def listener(*args: Any, **kwargs: Any) -> None:
        _TRITON["hits" if kwargs.get("cache_hit") else "misses"] += 1
        if previous is not None:
            previous(*args, **kwargs)

    compilation.listener = listener


def collect() -> dict[str, dict[str, int]]:
    """Hits and misses since :func:`install`, per cache; empty where nothing compiled."""
    out: dict[str, dict[str, int]] = {}
    if _TRITON["hits"] or _TRITON["misses"]:
        out["triton"] = dict(_TRITON)
    now = _inductor_counts()
    inductor = {k: now[k] - _INDUCTOR_START[k] for k in now}
    if inductor["hits"] or inductor["misses"]:
        out["inductor"] = inductor
    return out


def merge(parts: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Sum per-check counts into the report's ``caches`` block, with each cache's hit rate."""
    total: dict[str, dict[str, int]] = {}
    for part in parts:
        for cache, counts in part.items():
            if not isinstance(counts, dict):
                continue
            into = total.setdefault(str(cache), {"hits": 0, "misses": 0})
            into["hits"] += int(counts.get("hits", 0))
            into["misses"] += int(counts.get("misses", 0))
    return {
        cache: {**counts, "hit_rate": round(counts["hits"] / (counts["hits"] + counts["misses"]), 3)}
        for cache, counts in total.items()
        if counts["hits"] + counts["misses"]
    }
