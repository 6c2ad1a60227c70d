"""Time `rocmkit doctor` per level, cold vs warm compile caches, and level 0 against a peer.

    python benchmarks/bench_doctor.py [--levels 0,1,2] [--repeat 1]

Each run is a fresh process, as a user or a Slurm prolog starts it. "cold" uses
an empty ROCMKIT_CACHE_DIR (Triton and inductor caches empty); "warm" reruns
with the cache the cold run filled. The peer for level 0 is
`python -m torch.utils.collect_env`, the tool people run today for the same
question ("what is this environment?").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, int, dict[str, object] | None]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=1200, check=False)
    took = time.perf_counter() - start
    report = None
    if proc.stdout.startswith("{"):
        report = json.loads(proc.stdout)
    return took, proc.returncode, report


def _doctor(
    level: int, cache: Path, *extra: str, env_extra: dict[str, str] | None = None
) -> tuple[float, int, dict[str, object] | None]:
    env = {**os.environ, "ROCMKIT_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO), **(env_extra or {})}
    return _time([sys.executable, "-m", "rocmkit", "doctor", "--level", str(level), "--json", *extra], env)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--levels", default="0,1,2")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    print(f"{'level':>5}  {'cold s':>8}  {'warm s':>8}  {'warm/cold':>9}  {'checks':>6}  verdict")
    for level in levels:
        colds, warms = [], []
        verdict, n = "?", 0
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as tmp:
                cold, _, _ = _doctor(level, Path(tmp))
                warm, _, report = _doctor(level, Path(tmp))
            colds.append(cold)
            warms.append(warm)
            if report:
                verdict = str(report["verdict"])
                n = len(report["results"])  # type: ignore[arg-type]
        c, w = statistics.median(colds), statistics.median(warms)
        print(f"{level:>5}  {c:8.2f}  {w:8.2f}  {w / c:9.2f}  {n:>6}  {verdict}")
    # On the CPU the kernels run interpreted (nothing to cache); ahead-of-time codegen for
    # a GPU arch compiles for real, so it shows what the compile cache under
    # ROCMKIT_CACHE_DIR buys on a GPU node's second run.
    codegen = {"ROCMKIT_KERNEL_CODEGEN_TARGETS": "gfx942,gfx90a"}
    with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as tmp:
        cold, rc, _ = _doctor(1, Path(tmp), "--only", "triton.codegen", env_extra=codegen)
        warm, _, report = _doctor(1, Path(tmp), "--only", "triton.codegen", env_extra=codegen)
    if rc in (0, 2) and report:
        print(
            f"triton.codegen gfx942+gfx90a: cold {cold:.2f} s, warm {warm:.2f} s, warm/cold {warm / cold:.2f}"
        )
    else:
        print(f"triton.codegen not available here (exit {rc})")
    try:
        import torch  # noqa: F401
    except ImportError:
        print("peer: torch not installed, no collect_env comparison")
        return 0
    with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as tmp:
        ours, _, _ = _doctor(0, Path(tmp))
    peer, rc, _ = _time([sys.executable, "-m", "torch.utils.collect_env"], dict(os.environ))
    print(
        f"level 0 vs `python -m torch.utils.collect_env`: {ours:.2f} s vs {peer:.2f} s "
        f"(ratio {ours / peer:.2f}; collect_env exit {rc})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
