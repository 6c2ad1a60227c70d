"""Triton smoke kernels that ``rocmkit doctor`` runs to prove a node computes correctly and fast.

The kernel modules (``vector_add``, ``softmax``, ``matmul``, ``layernorm``, ``atomics``)
import triton at import time, so import them only inside a check function (in the
doctor's child process), never from the CLI or from detection. Under
``TRITON_INTERPRET=1`` the same kernels run on the CPU through Triton's interpreter; that
variable must be set before these modules are imported, because ``@triton.jit`` decides
at decoration time whether a kernel is compiled or interpreted.

The helpers import neither torch nor triton at module level: ``tolerance`` (the table),
``metrics`` (GB/s, TFLOP/s, verdicts), ``sizes`` (problem sizes and options), ``timing``
(GPU events or the wall clock, median), ``compare`` (the allclose rule), ``runtime`` (device, interpreter, cache),
``aot`` (compile ahead of time for a GPU target) and ``spec`` (``KernelSpec``: what a kernel
module declares, so ``aot`` finds it). The harness that runs a kernel against torch and the
choice of codegen targets are the doctor's (``rocmkit.doctor.harness``, ``rocmkit.doctor.targets``).
"""
