"""How long does `rocmkit install` take against `uv pip install` of the same wheels?

One run, one machine, one local index, so the ratios hold even on a busy box:

  * the wheels: this interpreter's own torch (a CPU build, e.g. the .venv's 2.13.0+cpu) and
    the distributions it requires, rebuilt as wheels from what is installed
    (tests.support.installed_wheels; cached between runs), or ``--wheels DIR``;
  * served as ``/whl/cpu`` by one PEP 691 index on 127.0.0.1 (tests.support.pkgindex) for
    the whole run, with one uv cache: after a warm-up install, both tools link from it;
  * each round, alternating, into a fresh ``uv venv``:
      - ``uv pip install torch==V`` (the peer);
      - the peer then ``python -c "import torch"`` (what a careful user runs to check);
      - ``rocmkit install --venv V --backend cpu --torch X.Y --skip companions --index-base URL``:
        resolve, the live index check, the journal, uv, the guard, and the verification (a
        child imports torch and writes the byte code of what it loads);
      - the same with ``--skip verify`` (rocmkit's own cost beside uv's; ``--no-verify`` before);
  * after each install, a later ``import torch`` in that venv (what the next command pays);
  * ``--cold``: one more round where each tool starts with an empty uv cache (downloads and
    unpacks the wheels from 127.0.0.1, as a first install does).

rocmkit's run probes every planned index, PyPI included (the plan's default index), so this
needs PyPI reachable; ``--saved-plan`` installs a saved plan naming only the local index
instead (no resolve, no PyPI).

    .venv/bin/python benchmarks/bench_install.py [--rounds 5] [--cold] [--saved-plan]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.installed_wheels import closure, wheel_from_installed  # noqa: E402
from tests.support.pkgindex import IndexServer  # noqa: E402

BIN = Path(sys.executable).parent
UV = str(BIN / "uv")
ROCMKIT = [sys.executable, "-m", "rocmkit"]


def wheels_folder(given: Path | None) -> tuple[Path, str]:
    """The folder of wheels to serve, and the torch version they hold."""
    version = metadata.version("torch")
    if not version.endswith("+cpu"):
        raise SystemExit(
            f"bench_install: this interpreter's torch is {version}; run it from a venv with a CPU torch"
        )
    if given is not None:
        return given, version
    cache = (
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rocmkit-bench" / f"wheels-{version}"
    )
    done = cache / ".complete"
    if not done.is_file():
        shutil.rmtree(cache, ignore_errors=True)
        print(
            f"bench_install: rebuilding torch {version} and its requirements as wheels in {cache}",
            file=sys.stderr,
        )
        for name in closure(("torch",)):
            wheel_from_installed(name, cache)
        done.write_text("")
    return cache, version


def timed(argv: Sequence[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=900, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench_install: {' '.join(argv[:4])} ... failed:\n{proc.stderr.strip()[-1500:]}")
    return took


def fresh_venv(path: Path, env: dict[str, str]) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run(
        [UV, "venv", "-q", "--python", sys.executable, str(path)], env=env, check=True, timeout=120
    )
    return path / "bin" / "python"


def import_torch(python: Path, env: dict[str, str]) -> float:
    return timed([str(python), "-c", "import torch"], env)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--wheels", type=Path, help="serve these wheels instead of rebuilding the installed ones"
    )
    parser.add_argument("--cold", action="store_true", help="one more round with empty uv caches")
    parser.add_argument(
        "--saved-plan", action="store_true", help="install a saved plan naming only the local index"
    )
    args = parser.parse_args(argv)

    folder, version = wheels_folder(args.wheels)
    # rocmkit as installed runs from byte code (pip compiles it): compiled here too, or every
    # rocmkit row would pay for compiling rocmkit itself (PYTHONDONTWRITEBYTECODE boxes).
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "rocmkit")], check=True, timeout=300)
    work = Path(tempfile.mkdtemp(prefix="rocmkit-bench-install-"))
    root = work / "index"
    served = root / "whl" / "cpu"
    served.mkdir(parents=True)
    for wheel in folder.glob("*.whl"):
        try:
            os.link(wheel, served / wheel.name)  # the index serves regular files only
        except OSError:
            shutil.copy2(wheel, served / wheel.name)
    env = dict(os.environ)
    for var in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "VIRTUAL_ENV", "PYTHONPATH"):
        env.pop(var, None)
    env.update(
        UV_CACHE_DIR=str(work / "uv-cache"),
        UV_NO_CONFIG="1",
        ROCMKIT_ALLOW_INSECURE_INDEX="1",  # http://127.0.0.1
        XDG_CACHE_HOME=str(work / "xdg-cache"),
        PYTHONPATH=str(REPO),
    )
    release = ".".join(version.split(".")[:2])
    rows: dict[str, list[float]] = {}
    try:
        with IndexServer(root) as srv:
            base = f"{srv.url}/whl"
            index = f"{base}/cpu"
            uv_cmd = ["pip", "install", "-q", f"torch=={version}", "--index", index, "--default-index", index]
            if args.saved_plan:
                plan = {
                    "schema": "rocmkit.plan/1",
                    "backend": "cpu",
                    "torch_version": version,
                    "requirements": [f"torch=={version}"],
                    "index_urls": [index + "/"],
                }
                plan_file = work / "plan.json"
                plan_file.write_text(json.dumps(plan))
                rk_args = ["--plan", str(plan_file)]
            else:
                rk_args = ["--backend", "cpu", "--torch", release, "--skip", "companions", "--index-base", base]

            def uv_row(venv: Path, cache_env: dict[str, str]) -> float:
                python = fresh_venv(venv, cache_env)
                return timed([UV, *uv_cmd, "--python", str(python)], cache_env)

            def rk_row(venv: Path, cache_env: dict[str, str], *extra: str) -> float:
                fresh_venv(venv, cache_env)
                return timed(
                    [*ROCMKIT, "install", "--venv", str(venv), *rk_args, "--installer", "uv", *extra],
                    cache_env,
                )

            print(f"bench_install: warming uv's cache from {index}", file=sys.stderr)
            uv_row(work / "warm", env)
            for n in range(args.rounds):
                took = uv_row(work / "uv", env)
                rows.setdefault("uv pip install", []).append(took)
                later = import_torch(work / "uv" / "bin" / "python", env)
                rows.setdefault("uv pip install + import torch", []).append(took + later)
                rows.setdefault("  later import torch (after uv)", []).append(later)
                rows.setdefault("rocmkit install --skip verify", []).append(
                    rk_row(work / "rkn", env, "--skip", "verify")
                )
                rows.setdefault("rocmkit install", []).append(rk_row(work / "rk", env))
                rows.setdefault("  later import torch (after rocmkit)", []).append(
                    import_torch(work / "rk" / "bin" / "python", env)
                )
                print(f"bench_install: round {n + 1}/{args.rounds} done", file=sys.stderr)
            if args.cold:
                # Each tool with a cache of its own, empty: downloads and unpacks from 127.0.0.1.
                rows["uv pip install, cold cache"] = [uv_row(work / "uvc", dict(env, UV_CACHE_DIR=str(work / "c1")))]
                rows["rocmkit install, cold cache"] = [rk_row(work / "rkc", dict(env, UV_CACHE_DIR=str(work / "c2")))]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    dont_write = os.environ.get("PYTHONDONTWRITEBYTECODE", "") not in ("", "0")
    # `uv --version` says "uv 0.13.9 (x86_64-unknown-linux-gnu)": the header keeps the number.
    uv_version = subprocess.run([UV, "--version"], capture_output=True, text=True, timeout=30).stdout.split()
    print(
        f"torch {version}, {args.rounds} rounds, uv {uv_version[1] if len(uv_version) > 1 else '?'}"
        f", PYTHONDONTWRITEBYTECODE {'set' if dont_write else 'unset'}, {os.cpu_count()} CPUs"
    )
    print(f"{'':44} {'median':>8} {'best':>8}   runs")
    for label, values in rows.items():
        runs = " ".join(f"{v:.2f}" for v in values)
        print(f"{label:44} {statistics.median(values):7.2f}s {min(values):7.2f}s   {runs}")
    # Both floors, each with its runs: the ratio of each round (the tools ran back to back in
    # it, so a load that comes and goes moves both), then the ratio of the medians.
    for label in ("rocmkit install", "rocmkit install --skip verify"):
        mine = statistics.median(rows[label])
        for floor, peer in (("uv pip install", rows["uv pip install"]),
                            ("uv pip install + import torch", rows["uv pip install + import torch"])):
            per_round = [m / p for m, p in zip(rows[label], peer, strict=True)]
            print(f"ratio {label} / {floor}: {mine / statistics.median(peer):.2f} (medians); rounds "
                  + " ".join(f"{r:.2f}" for r in per_round))
    if args.cold:
        cold = rows["rocmkit install, cold cache"][0] / rows["uv pip install, cold cache"][0]
        print(f"ratio rocmkit install / uv pip install, cold cache: {cold:.2f}")


if __name__ == "__main__":
    main()
