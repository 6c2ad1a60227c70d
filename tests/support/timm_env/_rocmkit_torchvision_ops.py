"""Installed into the test suite's TIMM Python (``.venv-timm``, made by scripts/test.sh), with a
``.pth`` line that imports it: lets PyPI's torchvision import beside a CPU-only torch.

timm imports torchvision. The only torchvision wheels a CI machine can reach (PyPI's) are CUDA
builds: their C++ ops library needs libtorch_cuda.so, so it does not load beside torch 2.13.0+cpu.
torchvision is written to go on without its ops (``torchvision.extension._has_ops()`` is False and
every op raises "Couldn't load custom C++ ops" when called), except that its
``_meta_registrations`` registers fake kernels for ``nms`` and ``qnms`` unguarded, and
``register_fake`` of an operator that does not exist raises ("operator torchvision::nms does not
exist", pytorch/vision#9085), so ``import torchvision`` fails. Here, just before that module
runs, and only when the ops did not load, the two operators' schemas are defined (no kernel): the
import then goes through as torchvision intends, and calling an op still fails loudly. timm's
models use none of them. Nothing else changes; torch is imported only when torchvision is.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

_TARGET = "torchvision._meta_registrations"
# The schemas as torchvision's csrc/ops/nms.cpp and quantized/cpu/qnms_kernel.cpp declare them.
_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_LIBRARY: Any = None  # kept alive: the definitions live as long as the Library object


def _define_missing() -> None:
    global _LIBRARY
    ext = sys.modules.get("torchvision.extension")
    if ext is None or ext._has_ops():
        return  # the ops loaded: they are defined already
    import torch

    _LIBRARY = torch.library.Library("torchvision", "FRAGMENT")  # type: ignore[no-untyped-call]
    for schema in _SCHEMAS:
        _LIBRARY.define(schema)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            _define_missing()
            run(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _Finder())
