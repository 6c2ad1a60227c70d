"""What does resolving the whole closure cost (`rocmkit resolve --closure`, issue 36)?

In one run, on one machine, each command a fresh process (interpreter start included), best of N:
  * `rocmkit resolve --json --with tinyextra`, online and warm (the index answers cached, as a
    rerun within 15 minutes finds them): the plan alone;
  * `rocmkit resolve --closure --json --with tinyextra`, online and warm: the plan and the whole
    closure uv resolves from the sources the install would use;
  * the peer: uv's own dry run of the same closure, `uv pip install --dry-run` of the same
    requirements from the same indexes into an empty venv (and `uv pip compile`, which is what
    rocmkit runs);
  * `rocmkit resolve --offline --json`: offline resolve, which asks no index and no uv.
The indexes are a real PEP 503/691 index on 127.0.0.1 (tests.support.pkgindex) standing for
PyTorch's CPU index and PyPI (matrices/ copied, its PyPI pointed there), so no network is
involved and the figures are this machine's, not a mirror's. The claim: warm `--closure` within
1.5x of uv's dry run.

    .venv/bin/python benchmarks/bench_resolve_closure.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def best_of(argv: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False, cwd=REPO, env=env)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv[:4])} failed: {(proc.stderr or proc.stdout).strip()[-600:]}")
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    from rocmkit.install.venv import find_uv
    from rocmkit.util.paths import shipped_matrices_dir
    from tests.support.pkgindex import IndexServer, make_torch_set, make_wheel

    uv = find_uv()
    if uv is None:
        raise SystemExit("uv is needed (pip install uv)")
    work = Path(tempfile.mkdtemp(prefix="rocmkit-bench-closure-"))
    try:
        root = work / "index"
        cpu = root / "whl" / "cpu"
        make_torch_set(cpu, "2.13.0+cpu", extra_requires=["filelock", "typing-extensions>=4.10", "sympy>=1.13"])
        make_wheel(cpu, "torchvision", "0.28.0+cpu", requires=["torch==2.13.0", "numpy"])
        make_wheel(cpu, "torchaudio", "2.11.0+cpu", requires=["torch==2.13.0"])
        pypi = root / "pypi"
        for name, version, requires in (
            ("triton", "3.8.0", ()),
            ("numpy", "2.0.0", ()),
            ("filelock", "3.16.0", ()),
            ("typing-extensions", "4.12.0", ()),
            ("sympy", "1.13.3", ("mpmath>=1.1",)),
            ("mpmath", "1.3.0", ()),
            ("tinyextra", "1.0.0", ("torch", "numpy", "filelock")),
        ):
            make_wheel(pypi, name, version, requires=list(requires))
        data = work / "matrices"
        with IndexServer(root) as srv:
            shutil.copytree(shipped_matrices_dir(), data)
            channels = data / "channels.toml"
            channels.write_text(channels.read_text().replace('"https://pypi.org/simple"', f'"{srv.index_url("pypi")}"'))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ROCMKIT_", "PIP_", "UV_"))}
            env.update(
                ROCMKIT_MATRICES_DIR=str(data),
                ROCMKIT_CACHE_DIR=str(work / "cache"),
                ROCMKIT_INDEX_BASE=f"{srv.url}/whl",
                ROCMKIT_ALLOW_INSECURE_INDEX="1",
                PIP_INDEX_URL=srv.index_url("pypi"),
                UV_CACHE_DIR=str(work / "uv-cache"),
                HOME=str(work / "home"),
            )
            rk = [sys.executable, "-m", "rocmkit", "resolve", "--json"]
            closure_argv = [*rk, "--closure", "--with", "tinyextra"]
            # Warm: the index answers and uv's cache hold what the runs ask for.
            subprocess.run(closure_argv, capture_output=True, check=True, cwd=REPO, env=env, timeout=300)
            import json

            plan = json.loads(subprocess.run(closure_argv, capture_output=True, text=True, check=True, cwd=REPO, env=env, timeout=300).stdout)
            reqs = [*plan["requirements"], "tinyextra"]
            indexes: list[str] = []
            for url in plan["index_urls"][:-1]:
                indexes += ["--index", url]
            indexes += ["--default-index", plan["index_urls"][-1]]
            venv = work / "venv"
            subprocess.run([uv, "venv", "-q", str(venv)], check=True, env=env, timeout=120)
            dry = [uv, "pip", "install", "--dry-run", "--python", str(venv / "bin/python"), *reqs, *indexes]
            compile_argv = [uv, "pip", "compile", "-q", "--python-version", plan["python"], "-", *indexes]
            compile_file = work / "reqs.in"
            compile_file.write_text("\n".join(reqs) + "\n")
            compile_argv[compile_argv.index("-")] = str(compile_file)
            for argv in (dry, compile_argv):
                subprocess.run(argv, capture_output=True, check=True, env=env, timeout=120)

            # --with keeps the output cache out of both rows (a plain rerun replays the first output).
            plan_only = best_of([*rk, "--with", "tinyextra"], args.runs, env)
            with_closure = best_of(closure_argv, args.runs, env)
            uv_dry = best_of(dry, args.runs, env)
            uv_compile = best_of(compile_argv, args.runs, env)
            offline = best_of([*rk, "--offline"], args.runs, {**env, "ROCMKIT_CACHE_DIR": str(work / "cold")})
        print(f"closure: {len(plan['closure'])} packages ({', '.join(plan['closure'])})")
        print(f"rocmkit resolve --json --with tinyextra (online, warm)     {plan_only * 1000:7.0f} ms")
        print(f"rocmkit resolve --closure --json --with tinyextra (warm)   {with_closure * 1000:7.0f} ms")
        print(f"uv pip install --dry-run of the same closure (peer)        {uv_dry * 1000:7.0f} ms")
        print(f"uv pip compile of the same requirements                    {uv_compile * 1000:7.0f} ms")
        print(f"rocmkit resolve --offline --json                           {offline * 1000:7.0f} ms")
        print(
            f"--closure costs {(with_closure - plan_only) * 1000:.0f} ms over the plan alone; "
            f"{with_closure / uv_dry:.2f}x uv's dry run (claim: within 1.5x)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
