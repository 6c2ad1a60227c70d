"""What every backend's plan shares: the candidate releases, the pinned requirements of one
wheel variant, and which of them are companions.

``core`` picks a backend and calls ``rocm``, ``cuda`` or its own CPU plan; all three use these
helpers, so they live below all three (``core`` -> ``rocm``/``cuda`` -> ``releases``, never back).
"""

from __future__ import annotations

from packaging.version import Version

from rocmkit.errors import NoPlanError
from rocmkit.matrix import Matrix, TorchRelease, TorchVariant
from rocmkit.packages import COMPANIONS, requirement_name
from rocmkit.resolve.constraints import Constraints
from rocmkit.resolve.explain import Notes


def companions_of(requirements: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The requirements (as written) that name a companion project: ``Plan.companions``.
    torch and compile run without them, so install may leave them out (never torch or Triton)."""
    return tuple(req for req in requirements if requirement_name(req) in COMPANIONS)


def candidate_releases(m: Matrix, cons: Constraints, notes: Notes, python: str) -> tuple[TorchRelease, ...]:
    """Releases matching --torch and the Python, newest first; NoPlanError names the fix."""
    pool = m.torch_series(cons.torch) if cons.torch else tuple(reversed(m.torch_releases))
    if not pool:
        known = ", ".join(sorted({r.series for r in m.torch_releases}, key=Version))
        raise NoPlanError(f"torch {cons.torch} is not in the matrix", f"choose one of {known}")
    fits = tuple(r for r in pool if r.supports_python(python))
    if not fits:
        lo = min(pool, key=lambda r: Version(r.python_min)).python_min
        hi = max(pool, key=lambda r: Version(r.python_max)).python_max
        what = f"torch {cons.torch}" if cons.torch else "any torch release in the matrix"
        raise NoPlanError(
            f"{what} has no wheels for Python {python} (supported: {lo} to {hi})",
            f"use a Python between {lo} and {hi} (--python X.Y, or a venv made with it)"
            + ("" if not cons.torch else ", or another --torch"),
        )
    if fits[0] is not pool[0]:
        notes.why(
            f"torch {pool[0].version} supports Python {pool[0].python_min}-{pool[0].python_max}, "
            f"not {python}; the newest release for Python {python} is {fits[0].version}"
        )
    return fits


def requirements_for(
    release: TorchRelease, variant: TorchVariant, notes: Notes, *, with_triton: bool = True
) -> tuple[list[str], str | None]:
    """Pinned requirements (torch, torchvision, torchaudio, Triton) and the Triton pin used."""
    local = f"+{variant.index}"
    reqs = [f"torch=={release.version}{local}"]
    for name, version in (("torchvision", release.torchvision), ("torchaudio", release.torchaudio)):
        if version is None:
            notes.warn(
                f"no source pairs a {name} version with torch {release.version}; it is left out "
                f"(add it with `pip install {name} --index-url <the plan's index>` if you need it)"
            )
            continue
        reqs.append(f"{name}=={version}{local}")
        notes.relies_on(release, "torch.toml", f"{name} {version} pairs with torch {release.version}", name)
    triton: str | None = None
    if with_triton and variant.kind == "rocm" and not variant.triton:
        notes.why(
            f"matrices/torch.toml records no Triton pin for torch {release.version}+{variant.index}; "
            "torch's own Requires-Dist brings the right one"
        )
    if with_triton and variant.triton:
        if variant.is_confirmed("triton"):
            triton = variant.triton
            reqs.append(triton)
            notes.why(
                f"torch {release.version}+{variant.index} pins {triton} (Requires-Dist); pinned here too"
            )
        else:
            notes.warn(
                f"the Triton pin of torch {release.version}+{variant.index} is unconfirmed "
                f"({variant.triton} in matrices/torch.toml); it is left to torch's own Requires-Dist"
            )
    return reqs, triton
