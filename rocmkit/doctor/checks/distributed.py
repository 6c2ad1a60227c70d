"""Level 3: the multi-GPU check, a torch.distributed all-reduce.

Within one node rocmkit starts one worker process per local GPU (backend
``nccl``, which is RCCL on ROCm builds); on a CPU-only node it starts two
workers with the ``gloo`` backend on 127.0.0.1 so that the same code path runs
for real. Under a launcher (Slurm ``srun --ntasks-per-node=1`` or ``torchrun
--nproc-per-node=1``) each node's doctor is one *node rank*: it still starts
one worker per local GPU, and the workers of all nodes meet at
``MASTER_ADDR:MASTER_PORT``.

Each worker checks the sum (every element, as rccl-tests counts ``#wrong``)
and times in-place all-reduces per message size; bus bandwidth follows
rccl-tests: ``busbw = algbw * 2*(n-1)/n``. Every wait has a timeout, so a peer
that never joins or a collective that hangs is reported, not waited on.

Workers are this module run as ``python -m rocmkit.doctor.checks.distributed``,
started through :func:`rocmkit.proc.runner.run` (its timeout kills a hung worker's
process group); each prints one JSON line.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rocmkit.doctor.registry import CheckContext, check
from rocmkit.doctor.result import CheckResult, Figure, Status
from rocmkit.proc.result_file import write_result
from rocmkit.proc.runner import CommandResult
from rocmkit.pyenv import run_json

NAME = "distributed.all_reduce"
DISTRIBUTED_OPTIONS = {
    "distributed_timeout_s": "seconds the rendezvous may take",
    "distributed_work_budget_s": "seconds the all-reduce sweep may take",
    "cpu_procs": "processes on the CPU (gloo) path",
    "allreduce_sizes": "message sizes in bytes (a list)",
    "allreduce_iters": "timed all-reduces per size",
    "allreduce_warmup": "untimed all-reduces per size",
}

# rccl-tests' default sweep is 8 B .. 128 MiB; a few points of it are enough to
# see both the latency-bound and the bandwidth-bound ends.
GPU_SIZES = (8, 1024, 65536, 1 << 20, 16 << 20, 128 << 20)
CPU_SIZES = (8, 1024, 65536, 1 << 20)
DEFAULT_RENDEZVOUS_TIMEOUT_S = 60.0
# Time a worker may take beyond the rendezvous: importing torch, the sweep.
DEFAULT_WORK_BUDGET_S = 120.0
DEFAULT_MASTER_PORT = "29500"  # torch.distributed's own default

REMEDY_HANG = (
    "run with NCCL_DEBUG=INFO to see where it stops; on ROCm check that `iommu=pt` is on the "
    "kernel command line and that no peer GPU is busy or reset"
)
REMEDY_RENDEZVOUS = (
    "start the doctor on every node (srun --ntasks-per-node=1 / torchrun --nproc-per-node=1), "
    "with the same MASTER_ADDR and MASTER_PORT, reachable from every node, and the same GPU count"
)


@dataclass(frozen=True, kw_only=True)
class Layout:
    """Which workers this node starts and how they meet."""

    backend: str  # "nccl" (RCCL on ROCm) or "gloo"
    device: str  # "cuda" (also ROCm) or "cpu"
    procs_per_node: int
    node_rank: int
    nnodes: int
    master_addr: str
    master_port: str

    @property
    def world_size(self) -> int:
        return self.procs_per_node * self.nnodes


class LayoutError(Exception):
    """The launcher variables do not describe a usable job."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (for a node-local rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def launcher_ranks(env: Mapping[str, str]) -> tuple[int, int] | None:
    """(node_rank, nnodes) under torchrun or Slurm, None when not launched as a multi-node job.

    One doctor runs per node, so the launcher's RANK / WORLD_SIZE (torchrun)
    or SLURM_PROCID / SLURM_NTASKS count nodes, not GPUs; a launch with more
    than one task per node is refused rather than misread.
    """
    for rank_var, size_var, per_node_var in (
        ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_NTASKS_PER_NODE"),
    ):
        if env.get(size_var):
            per_node = env.get(per_node_var, "1").split("(")[0]  # Slurm may say "1(x4)"
            if per_node not in ("", "1"):
                raise LayoutError(
                    f"{per_node_var}={env[per_node_var]}: start one doctor per node "
                    "(srun --ntasks-per-node=1 / torchrun --nproc-per-node=1); it starts one worker per GPU itself"
                )
            try:
                rank, size = int(env.get(rank_var, "0")), int(env[size_var])
            except ValueError as exc:
                raise LayoutError(
                    f"{rank_var}={env.get(rank_var)!r} / {size_var}={env.get(size_var)!r} are not integers"
                ) from exc
            if size < 1 or not 0 <= rank < size:
                raise LayoutError(f"{rank_var}={rank} is outside {size_var}={size}")
            return (rank, size) if size > 1 else None
    return None


