"""How fast is `rocmkit resolve --json`, matrix load included, against its peers?

Peers, run in the same session on the same machine:
  * `uv pip compile` of the same pinned requirements against a local PEP 691
    index on 127.0.0.1 (tests.support.pkgindex): what a uv user runs to turn
    "torch for ROCm 6.2" into a resolved set. uv is a fast native resolver, so
    matching it is the bar; no network is involved, so the numbers are stable.
  * `python -c "import torch"`: the start-up cost every torch user already
    pays; rocmkit resolve must be a small fraction of it.
Each command runs as a fresh process (interpreter start included), best of N.
The capture row resolves from a capture folder (never cached); the live rows plan for
this machine offline, as a rerun (the output cache replays the first run's plan) and
with `--fresh` (detect and resolve again), in a cache folder of their own.
Measure with .pyc files present (`python -m compileall -q rocmkit`, PYTHONDONTWRITEBYTECODE unset).

    .venv/bin/python benchmarks/bench_resolve.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CAPTURE = REPO / "tests" / "data" / "captures" / "rx6800m-gfx1031-gfx90c-fedora-rocm6.3"


CPU: dict[str, float] = {}  # best CPU seconds (user + sys) per command label


def best_of(argv: list[str], runs: int, label: str = "", env: dict[str, str] | None = None) -> float:
    """Best wall time of ``runs`` fresh processes; the best CPU time goes to CPU[label].
    CPU time is printed too because wall time on a shared box mostly measures the neighbours."""
    times, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, cwd=REPO, env=env)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        if proc.returncode != 0:
            raise SystemExit(f"{argv[:3]} failed: {proc.stderr.strip()[-400:]}")
    CPU[label] = min(cpus)
    return min(times)


def in_process(runs: int) -> float:
    from rocmkit.detect import load_machine
    from rocmkit.matrix import clear_cache, load_matrix
    from rocmkit.resolve import Constraints, resolve

    machine = load_machine(CAPTURE)
    times = []
    for _ in range(runs):
        clear_cache()
        start = time.perf_counter()
        resolve(machine, Constraints(torch="2.5", python="3.11"), matrix=load_matrix())
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    py = sys.executable
    rocmkit = [
        py,
        "-m",
        "rocmkit",
        "resolve",
        "--capture",
        str(CAPTURE),
        "--torch",
        "2.5",
        "--python",
        "3.11",
        "--json",
    ]
    t_rocmkit = best_of(rocmkit, runs, "rocmkit")
    t_core = in_process(runs)
    print(
        f"rocmkit resolve --json (fresh process)      {t_rocmkit * 1000:8.1f} ms  cpu {CPU['rocmkit'] * 1000:7.1f} ms"
    )
    print(f"  of which matrix load + resolve in-process {t_core * 1000:8.1f} ms")
    live = [py, "-m", "rocmkit", "resolve", "--json", "--offline"]
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "ROCMKIT_CACHE_DIR": cache}
        best_of(live, 1, "", env)  # detects, resolves, fills the caches
        t_rerun = best_of(live, runs, "rerun", env)
        t_fresh = best_of([*live, "--fresh"], runs, "fresh", env)
    print(f"this machine, --offline, rerun (cached)     {t_rerun * 1000:8.1f} ms  cpu {CPU['rerun'] * 1000:7.1f} ms")
    print(f"this machine, --offline --fresh             {t_fresh * 1000:8.1f} ms  cpu {CPU['fresh'] * 1000:7.1f} ms")

    uv = shutil.which("uv") or str(Path(py).parent / "uv")
    from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        index = root / "whl" / "rocm6.2"
        make_torch_set(index, "2.5.1+rocm6.2", triton="pytorch-triton-rocm==3.1.0", hip="6.2")
        make_wheel(index, "torchvision", "0.20.1+rocm6.2", requires=["torch==2.5.1+rocm6.2"])
        make_wheel(index, "torchaudio", "2.5.1+rocm6.2", requires=["torch==2.5.1+rocm6.2"])
        req = Path(tmp) / "req.in"
        req.write_text("torch==2.5.1+rocm6.2\ntorchvision==0.20.1+rocm6.2\ntorchaudio==2.5.1+rocm6.2\n")
        cpu = root / "whl" / "cpu"
        make_wheel(cpu, "torch", "2.13.0+cpu")
        with IndexServer(root) as srv:
            uv_cmd = [
                uv, "pip", "compile", str(req), "--index-url", srv.index_url("whl/rocm6.2"),
                "--python-version", "3.11", "--no-cache", "--quiet",
            ]  # fmt: skip
            t_uv = best_of(uv_cmd, runs, "uv")
            # Online, warm: the index answered minutes ago and its answer is still fresh, so the
            # output cache replays the plan (issue 31: <= 200 ms).
            online = [py, "-m", "rocmkit", "resolve", "--json", "--backend", "cpu"]
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "ROCMKIT_CACHE_DIR": cache, "ROCMKIT_INDEX_BASE": f"{srv.url}/whl"}
                env.pop("ROCMKIT_OFFLINE", None)
                best_of(online, 1, "", env)  # asks the index, fills the caches
                t_online = best_of(online, runs, "online", env)
    print(
        f"this machine, online, warm (index fresh)    {t_online * 1000:8.1f} ms  cpu {CPU['online'] * 1000:7.1f} ms"
    )
    print(
        f"uv pip compile (local index, no cache)      {t_uv * 1000:8.1f} ms  cpu {CPU['uv'] * 1000:7.1f} ms"
    )
    t_torch = best_of([py, "-c", "import torch"], max(3, runs // 2), "torch")
    print(
        f'python -c "import torch"                    {t_torch * 1000:8.1f} ms  cpu {CPU["torch"] * 1000:7.1f} ms'
    )
    print(
        f"ratio rocmkit / uv pip compile:  wall {t_rocmkit / t_uv:5.2f}  cpu {CPU['rocmkit'] / CPU['uv']:5.2f}"
    )
    print(
        f"ratio rocmkit / import torch:    wall {t_rocmkit / t_torch:5.2f}  cpu {CPU['rocmkit'] / CPU['torch']:5.2f}"
    )


if __name__ == "__main__":
    main()
