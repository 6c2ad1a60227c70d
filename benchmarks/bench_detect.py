"""Time `rocmkit detect --json` against `python -m torch.utils.collect_env`, in one run.

rocmkit runs two ways, in a cache folder of its own: a rerun (the output cache replays
what the first run printed, as on a machine whose state did not change) and `--fresh`
(every probe runs again). Prints the medians and the ratios (rocmkit must be at least
10x faster even fresh), `rocmkit --help`'s wall time and import time, and checks with
`python -X importtime` that `rocmkit detect` imports neither torch nor triton.
Exit code 1 when either claim fails. Measure with .pyc files present
(`python -m compileall -q rocmkit`, PYTHONDONTWRITEBYTECODE unset).

    .venv/bin/python benchmarks/bench_detect.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROCMKIT = [sys.executable, "-m", "rocmkit", "detect", "--json"]
COLLECT_ENV = [sys.executable, "-m", "torch.utils.collect_env"]


def timed(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600, env=env)
        runs.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-500:]}")
    return statistics.median(runs)


def heavy_imports(argv: list[str]) -> tuple[list[str], float]:
    """Top-level packages torch/triton imported by ``argv``, and rocmkit's own import time (ms)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *argv[1:]],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    heavy = set()
    rocmkit_us = 0
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = [p.strip() for p in line[len("import time:") :].split("|")]
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        name = parts[2]
        if name.split(".")[0] in {"torch", "triton"}:
            heavy.add(name.split(".")[0])
        # The entry point, then the click group it hands --help to (imported at top level).
        if name in ("rocmkit.cli", "rocmkit.cli.group"):
            rocmkit_us += int(parts[1])
    return sorted(heavy), rocmkit_us / 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "ROCMKIT_CACHE_DIR": cache}
        timed(ROCMKIT, 1, env)  # the first run detects and fills the caches
        rerun = timed(ROCMKIT, args.repeat, env)
        fresh = timed([*ROCMKIT, "--fresh"], args.repeat, env)
        help_wall = timed([sys.executable, "-m", "rocmkit", "--help"], args.repeat, env)
    theirs = timed(COLLECT_ENV, max(1, min(3, args.repeat)))
    ratio = theirs / fresh
    heavy, _ = heavy_imports([*ROCMKIT, "--fresh"])
    _, help_ms = heavy_imports([sys.executable, "-m", "rocmkit", "--help"])

    print(f"rocmkit detect --json (rerun)   median {rerun * 1000:8.1f} ms  ({args.repeat} runs)")
    print(f"rocmkit detect --json --fresh   median {fresh * 1000:8.1f} ms  ({args.repeat} runs)")
    print(f"torch.utils.collect_env         median {theirs * 1000:8.1f} ms")
    print(f"ratio (collect_env / rocmkit)  fresh {ratio:6.1f}x   (required: >= 10x)  rerun {theirs / rerun:6.1f}x")
    print(f"rocmkit --help: median {help_wall * 1000:.1f} ms; rocmkit.cli imports in {help_ms:.1f} ms (-X importtime)")
    print(f"torch/triton imported by detect: {', '.join(heavy) or 'none'}")
    ok = ratio >= 10 and not heavy
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