def plan_layout(env: Mapping[str, str], *, backend: str, local_gpus: int, cpu_procs: int = 2) -> Layout:
    """Decide the workers from the backend, the local GPU count and the launcher's variables."""
    device = "cpu" if backend == "cpu" else "cuda"
    dist_backend = "gloo" if device == "cpu" else "nccl"
    ranks = launcher_ranks(env)
    if ranks is None:
        procs = cpu_procs if device == "cpu" else local_gpus
        return Layout(
            backend=dist_backend,
            device=device,
            procs_per_node=procs,
            node_rank=0,
            nnodes=1,
            master_addr="127.0.0.1",
            master_port=str(free_port()),
        )
    node_rank, nnodes = ranks
    master = env.get("MASTER_ADDR")
    if not master:
        raise LayoutError(
            "a multi-node launch (WORLD_SIZE/SLURM_NTASKS > 1) needs MASTER_ADDR: set it to the first "
            'node, e.g. export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)'
        )
    # Across nodes, a CPU node contributes one gloo worker.
    procs = 1 if device == "cpu" else local_gpus
    return Layout(
        backend=dist_backend,
        device=device,
        procs_per_node=procs,
        node_rank=node_rank,
        nnodes=nnodes,
        master_addr=master,
        master_port=rendezvous_port(env),
    )


def rendezvous_port(env: Mapping[str, str]) -> str:
    """The port the workers meet at: ROCMKIT_ALLREDUCE_PORT, else MASTER_PORT; under
    torchrun, whose agent already serves its own store on MASTER_PORT, the next port."""
    if env.get("ROCMKIT_ALLREDUCE_PORT"):
        return env["ROCMKIT_ALLREDUCE_PORT"]
    port = env.get("MASTER_PORT") or DEFAULT_MASTER_PORT
    if env.get("TORCHELASTIC_RUN_ID") and (port.isascii() and port.isdigit()):
        return str(int(port) + 1)
    return port


def bus_bandwidth(algbw: float, world_size: int) -> float:
    """rccl-tests' all-reduce bus bandwidth: algbw * 2*(n-1)/n."""
    return algbw * 2 * (world_size - 1) / world_size


def size_label(nbytes: int) -> str:
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift}{unit}"
    return f"{nbytes}B"


@check(
    NAME,
    exclusive=True,
    options=DISTRIBUTED_OPTIONS,
    level=3,
    description="torch.distributed all-reduce across local GPUs (and nodes under Slurm/torchrun): sums and bus bandwidth",
    needs=("torch",),
    isolated=True,
    timeout_s=900.0,
)
def all_reduce(ctx: CheckContext) -> CheckResult:
    env = {**os.environ, **ctx.env}
    opts = ctx.options
    timeout_s = float(opts.get("distributed_timeout_s", DEFAULT_RENDEZVOUS_TIMEOUT_S))
    budget_s = float(opts.get("distributed_work_budget_s", DEFAULT_WORK_BUDGET_S))
    started = time.monotonic()
    local_gpus = 0
    if ctx.backend != "cpu":
        import torch
        import torch.distributed as dist

        if not dist.is_available() or not dist.is_nccl_available():
            return _result(
                Status.ERROR,
                f"this torch build ({torch.__version__}) has no NCCL/RCCL backend for torch.distributed",
                ctx,
                started,
                remedy="install a ROCm (or CUDA) build of torch: `rocmkit install --venv VENV`",
            )
        local_gpus = int(torch.cuda.device_count())
    try:
        layout = plan_layout(
            env, backend=ctx.backend, local_gpus=local_gpus, cpu_procs=int(opts.get("cpu_procs", 2))
        )
    except LayoutError as exc:
        return _result(Status.ERROR, str(exc), ctx, started, remedy=REMEDY_RENDEZVOUS)
    if layout.procs_per_node < 1:
        return _result(
            Status.ERROR,
            f"torch sees no GPU on this node (backend {ctx.backend})",
            ctx,
            started,
            remedy="run `rocmkit doctor --only torch` to see why (a CPU build of torch, hidden devices, permissions)",
        )
    if layout.world_size < 2:
        return _result(
            Status.SKIP,
            f"one {layout.device.upper()} worker in the job: nothing to all-reduce across "
            "(run on a multi-GPU node, or under srun/torchrun across nodes)",
            ctx,
            started,
        )
    default_sizes = CPU_SIZES if layout.device == "cpu" else GPU_SIZES
    spec = {
        "backend": layout.backend,
        "device": layout.device,
        "master_addr": layout.master_addr,
        "master_port": layout.master_port,
        "world_size": layout.world_size,
        "timeout_s": timeout_s,
        "sizes": [int(s) for s in opts.get("allreduce_sizes", default_sizes)],
        "iters": int(opts.get("allreduce_iters", 20 if layout.device == "cuda" else 5)),
        "warmup": int(opts.get("allreduce_warmup", 5 if layout.device == "cuda" else 1)),
    }
    outcomes = start_workers(layout, spec, env, timeout_s + budget_s)
    return summarize(outcomes, layout, ctx, started, timeout_s + budget_s)


