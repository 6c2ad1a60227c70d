"""Triton smoke kernels that ``rocmkit doctor`` runs to prove a node computes correctly and fast.

Each kernel module (``vector_add``, ``softmax``, ``matmul``, ``layernorm``, ``atomics``) is
the one home of its kernel: a ``CHECK`` declaration (its doctor check, options, sizes and
tolerances), the ``@triton.jit`` kernel, the check body ``run(k)`` and ``aot_builds``.
Adding a kernel is adding a module (docs/architecture.md). The modules import triton at
import time, so import them only inside a check (in the doctor's child process), never
from the CLI or from detection: the parent reads their declarations from the source
(``catalog``). Under ``TRITON_INTERPRET=1`` the same kernels run on the CPU through
Triton's interpreter; that variable must be set before these modules are imported,
because ``@triton.jit`` decides at decoration time whether a kernel is compiled or
interpreted.

The helpers import neither torch nor triton at module level: ``catalog`` (the
declarations, read and validated), ``options`` (the kinds of ``--set`` value), ``sizes``
(shared options and every kernel's sizes per backend), ``tolerance`` (the lookup, and the
attention check's table), ``spec`` (what a module's ``run`` is handed and returns, and
``Build``), ``metrics`` (GB/s, TFLOP/s, verdicts), ``timing`` (GPU events or the wall clock,
median), ``compare`` (``Tolerance`` and the allclose rule), ``runtime`` (device,
interpreter, cache) and ``aot`` (compile ahead of time for a GPU target). The harness that
runs a kernel's check and the choice of codegen targets are the doctor's
(``rocmkit.doctor.harness``, ``rocmkit.doctor.targets``).
"""
