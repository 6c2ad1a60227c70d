"""torch.compile backends that really compute something else: the test of compile.correctness.

``wrong_relu_grad`` is a miscompile as it looks from outside: it takes dynamo's graph and
runs every ReLU with the right forward but a backward that lets the gradient through where
the input was negative (the mask dropped, as in a fused kernel that lost it). The compiled
model runs and trains; its first loss equals eager's, its gradients do not, so the gradient
norm diverges at step 0 and the loss from step 1 on. ``late_wrong_relu_grad`` is right for
its first three calls and wrong after them, so the divergence begins at step 3.
"""

from __future__ import annotations

from typing import Any

import torch

_RELUS = {torch.relu, torch.nn.functional.relu, torch.relu_}


class _LeakyGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad  # the bug: no mask, as if the input were never negative


def _leaky(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    return _LeakyGrad.apply(x)  # type: ignore[no-any-return,no-untyped-call]


def _rewrite(gm: torch.fx.GraphModule) -> tuple[torch.fx.GraphModule, int]:
    hits = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in _RELUS:
            node.target = _leaky
            hits += 1
        elif node.op == "call_method" and node.target in ("relu", "relu_"):
            node.op, node.target = "call_function", _leaky
            hits += 1
    gm.recompile()
    return gm, hits


def wrong_relu_grad(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    rewritten, hits = _rewrite(gm)
    assert hits, "no ReLU in the graph: the test model changed"
    return rewritten.forward


def late_wrong_relu_grad(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    import copy

    good = copy.deepcopy(gm)
    bad, hits = _rewrite(gm)
    assert hits, "no ReLU in the graph: the test model changed"
    calls = [0]

    def run(*args: Any) -> Any:
        calls[0] += 1
        return (good if calls[0] <= 3 else bad).forward(*args)

    return run
