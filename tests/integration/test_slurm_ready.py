"""The readiness barrier over real TCP on 127.0.0.1: a node that cannot take part
is named to every node as soon as it says so; one that never comes is named at the
timeout."""

from __future__ import annotations

import threading

import pytest

from rocmkit.doctor.checks.distributed import free_port
from rocmkit.slurm import ready

pytestmark = pytest.mark.integration


def test_a_node_that_cannot_take_part_is_named_to_all_before_the_timeout() -> None:
    port = free_port()
    store = ready.ReadyStore(
        port=port, nnodes=3, own=ready.Answer(rank=0, node="n0", ready=True), timeout_s=60, names=["n0", "n1", "n2"]
    )
    verdicts: dict[str, ready.Verdict] = {}

    def ask(rank: int, ok: bool) -> None:
        answer = ready.Answer(rank=rank, node=f"n{rank}", ready=ok, reason="" if ok else "torch.import: boom")
        verdicts[f"n{rank}"] = ready.ask("127.0.0.1", port, answer, timeout_s=60)

    # n1 says it cannot; n2 never comes: the verdict still arrives, naming n1 only.
    t = threading.Thread(target=ask, args=(1, False))
    t.start()
    t.join(timeout=30)
    mine = store.verdict()
    assert not mine.go and [a.node for a in mine.not_ready] == ["n1"] and mine.missing == ()
    assert verdicts["n1"] == mine
    # A node that comes late hears the same verdict at once.
    ask(2, True)
    assert verdicts["n2"] == mine
    store.finish()


def test_all_ready_goes_and_a_missing_node_is_named_at_the_timeout() -> None:
    port = free_port()
    store = ready.ReadyStore(port=port, nnodes=2, own=ready.Answer(rank=0, node="n0", ready=True), timeout_s=30)
    v = ready.ask("127.0.0.1", port, ready.Answer(rank=1, node="n1", ready=True), timeout_s=30)
    assert v.go and store.verdict().go
    store.finish()
    port = free_port()
    alone = ready.ReadyStore(
        port=port, nnodes=2, own=ready.Answer(rank=0, node="n0", ready=True), timeout_s=1, names=["n0", "n1"]
    )
    late = alone.verdict()
    assert not late.go and late.missing == ("rank 1 (n1)",)
    alone.finish()
    unreachable = ready.ask("127.0.0.1", free_port(), ready.Answer(rank=1, node="n1", ready=True), timeout_s=1)
    assert not unreachable.go and "never answered" in unreachable.error
