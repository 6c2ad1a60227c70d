"""Time `rocmkit doctor` per level: the fork server against one child per check, cold and warm.

    python benchmarks/bench_doctor.py [--levels 0,1,2] [--repeat 1] [--backend cpu]
    python benchmarks/bench_doctor.py --baseline DIR [--repeat 2]   # level 2 against another tree

``--baseline DIR`` (a checkout of an earlier commit: ``git worktree add DIR 5ba11a0``) times
level 2 only, cold then warm, this tree against DIR's rocmkit in the same run and interleaved
(old cold, new cold, old warm, new warm per round), so a machine others load slows both
alike; it prints each run (wall and the CPU seconds of its whole process tree), the ratios
new/old, and the per-check times of the last round.

Each run is a fresh process, as a user or a Slurm prolog starts it. "cold" uses an
empty ROCMKIT_CACHE_DIR (no detection cache, empty Triton and inductor caches);
"warm" reruns with the cache the cold run filled. The baseline is the same doctor
with `--isolation spawn`: one fresh Python per isolated check, each importing torch
(and Triton) again, one check at a time. The ratios are fork / spawn (lower is
faster) and warm / cold. Then the per-check times of the highest level, with the
five slowest, and the peer for level 0: `python -m torch.utils.collect_env`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, int, dict[str, Any] | None]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO, timeout=1200, check=False)
    took = time.perf_counter() - start
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    return took, proc.returncode, report


def _doctor(
    level: int, cache: Path, *extra: str, env_extra: dict[str, str] | None = None
) -> tuple[float, int, dict[str, Any] | None]:
    env = {**os.environ, "ROCMKIT_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO), **(env_extra or {})}
    env.pop("TRITON_CACHE_DIR", None)
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    return _time([sys.executable, "-m", "rocmkit", "doctor", "--level", str(level), "--json", *extra], env)


def _cold_warm(level: int, *extra: str) -> tuple[float, float, dict[str, Any] | None, dict[str, Any] | None]:
    with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as tmp:
        cold, _, cold_report = _doctor(level, Path(tmp), *extra)
        warm, _, warm_report = _doctor(level, Path(tmp), *extra)
    return cold, warm, cold_report, warm_report


def _durations(report: dict[str, Any] | None) -> dict[str, float]:
    return {r["name"]: float(r["duration_s"]) for r in (report or {}).get("results", ())}


def _hit_rate(report: dict[str, Any] | None) -> str:
    caches = (report or {}).get("caches") or {}
    if not caches:
        return "-"
    return ", ".join(
        f"{k} {int(v['hits'])}/{int(v['hits'] + v['misses'])}" for k, v in sorted(caches.items())
    )


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _tree_doctor(
    tree: Path, cache: Path, work: Path, *extra: str
) -> tuple[float, int, dict[str, Any] | None, float]:
    """The doctor of ``tree`` (its rocmkit first on the path; run from ``work``, since the
    folder a ``python -m`` starts in comes before PYTHONPATH), and the CPU seconds of its whole
    process tree (every process it waited for: its workers, their forks, the compilers), which a
    machine others load changes far less than the wall time."""
    env = {**os.environ, "ROCMKIT_CACHE_DIR": str(cache), "PYTHONPATH": str(tree)}
    for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "ROCMKIT_OFFLINE"):
        env.pop(var, None)
    env["ROCMKIT_OFFLINE"] = "1"  # the plan from the packaged data: no index in the timing
    argv = [sys.executable, "-m", "rocmkit", "doctor", "--level", "2", "--json", *extra]
    start, cpu = time.perf_counter(), _children_cpu()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=work, timeout=1800, check=False)
    took = time.perf_counter() - start
    report = json.loads(proc.stdout) if proc.stdout.startswith("{") else None
    return took, proc.returncode, report, _children_cpu() - cpu


def against(baseline: Path, repeat: int, extra: tuple[str, ...]) -> int:
    """Level 2, cold and warm, this tree against ``baseline``, interleaved."""
    trees = {"old": baseline.resolve(), "new": REPO}
    walls: dict[str, list[float]] = {f"{t} {k}": [] for t in trees for k in ("cold", "warm")}
    cpus: dict[str, list[float]] = {key: [] for key in walls}
    last: dict[str, dict[str, Any] | None] = {}
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    print(f"old = {trees['old']}, new = {trees['new']}; doctor --level 2 --json {' '.join(extra)}")
    for rnd in range(1, repeat + 1):
        with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as tmp:
            work = Path(tmp)
            for kind in ("cold", "warm"):
                for tree, path in trees.items():
                    took, code, report, cpu = _tree_doctor(path, work / f"cache-{tree}", work, *extra)
                    walls[f"{tree} {kind}"].append(took)
                    cpus[f"{tree} {kind}"].append(cpu)
                    last[f"{tree} {kind}"] = report
                    verdict = report["verdict"] if report else "no report"
                    print(f"  round {rnd} {tree} {kind}: {took:7.1f} s, CPU {cpu:5.1f} s (exit {code}, {verdict}), "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\n{'':10} {'old (s)':>9} {'new (s)':>9} {'new/old':>8}   runs old | new")
    for kind in ("cold", "warm"):
        old, new = statistics.median(walls[f"old {kind}"]), statistics.median(walls[f"new {kind}"])
        runs = f"{' '.join(f'{v:.1f}' for v in walls[f'old {kind}'])} | {' '.join(f'{v:.1f}' for v in walls[f'new {kind}'])}"
        print(f"level 2 {kind:4} {old:9.1f} {new:9.1f} {new / old:8.2f}   {runs}")
    for kind in ("cold", "warm"):
        old, new = statistics.median(cpus[f"old {kind}"]), statistics.median(cpus[f"new {kind}"])
        runs = f"{' '.join(f'{v:.1f}' for v in cpus[f'old {kind}'])} | {' '.join(f'{v:.1f}' for v in cpus[f'new {kind}'])}"
        print(f"CPU s {kind:6} {old:9.1f} {new:9.1f} {new / old:8.2f}   {runs}")
    names = [n for k in last for n in _durations(last[k])]
    order = sorted(set(names), key=lambda n: -max(_durations(last[k]).get(n, 0.0) for k in last))
    print("\nper check, last round (s; checks overlap: two run at once on two cores)")
    print(f"{'check':28} {'old cold':>9} {'new cold':>9} {'old warm':>9} {'new warm':>9}")
    for name in order[:14]:
        row = [_durations(last[k]).get(name) for k in ("old cold", "new cold", "old warm", "new warm")]
        print(f"{name:28} " + " ".join(f"{v:9.2f}" if v is not None else f"{'-':>9}" for v in row))
    for kind in ("cold", "warm"):
        for r in (last.get(f"new {kind}") or {}).get("results", ()):
            if r["name"].startswith("compile."):
                print(f"new {kind} {r['name']}: {r['status']}: {r['message'][:150]}")
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--levels", default="0,1,2")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--backend", default=None, help="pass --backend to the doctor (default: detected)")
    ap.add_argument("--baseline", type=Path, help="another rocmkit tree: level 2 cold and warm against it")
    args = ap.parse_args()
    if args.baseline is not None:
        return against(args.baseline, args.repeat, ("--backend", args.backend) if args.backend else ())
    levels = [int(x) for x in args.levels.split(",")]
    backend = ("--backend", args.backend) if args.backend else ()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start")
    head = (
        f"{'level':>5}  {'spawn cold':>10}  {'spawn warm':>10}  {'fork cold':>9}  {'fork warm':>9}  "
        f"{'fork/spawn cold':>15}  {'fork/spawn warm':>15}  {'warm/cold fork':>14}  {'checks':>6}  "
        f"{'verdict':7}  warm cache hits"
    )
    print(head)
    last: dict[str, dict[str, Any] | None] = {}
    for level in levels:
        runs: dict[str, list[float]] = {"sc": [], "sw": [], "fc": [], "fw": []}
        verdict, n, hits = "?", 0, "-"
        for _ in range(args.repeat):
            sc, sw, spawn_report, _ = _cold_warm(level, "--isolation", "spawn", *backend)
            fc, fw, fork_report, warm_report = _cold_warm(level, "--isolation", "fork", *backend)
            for key, value in zip(("sc", "sw", "fc", "fw"), (sc, sw, fc, fw), strict=True):
                runs[key].append(value)
            last = {"spawn": spawn_report, "fork": fork_report}
            if fork_report:
                verdict = str(fork_report["verdict"])
                n = len(fork_report["results"])
            hits = _hit_rate(warm_report)
        sc, sw, fc, fw = (statistics.median(runs[k]) for k in ("sc", "sw", "fc", "fw"))
        print(
            f"{level:>5}  {sc:10.2f}  {sw:10.2f}  {fc:9.2f}  {fw:9.2f}  {fc / sc:15.2f}  {fw / sw:15.2f}  "
            f"{fw / fc:14.2f}  {n:>6}  {verdict:7}  {hits}"
        )
    spawn_s, fork_s = _durations(last.get("spawn")), _durations(last.get("fork"))
    ran = {k: v for k, v in spawn_s.items() if v > 0 or fork_s.get(k, 0) > 0}
    print(f"\nper check at level {levels[-1]}, cold (s; fork times overlap: checks run concurrently)")
    print(f"{'check':28}  {'spawn':>7}  {'fork':>7}  {'fork/spawn':>10}")
    for name in sorted(ran, key=lambda k: -spawn_s[k]):
        f = fork_s.get(name, 0.0)
        ratio = f"{f / spawn_s[name]:10.2f}" if spawn_s[name] else f"{'-':>10}"
        print(f"{name:28}  {spawn_s[name]:7.2f}  {f:7.2f}  {ratio}")
    top = sorted(fork_s.items(), key=lambda kv: -kv[1])[:5]
    print("top five with the fork server: " + ", ".join(f"{k} {v:.2f} s" for k, v in top))
    # On the CPU the kernels run interpreted (nothing to cache); ahead-of-time codegen for
    # a GPU arch compiles for real, so it shows what the compile cache under
    # ROCMKIT_CACHE_DIR buys on a GPU node's second run.
    codegen = {"ROCMKIT_KERNEL_CODEGEN_TARGETS": "gfx942,gfx90a"}
    with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as tmp:
        cold, rc, _ = _doctor(1, Path(tmp), "--only", "triton.codegen", env_extra=codegen)
        warm, _, report = _doctor(1, Path(tmp), "--only", "triton.codegen", env_extra=codegen)
    if rc in (0, 2) and report:
        print(
            f"triton.codegen gfx942+gfx90a: cold {cold:.2f} s, warm {warm:.2f} s, warm/cold "
            f"{warm / cold:.2f}, warm cache hits {_hit_rate(report)}"
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
        ours_warm, _, _ = _doctor(0, Path(tmp))
    peer, rc, _ = _time([sys.executable, "-m", "torch.utils.collect_env"], dict(os.environ))
    print(
        f"level 0 vs `python -m torch.utils.collect_env`: cold {ours:.2f} s, warm {ours_warm:.2f} s "
        f"vs {peer:.2f} s (ratio warm {ours_warm / peer:.2f}; collect_env exit {rc})"
    )
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
