"""A model ready to run: its own module, so the suites' builders (hf, timm_suite) and the model
registry (models) can all name it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, kw_only=True)
class Built:
    """A model ready to run: the module, its example inputs (CPU tensors), what built it."""

    module: Any  # torch.nn.Module
    inputs: tuple[Any, ...]
    impl: str  # "rocmkit", "transformers", or a test file's own label
    batch_size: int
    # How a training step gets its loss: "mean" of every output (rocmkit's models), or
    # "first": the first output is the model's own loss (the HF and TIMM suites, as PyTorch's harness).
    loss: Literal["mean", "first"] = "mean"
