"""resolve(machine, constraints) -> Plan: the torch/triton builds, index and environment that fit.

Order of decisions: backend (forced by a constraint, else from the visible
GPUs), then the newest release and variant that (1) runs on the most discrete
GPUs, (2) supports the Python, (3) matches --torch/--backend. Facts come
from the matrix only; every choice adds a reason, every doubt a warning.
"""

from __future__ import annotations

import sys

from rocmkit.errors import NoPlanError
from rocmkit.machine import Machine
from rocmkit.matrix import Matrix, load_matrix
from rocmkit.plan import CPU, Plan
from rocmkit.resolve import amd, cuda, platform, rocm
from rocmkit.resolve.constraints import Constraints
from rocmkit.resolve.explain import Notes, join
from rocmkit.resolve.gpus import amd_gpus, assess, describe
from rocmkit.resolve.releases import (
    candidate_releases,
    companions_of,
    listed_only,
    note_listed_only,
    requirements_for,
    usable,
)


def resolve(machine: Machine, constraints: Constraints, *, matrix: Matrix | None = None) -> Plan:
    """The plan for ``machine``; raises NoPlanError (with the fix) when nothing fits."""
    cons = constraints.validated()
    m = matrix or load_matrix()
    notes = Notes(matrix=m)
    python = cons.python or f"{sys.version_info.major}.{sys.version_info.minor}"
    # The index base is read from the environment once, by the session (rocmkit.session).
    base = cons.index_base
    if base and cons.index_base_from:
        notes.why(f"index base {base} from {cons.index_base_from} replaces {m.pytorch_base}")
    elif base:
        notes.why(f"index base {base} replaces {m.pytorch_base}")

    # aarch64 and WSL2 (resolve/platform.py): refuse what the platform cannot have, pin what it needs.
    cons = platform.prepare(machine, cons, notes)
    for problem in machine.problems:
        if problem.severity == "error":
            notes.warn(f"detection: {problem.source}: {problem.message}")

    return platform.finish(machine, _plan_for(machine, m, cons, notes, python, base), notes)


def _plan_for(machine: Machine, m: Matrix, cons: Constraints, notes: Notes, python: str, base: str | None) -> Plan:
    frameworks = cons.frameworks
    if frameworks == ("torch-xla",):
        from rocmkit.resolve import torch_xla

        return torch_xla.plan(machine, m, cons, notes, python, base)
    if "jax" in frameworks:
        from rocmkit.resolve import jax_plan

        if frameworks == ("jax",):
            return jax_plan.plan(machine, m, cons, notes, python)
        # torch and jax in one venv: each planned on its own, then one plan that keeps both pins.
        jax_notes = Notes(matrix=m)
        return jax_plan.combine(
            _torch_plan(machine, m, cons, notes, python, base),
            jax_plan.plan(machine, m, cons, jax_notes, python),
        )
    return _torch_plan(machine, m, cons, notes, python, base)


def _torch_plan(machine: Machine, m: Matrix, cons: Constraints, notes: Notes, python: str, base: str | None) -> Plan:
    if cons.cpu:
        notes.why("--backend cpu: CPU wheels were asked for")
        return cpu_plan(m, cons, notes, python, base, machine)
    if cons.amd_channel:
        return amd.plan(machine, m, cons, notes, python)
    if cons.rocm:
        return rocm.plan(machine, m, cons, notes, python, base)
    if cons.cuda:
        return cuda.plan(machine, m, cons, notes, python, base)
    kind = machine.backend_kind
    if kind == "rocm" and (why := no_rocm_torch_for(machine, m)) is not None:
        notes.why(f"{why}: CPU wheels")
        notes.warn(f"{why}; torch will run on the CPU, not on this GPU")
        return cpu_plan(m, cons, notes, python, base, machine)
    if kind == "rocm":
        if any(g.visible for g in machine.nvidia_gpus):
            notes.warn(
                "this machine also has NVIDIA GPUs; one torch build serves one backend, so they are not "
                "used by this ROCm plan (use --backend cuXYZ, e.g. cu128, for a CUDA plan instead)"
            )
        return rocm.plan(machine, m, cons, notes, python, base)
    if kind == "cuda":
        return cuda.plan(machine, m, cons, notes, python, base)
    hidden = [g for g in machine.gpus if not g.visible]
    if not hidden and machine.nvidia is not None and machine.nvidia.driver_version:
        # The NVIDIA kernel driver is loaded (/sys/module/nvidia/version or /proc/driver/nvidia/version)
        # but no tool listed a GPU (nvidia-smi absent, as in minimal containers and some HPC images):
        # the driver is the machine's CUDA capability, so CUDA wheels for that driver, not CPU ones.
        notes.why(
            f"the NVIDIA driver {machine.nvidia.driver_version} is loaded but no tool listed its GPUs "
            "(nvidia-smi absent?): CUDA wheels for that driver"
        )
        notes.warn(
            "NVIDIA GPUs were not listed (no nvidia-smi), so their compute capability is not checked "
            "against the wheels; install nvidia-smi (the driver's utils package) for a full check"
        )
        return cuda.plan(machine, m, cons, notes, python, base)
    if hidden:
        notes.why(f"{len(hidden)} GPU(s) are hidden by *_VISIBLE_DEVICES; none is visible, so CPU wheels")
    else:
        notes.why("no GPU was detected, so CPU wheels (index .../cpu)")
    return cpu_plan(m, cons, notes, python, base, machine)


