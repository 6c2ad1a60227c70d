"""The longest silence on a terminal: `rocmkit doctor`, `install` and `bench models` with their
stderr on a pseudo-terminal (issue 31: nothing silent for more than 2 s); with ``--piped``, the
longest silence of `rocmkit doctor --level 2` with its output on a pipe, as Slurm and CI log it
(issue 38: a line at least every 5 s).

The test suite asserts these properties on clocks it controls (tests/unit/test_ticker.py,
tests/integration/test_progress_piped.py); this measures them in wall-clock seconds.

Each command runs as a user's shell runs it, stderr on a fresh pty (tests/support/pty_run.py),
and every chunk it writes is timed; the figure is the longest stretch in which the terminal got
nothing, from the start to the exit. Every command starts cold: a fresh ROCMKIT_CACHE_DIR
(detection, compile caches), and for install a fresh venv and uv cache.

``--baseline DIR`` runs the same commands, in the same run, with the rocmkit found at DIR (an
unpacked earlier commit: ``git archive COMMIT | tar -x -C DIR``) as the peer.

    python benchmarks/bench_progress.py --index-root IDX [--baseline DIR] [--only doctor,install,bench]
    python benchmarks/bench_progress.py --piped [--baseline DIR]

IDX holds ``whl/cpu/`` with a CPU torch and its dependencies as wheels (served on 127.0.0.1 by
tests/support/pkgindex.py); without it the install row is left out.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.pkgindex import IndexServer  # noqa: E402
from tests.support.pty_run import PtyRun, run_on_pty  # noqa: E402


def run(label: str, tree: Path, argv: list[str], extra_env: dict[str, str], work: Path) -> PtyRun:
    env = {**os.environ, **extra_env, "PYTHONPATH": str(tree)}
    env.pop("ROCMKIT_OFFLINE", None)
    # Not the tree's folder: `python -m rocmkit` would import the rocmkit in the working folder.
    cwd = Path.cwd()
    os.chdir(work)
    try:
        result = run_on_pty([sys.executable, "-m", "rocmkit", *argv], env=env, timeout=1800)
    finally:
        os.chdir(cwd)
    gap, at, before = result.longest_gap()
    last = before.replace("\r", "").strip()[-70:] or "(nothing yet)"
    print(
        f"  {label:12} exit {result.code}  total {result.ended_s:6.1f} s  longest silent {gap:5.2f} s"
        f"  (from {at:.1f} s, after {last!r})",
        flush=True,
    )
    return result


def piped(label: str, tree: Path, argv: list[str], extra_env: dict[str, str], work: Path) -> None:
    """The command with stdout and stderr on one pipe (``2>&1 | tee log``): every line timed as
    it arrives; the figure is the longest stretch without one, from the start to the exit."""
    import select
    import subprocess
    import time

    env = {**os.environ, **extra_env, "PYTHONPATH": str(tree)}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocmkit", *argv], cwd=work, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    stamps: list[tuple[float, str]] = []
    pending = b""
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], 0.05)
        if not ready:
            continue
        data = os.read(proc.stdout.fileno(), 65536)
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        stamps += [(time.monotonic() - start, line.decode(errors="replace")) for line in lines]
    proc.wait()
    end = time.monotonic() - start
    times = [0.0, *(t for t, _ in stamps), end]
    gaps = [(b - a, i) for i, (a, b) in enumerate(itertools.pairwise(times))]
    gap, at = max(gaps)
    before = stamps[at - 1][1][:70] if at else "(nothing yet)"
    beats = sum("still running" in line for _, line in stamps)
    print(
        f"  {label:12} exit {proc.returncode}  total {end:6.1f} s  lines {len(stamps):3}  'still running' {beats:3}"
        f"  longest silent {gap:5.2f} s (from {times[at]:.1f} s, after {before!r})",
        flush=True,
    )


def seconds_of(text: str) -> float:
    """Seconds from the ticker's duration text ("53 s", "1 min 10 s", "2.3 s", "1 h 5 min")."""
    total = 0.0
    for value, unit in re.findall(r"(\d+(?:\.\d+)?) (h|min|s)\b", text):
        total += float(value) * {"h": 3600, "min": 60, "s": 1}[unit]
    return total