@dataclass(frozen=True, kw_only=True)
class WorkerOutcome:
    rank: int
    command: CommandResult
    payload: dict[str, Any] | None  # the worker's JSON line, if it printed one


def start_workers(
    layout: Layout, spec: Mapping[str, Any], env: Mapping[str, str], timeout_s: float
) -> list[WorkerOutcome]:
    """Run this node's workers side by side; each one is killed at ``timeout_s``."""

    def one(local_rank: int) -> WorkerOutcome:
        rank = layout.node_rank * layout.procs_per_node + local_rank
        wenv = dict(env)
        wenv.update(
            ROCMKIT_ALLREDUCE_SPEC=json.dumps({**spec, "rank": rank, "local_rank": local_rank}),
            MASTER_ADDR=layout.master_addr,
            MASTER_PORT=layout.master_port,
            PYTHONUNBUFFERED="1",
        )
        if layout.master_addr == "127.0.0.1":
            # Gloo binds to the address the hostname resolves to; on a single
            # node the loopback interface always works.
            wenv.setdefault("GLOO_SOCKET_IFNAME", "lo")
        ran = run_json(sys.executable, "rocmkit.doctor.checks.distributed", timeout=timeout_s, env=wenv)
        payload = ran.data if isinstance(ran.data, dict) else None
        if payload is None and ran.error:  # a damaged result file: say so rather than "exit 0"
            payload = {"error": "result", "message": ran.error}
        return WorkerOutcome(rank=rank, command=ran.proc, payload=payload)

    with ThreadPoolExecutor(max_workers=layout.procs_per_node) as pool:
        return list(pool.map(one, range(layout.procs_per_node)))


def summarize(
    outcomes: Sequence[WorkerOutcome], layout: Layout, ctx: CheckContext, started: float, timeout_s: float
) -> CheckResult:
    """One result from this node's workers: a hang or crash is an error, a wrong sum a failure."""
    where = f"{layout.backend}, {layout.world_size} ranks over {layout.nnodes} node(s)"
    details: dict[str, Any] = {
        "backend": layout.backend,
        "world_size": layout.world_size,
        "nnodes": layout.nnodes,
        "node_rank": layout.node_rank,
        "master": f"{layout.master_addr}:{layout.master_port}",
        "workers": [
            {"rank": o.rank, **o.command.to_dict(), **({"result": o.payload} if o.payload else {})}
            for o in outcomes
        ],
    }
    for o in outcomes:
        if o.command.status == "timeout":
            return _result(
                Status.ERROR,
                f"all-reduce hung ({where}): rank {o.rank} did not finish within {timeout_s:g} s and was killed",
                ctx,
                started,
                remedy=REMEDY_HANG,
                details=details,
            )
    for o in outcomes:
        err = (o.payload or {}).get("error")
        if err == "rendezvous":
            return _result(
                Status.ERROR,
                f"rank {o.rank} could not meet its peers at {layout.master_addr}:{layout.master_port} "
                f"({where}): {o.payload and o.payload.get('message')}",
                ctx,
                started,
                remedy=REMEDY_RENDEZVOUS,
                details=details,
            )
        if err or o.payload is None:
            msg = (o.payload or {}).get("message") or o.command.describe()
            return _result(
                Status.ERROR,
                f"all-reduce worker rank {o.rank} failed ({where}): {msg}",
                ctx,
                started,
                remedy=REMEDY_HANG,
                details=details,
            )
    wrong = sum(int(o.payload["wrong"]) for o in outcomes if o.payload)
    lead = min(outcomes, key=lambda o: o.rank).payload or {}
    rows: list[dict[str, Any]] = list(lead.get("sizes", ()))
    details["table"] = rows
    figures = tuple(
        Figure(name=f"busbw_{size_label(int(r['bytes']))}", value=float(r["busbw_gbs"]), unit="GB/s")
        for r in rows
    )
    if wrong:
        return _result(
            Status.FAIL,
            f"all-reduce returned {wrong} wrong element(s) ({where})",
            ctx,
            started,
            remedy="a GPU or link corrupts data: run rccl-tests `all_reduce_perf -b 8 -e 128M -f 2 -g N` "
            "and the vendor diagnostics (rvs, amd-smi bad-pages) on this node",
            figures=figures,
            details=details,
        )
    best = max(rows, key=lambda r: float(r["bytes"]), default=None)
    peak = f"; busbw {best['busbw_gbs']:.4g} GB/s at {size_label(int(best['bytes']))}" if best else ""
    return _result(
        Status.PASS,
        f"all-reduce sums correct ({where}){peak}",
        ctx,
        started,
        figures=figures,
        details=details,
    )