def no_rocm_torch_for(machine: Machine, m: Matrix) -> str | None:
    """Why no ROCm torch can drive this machine's AMD GPUs, or None when one may.

    Only GPUs whose gfx target is known and carried by no ROCm build of torch in the data
    (PyTorch's ROCm wheels, AMD's channels and per-family indexes), natively or through an
    HSA_OVERRIDE_GFX_VERSION sibling, count: old GCN cards (gfx801, gfx803) left behind by
    ROCm. There the honest plan is CPU torch with a warning, not a refusal. An unknown
    target is not known to be unsupported, so it still goes to the ROCm path (which asks for
    ROCMKIT_GFX); so does a machine where any visible GPU has a build."""
    gpus = amd_gpus(machine, m)
    if not gpus or any(g.arch is None for g in gpus):
        return None
    carried: set[str] = set()
    for release in m.torch_releases:
        for variant in release.of_kind("rocm"):
            carried.update(variant.archs)
    for index in m.rocm_indexes.values():
        carried.update(index.archs)
    for family in m.family_indexes:
        carried.update(family.archs)
    for chan in m.channels.values():
        carried.update(chan.archs, chan.legacy_archs)
    if assess(gpus, sorted(carried)).usable:
        return None
    archs = join(sorted({g.arch or "" for g in gpus}))
    return (
        f"no ROCm build of torch carries {archs} ({describe(gpus)}): no PyTorch ROCm index nor AMD channel "
        "in matrices/ lists it, natively or through an HSA_OVERRIDE_GFX_VERSION sibling"
    )


def cpu_plan(
    m: Matrix, cons: Constraints, notes: Notes, python: str, base: str | None, machine: Machine | None = None
) -> Plan:
    if cons.amd_channel:
        raise NoPlanError(
            f"AMD's {cons.channel} channel has ROCm builds only", "use --channel stable or nightly for CPU wheels"
        )
    if cons.channel == "nightly":
        chan = m.channels["nightly"]
        torch_min = chan.torch_min or "0.dev0"
        notes.why(f"nightly channel: torch>={torch_min} (pre-releases) from the cpu index")
        notes.warn(
            "nightly builds are not pinned; record what was installed with `rocmkit install --lock FILE`"
        )
        notes.relies_on(chan, "channels.toml", f"nightly versions start at {torch_min}", "torch_min")
        return Plan(
            backend=CPU,
            channel="nightly",
            requirements=(f"torch>={torch_min}", "torchvision", "torchaudio"),
            companions=("torchvision", "torchaudio"),
            index_urls=(m.index_url("nightly", "cpu", base),),
            warnings=tuple(notes.warnings),
            reasons=tuple(notes.reasons),
            python=python,
        )
    passed: list[str] = []  # newer CPU builds known only from build lists, under --strict-data
    for release in candidate_releases(m, cons, notes, python):
        variant = release.variant("cpu")
        if variant is None or (machine is not None and not platform.cpu_build_exists(machine, release.version)):
            continue
        # --torch X.Y names the release, as --backend names an index on the GPU paths.
        if not usable(variant, cons, named=bool(cons.torch)):
            passed.append(release.version)
            continue
        reqs, _ = requirements_for(release, variant, notes, with_triton=False)
        fallback: tuple[str, ...] = ()
        if passed:
            notes.why(
                f"torch {release.version} is the newest release whose CPU build is confirmed, for Python "
                f"{python}; the CPU builds of {', '.join(passed)} are not yet confirmed (only upstream's "
                "build lists name them) and --strict-data plans only confirmed builds"
            )
        elif listed_only(variant):
            notes.why(f"torch {release.version} is the newest release with CPU wheels for Python {python}")
            notes.relies_on(variant, "torch.toml", f"torch {release.version}+cpu exists", "*")
            fallback = note_listed_only(m, cons, notes, release, variant, python, base)
        else:
            notes.why(f"torch {release.version} is the newest release with CPU wheels for Python {python}")
        companions = companions_of(reqs)
        index_urls = [m.index_url("stable", "cpu", base)]
        if variant.interpreter_triton:
            # CPU torch pins no Triton; offer the one that runs doctor's Triton kernels in
            # the interpreter, as a companion so that an install without it still succeeds.
            # Triton's interpreter (and `import triton` itself) needs numpy, which neither
            # torch's CPU wheel nor triton declares.
            reqs += [variant.interpreter_triton, "numpy"]
            companions += (variant.interpreter_triton, "numpy")
            notes.why(
                f"{variant.interpreter_triton} and numpy: CPU wheels pin no Triton; this one runs rocmkit "
                "doctor's Triton kernels under TRITON_INTERPRET=1 with this torch (companions)"
            )
        if m.pypi_url and (variant.interpreter_triton or "numpy" in fallback):
            # Triton is published on PyPI; the PyTorch index stays first for torch.
            index_urls.append(m.pypi_url)
        return Plan(
            backend=CPU,
            channel=cons.channel,
            torch_version=f"{release.version}+cpu",
            requirements=tuple(reqs),
            companions=companions,
            index_urls=tuple(index_urls),
            warnings=tuple(notes.warnings),
            reasons=tuple(notes.reasons),
            python=python,
            fallback=fallback,
        )
    if passed:
        raise NoPlanError(
            f"torch {', '.join(passed)}'s CPU build is not yet confirmed: only upstream's build lists name it, "
            "and --strict-data plans only confirmed builds",
            ("drop --strict-data to plan it (install falls back if the index lacks it)", "choose another --torch"),
        )
    what = f"torch {cons.torch}" if cons.torch else "no release in the matrix"
    raise NoPlanError(
        f"{what} has no CPU wheels for Python {python} in matrices/torch.toml"
        if cons.torch
        else f"no release in the matrix has CPU wheels for Python {python}",
        "choose another --torch" if cons.torch else "run `rocmkit matrix refresh --write`",
    )
