"""What every backend's plan shares: the candidate releases, the pinned requirements of one
wheel variant, which of them are companions, and the plan of a stable ROCm or CUDA build.

``core`` picks a backend and calls ``rocm``, ``cuda`` or its own CPU plan; all three use these
helpers, so they live below all three (``core`` -> ``rocm``/``cuda`` -> ``releases``, never back).
"""

from __future__ import annotations

from packaging.version import Version

from rocmkit.errors import NoPlanError
from rocmkit.matrix import Matrix, TorchRelease, TorchVariant
from rocmkit.packages import COMPANIONS, requirement_name
from rocmkit.plan import Backend, Plan
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
        if variant.is_confirmed("triton") and "~=" in variant.triton:
            # A compatible-release range (PyPI's CUDA builds from 2.14 on): required as torch
            # requires it; not a pin (Plan.triton), so verify and the guard check torch's own.
            reqs.append(variant.triton)
            notes.why(
                f"torch {release.version}+{variant.index} requires {variant.triton} (Requires-Dist); "
                "required here too"
            )
        elif variant.is_confirmed("triton"):
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


# -- builds known only from upstream's build lists ------------------------------------


def listed_only(variant: TorchVariant) -> bool:
    """Upstream's build lists name this build, but no index or PyPI has been seen serving it."""
    return not variant.is_confirmed()


def usable(variant: TorchVariant, cons: Constraints, *, named: bool) -> bool:
    """May the resolver plan ``variant``? A confirmed build always; one known only from the build
    lists unless --strict-data (or when --backend names its index: the user asked for it)."""
    return not listed_only(variant) or named or not cons.strict_data


def fallback_for(
    m: Matrix, cons: Constraints, release: TorchRelease, variant: TorchVariant, python: str
) -> tuple[TorchRelease, TorchVariant] | None:
    """The newest confirmed build on the same index as ``variant`` (so the same URL: install
    never changes source), older than ``release``, for ``python`` and within --torch."""
    pool = m.torch_series(cons.torch) if cons.torch else tuple(reversed(m.torch_releases))
    for older in pool:
        if Version(older.version) >= Version(release.version) or not older.supports_python(python):
            continue
        same = older.variant(variant.index)
        if same is not None and not listed_only(same):
            return older, same
    return None


def sources_of(m: Matrix, variant: TorchVariant) -> str:
    """Where a listed-only build is named, in a few words (the build lists' revisions)."""
    from rocmkit.resolve.explain import short_source

    names = [short_source(m.source_text("torch.toml", s)) for s in variant.sources]
    return ", ".join(names) if names else "no source"


def note_listed_only(
    m: Matrix,
    cons: Constraints,
    notes: Notes,
    release: TorchRelease,
    variant: TorchVariant,
    python: str,
    base: str | None,
) -> tuple[str, ...]:
    """Say that the planned build is not yet seen on an index, and name its fallback.

    Returns the fallback's requirements (``Plan.fallback``), empty when no confirmed build
    shares the index."""
    tag = f"{release.version}+{variant.index}"
    notes.why(
        f"torch {tag} is not yet seen on an index: only upstream's build lists name it "
        f"({sources_of(m, variant)}); planned as the newest release upstream built for this machine "
        "(--strict-data plans only confirmed builds)"
    )
    found = fallback_for(m, cons, release, variant, python)
    if found is None:
        within = f" within --torch {cons.torch}" if cons.torch else ""
        notes.warn(
            f"torch {tag} is not yet seen on an index, and no confirmed build{within} shares its index "
            f"{m.index_url('stable', variant.index, base)}: if that index answers without it, the install fails"
            + ("" if cons.torch else " (--strict-data plans only confirmed builds)")
        )
        return ()
    old, old_variant = found
    scratch = Notes(matrix=m)
    reqs, _ = requirements_for(old, old_variant, scratch, with_triton=variant.kind != "cpu")
    if old_variant.interpreter_triton:
        reqs += [old_variant.interpreter_triton, "numpy"]  # as the CPU plan offers them
    notes.why(
        f"fallback: torch {old.version}+{old_variant.index}, the newest confirmed build on the same index; "
        f"`rocmkit install` uses it if {m.index_url('stable', variant.index, base)} answers without {tag}"
    )
    return tuple(reqs)


def stable_plan(
    m: Matrix,
    cons: Constraints,
    notes: Notes,
    python: str,
    base: str | None,
    release: TorchRelease,
    variant: TorchVariant,
    *,
    env: dict[str, str] | None = None,
    target_archs: tuple[str, ...] = (),
    unsupported: tuple[str, ...] = (),
) -> Plan:
    """The plan that installs ``release``'s ``variant`` (a ROCm or CUDA build) from PyTorch's stable
    index: its pins, companions and the fallback when only build lists name it. The last step of
    the ROCm and CUDA paths, after each has said why it chose this build."""
    reqs, triton = requirements_for(release, variant, notes)
    fallback = note_listed_only(m, cons, notes, release, variant, python, base) if listed_only(variant) else ()
    return Plan(
        backend=Backend.parse(variant.index),
        channel="stable",
        torch_version=f"{release.version}+{variant.index}",
        triton=triton,
        requirements=tuple(reqs),
        companions=companions_of(reqs),
        index_urls=(m.index_url("stable", variant.index, base),),
        env=env or {},
        warnings=tuple(notes.warnings),
        reasons=tuple(notes.reasons),
        python=python,
        target_archs=target_archs,
        unsupported_gpus=unsupported,
        fallback=fallback,
    )
