"""The environment variables that change detection or a plan: kept in a capture's
env.json, shown by ``detect --json``, and part of the cache keys of detection and of
the output cache. Here, apart from :mod:`rocmkit.sources`, so that computing a cache
key imports nothing else."""

from __future__ import annotations

from collections.abc import Mapping

RELEVANT_ENV_PREFIXES = ("ROCMKIT_",)
RELEVANT_ENV = (
    "HSA_OVERRIDE_GFX_VERSION",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "ROCM_PATH",
    "ROCM_HOME",
    "HIP_PATH",
    "PYTORCH_ROCM_ARCH",
    "ROCM_BOOTSTRAP_FORCE_GFX_ARCH",  # AMD's rocm-bootstrap (detect/overrides.py)
    "ROCM_BOOTSTRAP_DISABLE_DETECTION",
    "TRITON_INTERPRET",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "KUBERNETES_SERVICE_HOST",
    "SLURM_JOB_ID",
    "container",
    "WSL_DISTRO_NAME",  # set by WSL in every distribution's shell (docs/platforms.md)
    "HSA_ENABLE_DXG_DETECTION",  # AMD's WSL runtime: reach the GPU through /dev/dxg
)


def relevant_raw(environ: Mapping[str, str]) -> dict[str, str]:
    """The relevant variables of ``environ``, sorted by name, values as they are (unmasked:
    for keys; what is shown or stored goes through :func:`rocmkit.sources.relevant_env`)."""
    return {
        k: v
        for k, v in sorted(environ.items())
        if k in RELEVANT_ENV or any(k.startswith(p) for p in RELEVANT_ENV_PREFIXES)
    }
