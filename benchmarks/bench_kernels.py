"""Triton smoke kernels against their torch peers, and cold against warm compile caches, in one run.

    .venv/bin/python benchmarks/bench_kernels.py [--backend auto|cpu|rocm|cuda] [--repeat 5]
                                                  [--codegen gfx942,sm_90]

Part 1 runs each kernel of `rocmkit doctor` at the sizes its check uses on this backend
and times it against the torch operation it replaces (torch.add, torch.softmax,
F.layer_norm, torch.matmul, torch.bincount), printing both and the ratio
torch_ms / triton_ms (above 1: Triton is faster). On the CPU the kernels run under
Triton's interpreter, so the ratio there measures the interpreter, not a GPU.

Part 2 compiles every kernel ahead of time for each --codegen target twice in fresh
processes sharing one TRITON_CACHE_DIR, and prints cold seconds, warm seconds and the
speedup the compile cache under rocmkit's cache folder gives a second doctor run.
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

REPO = Path(__file__).resolve().parent.parent


def child(backend: str, repeat: int) -> int:
    """Runs in a fresh process whose environment already has TRITON_INTERPRET set as needed."""
    import torch

    from rocmkit.kernels import atomics, layernorm, matmul, softmax, timing, vector_add
    from rocmkit.kernels.sizes import kernel_sizes

    sizes = kernel_sizes(backend, {"repeats": repeat})
    dev = "cpu" if backend == "cpu" else "cuda"
    half = torch.float32 if dev == "cpu" else torch.float16
    g = torch.Generator().manual_seed(0)
    rows: list[dict[str, object]] = []

    def pair(name: str, triton_fn: object, torch_fn: object) -> None:
        t_ms, method, _ = timing.measure_ms(triton_fn, device=dev, repeats=repeat)  # type: ignore[arg-type]
        p_ms, _, _ = timing.measure_ms(torch_fn, device=dev, repeats=repeat)  # type: ignore[arg-type]
        rows.append(
            {"kernel": name, "triton_ms": t_ms, "torch_ms": p_ms, "ratio": p_ms / t_ms, "method": method}
        )

    n = sizes["vector_add_n"]
    x, y = torch.randn(n, generator=g).to(dev), torch.randn(n, generator=g).to(dev)
    pair("vector_add", lambda: vector_add.add(x, y), lambda: torch.add(x, y))
    r, c = sizes["softmax_shape"]
    s = torch.randn(r, c, generator=g).to(dev)
    pair("softmax", lambda: softmax.softmax(s), lambda: torch.softmax(s, dim=-1))
    r, c = sizes["layernorm_shape"]
    ln = torch.randn(r, c, generator=g).to(dev, half)
    w, b = torch.rand(c, generator=g).to(dev, half), torch.rand(c, generator=g).to(dev, half)
    pair(
        "layernorm",
        lambda: layernorm.layer_norm(ln, w, b, 1e-5, block_size=sizes["layernorm_block"]),
        lambda: torch.nn.functional.layer_norm(ln, (c,), w, b, 1e-5),
    )
    m, nn, k = sizes["matmul_shape"]
    a, bb = torch.randn(m, k, generator=g).to(dev, half), torch.randn(k, nn, generator=g).to(dev, half)
    cfg = matmul.configs_for(backend)[0]
    pair("matmul", lambda: matmul.matmul(a, bb, cfg), lambda: torch.matmul(a, bb))
    v = torch.randint(0, sizes["histogram_bins"], (sizes["histogram_n"],), generator=g, dtype=torch.int32).to(dev)
    pair(
        "atomics",
        lambda: atomics.histogram(v, sizes["histogram_bins"]),
        lambda: torch.bincount(v, minlength=sizes["histogram_bins"]),
    )
    print(json.dumps(rows))
    return 0


def run_kernels(backend: str, repeat: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("TRITON_INTERPRET", None)
    if backend == "cpu":
        env["TRITON_INTERPRET"] = "1"
    proc = subprocess.run(
        [sys.executable, __file__, "--child", "--backend", backend, "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"kernel run failed: {proc.stderr[-2000:]}")
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    label = "Triton interpreter on the CPU" if backend == "cpu" else backend
    print(f"kernels vs torch ({label}; ratio = torch_ms / triton_ms, >1 means Triton is faster)")
    print(f"{'kernel':12} {'triton ms':>12} {'torch ms':>12} {'ratio':>10}  timing")
    for row in rows:
        print(
            f"{row['kernel']:12} {row['triton_ms']:12.4f} {row['torch_ms']:12.4f} {row['ratio']:10.4g}  {row['method']}"
        )


def run_codegen(targets: list[str]) -> None:
    print("\nahead-of-time compile, cold vs warm Triton cache (fresh process each)")
    print(f"{'target':10} {'cold s':>8} {'warm s':>8} {'speedup':>8}")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(REPO)
    for target in targets:
        with tempfile.TemporaryDirectory(prefix="rocmkit-bench-") as cache:
            env["TRITON_CACHE_DIR"] = cache
            times = []
            for _ in range(2):
                start = time.perf_counter()
                proc = subprocess.run(
                    [sys.executable, "-m", "rocmkit.kernels.aot", target],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=1200,
                    check=False,
                )
                times.append(time.perf_counter() - start)
                if proc.returncode != 0:
                    raise SystemExit(f"compiling for {target} failed: {proc.stderr[-1000:]}")
            print(f"{target:10} {times[0]:8.2f} {times[1]:8.2f} {times[0] / times[1]:7.1f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--backend", default="auto", choices=["auto", "cpu", "rocm", "cuda"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--codegen", default="gfx942", help="comma-separated targets; empty to skip")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    backend = args.backend
    if backend == "auto":
        from rocmkit.detect import detect_machine

        backend = detect_machine().backend_kind
    if args.child:
        return child(backend, args.repeat)
    run_kernels(backend, args.repeat)
    targets = [t.strip() for t in args.codegen.split(",") if t.strip()]
    if targets:
        run_codegen(targets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