def etas(result: PtyRun) -> None:
    """Each model's first ETA on the status line against the time the run really had left."""
    seen: set[str] = set()
    for at, chunk in result.chunks:
        for text in re.split(r"[\r\n]", chunk):
            # The status line's ETA, or (an older rocmkit, a pipe) the line each model starts with.
            found = re.match(r"\s*model (\d+/\d+) (\S+): .*ETA ([^)]+)\)", text) or re.match(
                r"\[(\d+/\d+)\] (\S+): running \.\.\., about (.+) left", text
            )
            if found and found.group(2) not in seen:
                seen.add(found.group(2))
                left = result.ended_s - at
                name = f"{found.group(1)} {found.group(2)}"
                print(f"      {name:24} first ETA {found.group(3):>10}, really {left:5.1f} s left")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-root", type=Path, help="a folder with whl/cpu/ wheels (torch and its deps)")
    parser.add_argument("--baseline", type=Path, help="another rocmkit tree to run the same commands with")
    parser.add_argument("--only", default="doctor,install,bench", help="which commands, comma-separated")
    parser.add_argument("--torch", default="2.13", help="the torch release the index holds (install)")
    parser.add_argument("--piped", action="store_true", help="doctor --level 2 on a pipe: the longest silence")
    args = parser.parse_args()
    trees = [("this tree", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    if args.piped:
        with tempfile.TemporaryDirectory(prefix="bench-progress-") as tmp:
            print("$ rocmkit doctor --level 2 2>&1 | cat   (cold caches, then warm)")
            for kind in ("cold", "warm"):
                for label, tree in trees:
                    cache = Path(tmp) / f"piped-{label.replace(' ', '-')}"
                    piped(f"{label} {kind}", tree, ["doctor", "--level", "2"], {"ROCMKIT_CACHE_DIR": str(cache)}, Path(tmp))
        return 0
    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-progress-") as tmp:
        work = Path(tmp)
        if "doctor" in only:
            print("$ rocmkit doctor --level 1   (cold caches)")
            for label, tree in trees:
                cache = work / f"doctor-{label.replace(' ', '-')}"
                run(label, tree, ["doctor", "--level", "1"], {"ROCMKIT_CACHE_DIR": str(cache)}, work)
        if "install" in only and args.index_root is not None:
            with IndexServer(args.index_root) as srv:
                print(
                    f"$ rocmkit install --venv V --cpu --torch {args.torch} --no-companions "
                    "--index-base http://127.0.0.1:PORT/whl --allow-insecure-index   (new venv, cold uv cache)"
                )
                for label, tree in trees:
                    name = label.replace(" ", "-")
                    # The old spellings (--cpu, --no-companions, --allow-insecure-index): a baseline tree
                    # from before the option families knows no other, and this one still takes them.
                    argv = [
                        "install", "--venv", str(work / f"venv-{name}"), "--cpu", "--torch", args.torch,
                        "--no-companions", "--index-base", f"{srv.url}/whl", "--allow-insecure-index",
                    ]  # fmt: skip
                    env = {
                        "ROCMKIT_CACHE_DIR": str(work / f"install-{name}"),
                        "UV_CACHE_DIR": str(work / f"uv-{name}"),
                    }
                    run(label, tree, argv, env, work)
        if "bench" in only:
            print("$ rocmkit bench models   (the built-in 5 models, cold compile caches)")
            for label, tree in trees:
                cache = work / f"bench-{label.replace(' ', '-')}"
                result = run(label, tree, ["bench", "models"], {"ROCMKIT_CACHE_DIR": str(cache)}, work)
                etas(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
