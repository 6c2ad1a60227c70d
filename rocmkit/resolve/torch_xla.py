"""``resolve --framework torch-xla``: PyTorch/XLA's CPU wheel, or an honest "no" on a GPU.

PyTorch/XLA publishes no ROCm build and is phasing out its CUDA builds
(``matrices/jax.toml`` ``[torch_xla_gpu]``, with its sources), so on a machine with
a visible AMD or NVIDIA GPU there is no plan: exit 6, naming JAX as the way to run
OpenXLA there. Without a GPU (or with ``--backend cpu``), the newest torch-xla release with a
wheel for the Python, beside the CPU torch of the same version (torch-xla's own
metadata names no torch requirement; its releases carry torch's version numbers).
"""

from __future__ import annotations

from rocmkit.errors import NoPlanError
from rocmkit.machine import Machine
from rocmkit.matrix import Matrix
from rocmkit.matrix.jaxdata import JaxData, load_jax
from rocmkit.plan import CPU, Plan
from rocmkit.resolve.constraints import Constraints
from rocmkit.resolve.explain import Notes

PYPI = "https://pypi.org/simple"


def plan(machine: Machine, m: Matrix, cons: Constraints, notes: Notes, python: str, base: str | None, *,
         jd: JaxData | None = None) -> Plan:
    jd = jd or load_jax()
    gpu = "ROCm" if cons.rocm else "CUDA" if cons.cuda else None
    if gpu is None and not cons.cpu:
        kind = machine.backend_kind
        gpu = {"rocm": "AMD", "cuda": "NVIDIA"}.get(kind)
    if gpu is not None and not jd.torch_xla_gpu.available:
        raise NoPlanError(
            f"{jd.torch_xla_gpu.note}; this machine's {gpu} GPU cannot run it",
            "for OpenXLA on this GPU use `--framework jax`; for PyTorch/XLA's CPU wheel add --backend cpu",
        )
    release = next((r for r in reversed(jd.torch_xla) if r.supports_python(python)), None)
    if release is None:
        span = f"{jd.torch_xla[0].python_min} to {jd.torch_xla[-1].python_max}" if jd.torch_xla else "none"
        raise NoPlanError(
            f"no torch-xla release in matrices/jax.toml has a wheel for Python {python} (supported: {span})",
            "use a Python that torch-xla supports (--python X.Y, or a venv made with it)",
        )
    torch = m.torch_release(release.version)
    if torch is None or torch.variant("cpu") is None or not torch.supports_python(python):
        raise NoPlanError(
            f"torch-xla {release.version} needs torch {release.version}, which matrices/torch.toml lacks "
            f"as a CPU wheel for Python {python}",
            "run `rocmkit matrix refresh --write`",
        )
    notes.why(
        f"torch-xla {release.version}: the newest release with a Linux wheel for Python {python} "
        f"(PyTorch/XLA runs on the CPU here; {jd.torch_xla_gpu.note})"
    )
    notes.why(
        f"torch {release.version}+cpu beside it: torch-xla's METADATA names no torch requirement, and its "
        "releases carry the version of the torch they are built against"
    )
    return Plan(
        backend=CPU,
        framework="torch-xla",
        torch_version=f"{release.version}+cpu",
        requirements=(f"torch=={release.version}+cpu", f"torch-xla=={release.version}"),
        index_urls=(m.index_url("stable", "cpu", base), m.pypi_url or PYPI),
        warnings=tuple(notes.warnings),
        reasons=tuple(notes.reasons),
        python=python,
    )
