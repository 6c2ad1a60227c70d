"""The multi-GPU check for real: gloo workers on 127.0.0.1 (the CPU path of the same code)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rocmkit.doctor.checks.distributed import (
    NAME,
    LayoutError,
    all_reduce,
    bus_bandwidth,
    free_port,
    launcher_ranks,
    plan_layout,
)
from rocmkit.doctor.registry import CheckContext, load_checks
from rocmkit.doctor.result import CheckResult, Status
from rocmkit.machine import Machine

pytestmark = pytest.mark.integration

SIZES = [8, 4096, 1 << 18]


def _ctx(tmp_path: Path, env: dict[str, str] | None = None, **options: object) -> CheckContext:
    opts: dict[str, object] = {"distributed_timeout_s": 30, "allreduce_sizes": SIZES, "allreduce_iters": 3}
    opts.update(options)
    return CheckContext(machine=Machine(), backend="cpu", env=env or {}, cache_dir=tmp_path, options=opts)


def test_registered_as_isolated_level_3() -> None:
    chk = load_checks()[NAME]
    assert chk.level == 3 and chk.isolated and "torch" in chk.needs


def test_two_local_gloo_workers_sum_correctly(tmp_path: Path) -> None:
    result = all_reduce(_ctx(tmp_path))
    assert result.status is Status.PASS, result.message
    assert result.details["world_size"] == 2 and result.details["backend"] == "gloo"
    table = result.details["table"]
    assert [row["bytes"] for row in table] == SIZES
    for row in table:
        assert row["time_us"] > 0
        # rccl-tests' definition: for 2 ranks busbw == algbw (2*(n-1)/n == 1).
        assert row["busbw_gbs"] == pytest.approx(bus_bandwidth(row["algbw_gbs"], 2), rel=1e-3)
    assert [f.name for f in result.figures] == ["busbw_8B", "busbw_4K", "busbw_256K"]
    assert all(w["result"]["wrong"] == 0 for w in result.details["workers"])


def test_two_nodes_under_a_launcher_meet_at_master(tmp_path: Path) -> None:
    # Two "nodes" (torchrun-style RANK/WORLD_SIZE, one doctor per node), one gloo worker each.
    port = str(free_port())

    def node(rank: int) -> CheckResult:
        env = {"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}
        result = all_reduce(_ctx(tmp_path, env))
        assert not isinstance(result, list)
        return result

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(node, (0, 1)))
    for r in results:
        assert r.status is Status.PASS, r.message
        assert r.details["nnodes"] == 2
    assert {r.details["node_rank"] for r in results} == {0, 1}


def test_slurm_three_tasks_with_one_gpu_each_plan() -> None:
    env = {"SLURM_PROCID": "2", "SLURM_NTASKS": "3", "MASTER_ADDR": "node001"}
    layout = plan_layout(env, backend="rocm", local_gpus=8)
    assert (layout.backend, layout.node_rank, layout.nnodes, layout.world_size) == ("nccl", 2, 3, 24)
    assert layout.master_port == "29500"


def test_peer_that_never_joins_is_reported_within_the_timeout(tmp_path: Path) -> None:
    env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    result = all_reduce(_ctx(tmp_path, env, distributed_timeout_s=3))
    assert result.status is Status.ERROR
    assert "could not meet its peers" in result.message and "1/2" in result.message
    assert result.remedy and "MASTER_ADDR" in result.remedy


def test_a_hung_worker_is_killed_and_reported(tmp_path: Path) -> None:
    # A work budget far too small for the sweep: the runner kills the workers.
    result = all_reduce(_ctx(tmp_path, distributed_timeout_s=0.5, distributed_work_budget_s=0.5))
    assert result.status is Status.ERROR
    assert "did not finish within 1 s and was killed" in result.message


def test_single_worker_is_skipped(tmp_path: Path) -> None:
    result = all_reduce(_ctx(tmp_path, cpu_procs=1))
    assert result.status is Status.SKIP


def test_multi_node_without_master_addr_is_an_error(tmp_path: Path) -> None:
    result = all_reduce(_ctx(tmp_path, {"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}))
    assert result.status is Status.ERROR and "MASTER_ADDR" in result.message


def test_torchrun_meets_one_port_above_its_agent_store() -> None:
    env = {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "n1", "MASTER_PORT": "29500"}
    assert plan_layout(env, backend="cpu", local_gpus=0).master_port == "29500"
    torchrun = {**env, "TORCHELASTIC_RUN_ID": "x", "LOCAL_WORLD_SIZE": "1"}
    assert plan_layout(torchrun, backend="cpu", local_gpus=0).master_port == "29501"
    assert (
        plan_layout({**torchrun, "ROCMKIT_ALLREDUCE_PORT": "4000"}, backend="cpu", local_gpus=0).master_port
        == "4000"
    )


def test_launcher_variables() -> None:
    assert launcher_ranks({}) is None
    assert launcher_ranks({"SLURM_PROCID": "0", "SLURM_NTASKS": "1"}) is None
    assert launcher_ranks({"RANK": "1", "WORLD_SIZE": "4"}) == (1, 4)
    with pytest.raises(LayoutError):
        launcher_ranks({"RANK": "4", "WORLD_SIZE": "4"})
    with pytest.raises(LayoutError):
        launcher_ranks({"RANK": "x", "WORLD_SIZE": "4"})
    # One doctor per node, not one per GPU.
    with pytest.raises(LayoutError, match="one doctor per node"):
        launcher_ranks({"RANK": "1", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"})
    with pytest.raises(LayoutError, match="SLURM_NTASKS_PER_NODE=8"):
        launcher_ranks({"SLURM_PROCID": "1", "SLURM_NTASKS": "16", "SLURM_NTASKS_PER_NODE": "8"})
    assert launcher_ranks({"SLURM_PROCID": "1", "SLURM_NTASKS": "4", "SLURM_NTASKS_PER_NODE": "1(x4)"}) == (
        1,
        4,
    )


def test_gpu_backend_without_nccl_is_an_error(tmp_path: Path) -> None:
    # The CPU build of torch in the test venv has no NCCL: asked for the ROCm path, the
    # check says so instead of failing inside the rendezvous.
    import torch.distributed as dist

    if dist.is_nccl_available():
        pytest.skip("this torch has NCCL")
    ctx = CheckContext(machine=Machine(), backend="rocm", cache_dir=tmp_path)
    result = all_reduce(ctx)
    assert result.status is Status.ERROR and "no NCCL/RCCL backend" in result.message
