"""Time `rocmkit bench models`: each model a fork of one warm worker against a fresh interpreter per model.

    python benchmarks/bench_models_isolation.py [--models mlp,resnet] [--repeat 3] [--device cpu]

A tiny CPU model's own work (warm-up, compile, 2x--repeat timed samples) takes a few
seconds; a spawned child spends about as long again importing torch, dynamo and
inductor first. With `--isolation fork` (the default) one worker per run imports
them once and forks a process per model. Both runs here share one compile cache,
warmed by a first run that is not timed, so the difference is the start of each
model's process, not compilation. Prints the wall time of each run, seconds per
model, and the ratio fork / spawn (lower is faster), with the models' verdicts
(a faster run that fails is no win).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _bench(isolation: str, models: str, repeat: int, device: str, cache: Path) -> tuple[float, dict[str, Any] | None]:
    env = {**os.environ, "ROCMKIT_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    env.pop("TRITON_CACHE_DIR", None)
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    argv = [
        sys.executable, "-m", "rocmkit", "bench", "models", "--models", models, "--device", device,
        "--repeat", str(repeat), "--warmup", "2", "--isolation", isolation, "--json",
        "--results", str(cache / f"{isolation}-{time.monotonic_ns()}.jsonl"),
    ]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=3600, check=False)
    took = time.perf_counter() - start
    doc = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    if doc is None:
        print(f"{isolation}: exit {proc.returncode}, no JSON; stderr tail:\n{proc.stderr[-2000:]}", file=sys.stderr)
    return took, doc


def _statuses(doc: dict[str, Any] | None) -> str:
    if doc is None:
        return "no result"
    return ", ".join(f"{m.get('name')}={m.get('status')}" for m in doc.get("models", []))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mlp,resnet")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    n = len([m for m in args.models.split(",") if m])
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory(prefix="rocmkit-bench-iso-") as tmp:
        cache = Path(tmp)
        warmup, _ = _bench("fork", args.models, args.repeat, args.device, cache)
        print(f"untimed warm-up run (fills the compile cache): {warmup:.1f} s")
        spawn, spawn_doc = _bench("spawn", args.models, args.repeat, args.device, cache)
        fork, fork_doc = _bench("fork", args.models, args.repeat, args.device, cache)
    print(f"{'isolation':<10} {'wall s':>8} {'s/model':>8}  models")
    print(f"{'spawn':<10} {spawn:8.1f} {spawn / n:8.1f}  {_statuses(spawn_doc)}")
    print(f"{'fork':<10} {fork:8.1f} {fork / n:8.1f}  {_statuses(fork_doc)}")
    print(f"ratio fork / spawn: {fork / spawn:.2f}   (saved {(spawn - fork) / n:.1f} s per model)")
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0 if spawn_doc is not None and fork_doc is not None else 1


if __name__ == "__main__":
    sys.exit(main())
