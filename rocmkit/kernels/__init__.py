"""Triton smoke kernels that ``rocmkit doctor`` runs to prove a node computes correctly and fast.

Every kernel module here imports triton at import time, so import them only inside a
check function (in the doctor's child process), never from the CLI or from detection.
Under ``TRITON_INTERPRET=1`` the same kernels run on the CPU through Triton's interpreter;
that variable must be set before these modules are imported, because ``@triton.jit``
decides at decoration time whether a kernel is compiled or interpreted.

The pure helpers (:mod:`rocmkit.kernels.tolerance`, :mod:`rocmkit.kernels.metrics`,
:mod:`rocmkit.kernels.sizes`) import neither torch nor triton.
"""