def _result(
    status: Status,
    message: str,
    ctx: CheckContext,
    started: float,
    *,
    remedy: str | None = None,
    figures: tuple[Figure, ...] = (),
    details: dict[str, Any] | None = None,
) -> CheckResult:
    return CheckResult(
        status=status,
        message=message,
        remedy=remedy,
        figures=figures,
        duration_s=round(time.monotonic() - started, 3),
        backend=ctx.backend,
        details=details or {},
    )


# ---------------------------------------------------------------------------
# The worker: runs in its own process, one per rank.


def worker(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Join the group, check sums and time the sweep; never raises (errors go in the result)."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    rank, world = int(spec["rank"]), int(spec["world_size"])
    device = (
        torch.device("cuda", int(spec["local_rank"])) if spec["device"] == "cuda" else torch.device("cpu")
    )
    if device.type == "cuda":
        torch.cuda.set_device(device)
    try:
        dist.init_process_group(
            backend=str(spec["backend"]),
            init_method=f"tcp://{spec['master_addr']}:{spec['master_port']}",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=float(spec["timeout_s"])),
        )
    except Exception as exc:  # DistStoreError, RuntimeError: whatever the rendezvous raises
        return {"rank": rank, "error": "rendezvous", "message": _first_line(exc)}
    try:
        return {"rank": rank, **_sweep(spec, device, world)}
    except Exception as exc:  # a collective that fails or times out inside the backend
        return {"rank": rank, "error": "collective", "message": _first_line(exc)}
    finally:
        dist.destroy_process_group()


def _sweep(spec: Mapping[str, Any], device: Any, world: int) -> dict[str, Any]:
    import torch
    import torch.distributed as dist

    rank = dist.get_rank()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    wrong = 0
    rows = []
    for nbytes in spec["sizes"]:
        count = max(1, int(nbytes) // 4)
        # Known sums: element i of rank r holds (i % 13 + 1) * (r + 1); small
        # integers stay exact in float32, so any difference is a real error.
        pattern = torch.arange(count, dtype=torch.float32, device=device).remainder_(13).add_(1)
        x = pattern * (rank + 1)
        dist.all_reduce(x)
        expected = pattern * (world * (world + 1) / 2)
        wrong += int((x != expected).sum().item())
        buf = torch.zeros(count, dtype=torch.float32, device=device)
        for _ in range(int(spec["warmup"])):
            dist.all_reduce(buf)
        sync()
        dist.barrier()
        iters = max(1, int(spec["iters"]))
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buf)
        sync()
        elapsed = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64, device=device)
        # The slowest rank sets the pace, as in rccl-tests.
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        seconds = float(elapsed.item())
        algbw = count * 4 / seconds / 1e9
        rows.append(
            {
                "bytes": count * 4,
                "count": count,
                "time_us": _sig(seconds * 1e6),
                "algbw_gbs": _sig(algbw),
                "busbw_gbs": _sig(bus_bandwidth(algbw, world)),
            }
        )
    return {"wrong": wrong, "sizes": rows}


def _sig(x: float) -> float:
    """Four significant digits: small messages move kB/s, large ones hundreds of GB/s."""
    return float(f"{x:.4g}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _worker_main() -> int:
    spec = json.loads(os.environ["ROCMKIT_ALLREDUCE_SPEC"])
    result = worker(spec)
    write_result(result)  # to the file rocmkit.pyenv.run_json named: torch and NCCL print freely
    return 0 if "error" not in result else 1


if __name__ == "__main__":
    sys.exit(_worker_main())
