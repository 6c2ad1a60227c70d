"""Where and how the kernel checks run: device, interpreter, compile cache, arch name.

Call :func:`prepare` before importing triton or any kernel module: ``@triton.jit``
decides at decoration time whether a kernel is compiled or interpreted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from rocmkit.util.trust import compile_cache_dirs


class InterpreterNotActive(RuntimeError):
    """Triton was imported without TRITON_INTERPRET=1 in a process meant to run on the CPU."""


def prepare(backend: str, cache_dir: Path, environ: MutableMapping[str, str] | None = None) -> Path:
    """Point Triton's compile cache under rocmkit's cache folder (a user's own choice wins)
    and turn the interpreter on for the CPU backend. Returns the cache folder in use."""
    env = os.environ if environ is None else environ
    # Never a compile cache another user can write (compiled .so files are loaded and run).
    env.setdefault("TRITON_CACHE_DIR", compile_cache_dirs(Path(cache_dir))["TRITON_CACHE_DIR"])
    if backend == "cpu":
        env["TRITON_INTERPRET"] = "1"
    return Path(env["TRITON_CACHE_DIR"])


def torch_device(backend: str) -> str:
    # ROCm builds of torch expose HIP devices as "cuda".
    return "cpu" if backend == "cpu" else "cuda"


def require_interpreted(kernel: Any) -> None:
    """Refuse to launch a compiled kernel on the CPU backend (it would look for a GPU driver)."""
    if type(kernel).__name__ != "InterpretedFunction":
        raise InterpreterNotActive(
            "triton was imported before TRITON_INTERPRET=1 was set, so kernels would be compiled "
            "for a GPU this run does not use"
        )


def triton_imported() -> bool:
    return "triton" in sys.modules


def gpu_arch(torch: Any) -> str | None:
    """``gfx90a:sramecc+:xnack-`` on ROCm, ``sm_90`` on CUDA, for device 0."""
    props = torch.cuda.get_device_properties(0)
    arch = getattr(props, "gcnArchName", None)
    if arch:
        return str(arch)
    from rocmkit.arch import cc_of, sm_name

    return sm_name(cc_of(props.major, props.minor))


def device_name(torch: Any) -> str | None:
    try:
        return str(torch.cuda.get_device_name(0))
    except Exception:  # a name is only decoration for the message
        return None
