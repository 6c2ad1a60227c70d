"""How long each model took in earlier runs here: what the run's ETA starts from.

Models differ (a 42 s MLP beside a 73 s T5 on the same CPU), so one typical time per model made
the ETA 40 to 60 % off; a model's own earlier time, scaled by how this run compares with the
earlier one on the models done so far (load, warm caches), holds it closer. Kept in rocmkit's
cache folder, keyed by what changes a model's time (suite, device, size, mode, compile mode,
threads), read back only when the file is trusted (util/trust.py) and bounded.
"""

from __future__ import annotations

import json
from pathlib import Path

from rocmkit.util.atomicio import write_text_atomic
from rocmkit.util.trust import read_trusted

NAME = "durations.json"
MAX_BYTES = 1 << 20
# Enough for every model of every suite under a few settings; the oldest keys go first.
MAX_KEYS = 4000


def path_in(cache: Path) -> Path:
    return cache / "bench" / NAME


def key(setting: str, model: str) -> str:
    return f"{setting}|{model}"


def load(cache: Path) -> dict[str, float]:
    """key -> seconds, from earlier runs; empty when there is none or it is not to be trusted."""
    data = read_trusted(path_in(cache), max_bytes=MAX_BYTES)
    if data is None:
        return {}
    try:
        raw = json.loads(data)
    except ValueError:
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: float(v) for k, v in raw.items() if isinstance(k, str) and isinstance(v, (int, float)) and v > 0}


def save(cache: Path, times: dict[str, float]) -> None:
    """Add ``times`` (key -> seconds) to the history; a write that fails is no run's failure."""
    merged = {k: v for k, v in load(cache).items() if k not in times}
    merged.update({k: round(v, 2) for k, v in times.items() if v > 0})
    kept = dict(list(merged.items())[-MAX_KEYS:])
    try:
        path = path_in(cache)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_text_atomic(path, json.dumps(kept, indent=0, sort_keys=False) + "\n")
    except OSError:
        return
