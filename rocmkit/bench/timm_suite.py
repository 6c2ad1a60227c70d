"""Build one model of the TIMM suite: ``timm.create_model(name, pretrained=False)``, offline.

At ``full`` the input is the model's own size (its ``pretrained_cfg``) at the
list's batch size; at ``tiny`` a smaller image, 10 classes, and for the vision
transformers 2 blocks of width 64 (keyword arguments from ``timm.toml``).
Training loss as PyTorch's ``timm_models.py``: cross entropy against random
targets, divided by 10.

timm imports torchvision: a torchvision whose C++ ops do not load with this
torch makes the import fail, and the row says so (``rocmkit doctor`` finds it).
Runs in the benchmark child only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rocmkit.bench.built import Built
from rocmkit.bench.catalog import TimmEntry


def _with_loss(model: Any, target: Any) -> Any:
    import torch

    class WithLoss(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner
            self.register_buffer("target", target)

        def forward(self, x: Any) -> Any:
            pred = self.inner(x)
            logits = pred.float() if pred.dtype in (torch.float16, torch.bfloat16) else pred
            target: Any = self.target
            loss = torch.nn.functional.cross_entropy(logits, target) / 10.0
            return loss, pred

    return WithLoss(model)


def build(entry: TimmEntry, size: str, tiny: Mapping[str, int]) -> Built:
    import torch

    try:
        import timm
    except Exception as exc:  # an ImportError, or torchvision's "operator ... does not exist"
        raise RuntimeError(
            f"timm is not importable ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
            "timm needs a torchvision whose ops load with this torch: see `rocmkit doctor`"
        ) from exc
    kwargs: dict[str, Any] = {}
    if size == "tiny":
        kwargs = {"num_classes": tiny["classes"], **entry.tiny_kwargs}
    model = timm.create_model(entry.name, pretrained=False, **kwargs)
    if size == "tiny":
        batch, image = tiny["batch"], entry.tiny_image or tiny["image"]
        shape = (3, image, image)
    else:
        batch = entry.batch
        shape = tuple(model.pretrained_cfg.get("input_size") or (3, 224, 224))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(batch, *shape, generator=gen)
    classes = int(getattr(model, "num_classes", 0) or tiny["classes"])
    target = torch.randint(0, classes, (batch,), generator=gen)
    return Built(
        module=_with_loss(model, target),
        inputs=(x,),
        impl=f"timm {timm.__version__}",
        batch_size=batch,
        loss="first",
    )
