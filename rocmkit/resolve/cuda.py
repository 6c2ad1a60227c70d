"""The NVIDIA half of resolve: the newest CUDA wheel variant the installed driver can run."""

from __future__ import annotations

import dataclasses

from packaging.version import Version

from rocmkit.errors import NoPlanError, rerun
from rocmkit.machine import Machine
from rocmkit.matrix import CudaToolkit, Matrix, TorchRelease, TorchVariant
from rocmkit.matrix.model import release_key
from rocmkit.plan import Plan
from rocmkit.resolve import platform
from rocmkit.resolve.constraints import Constraints
from rocmkit.resolve.explain import Notes, join
from rocmkit.resolve.releases import (
    candidate_releases,
    fallback_for,
    listed_only,
    stable_plan,
    usable,
)


def _driver_ok(toolkit: CudaToolkit, driver: str | None, driver_cuda: str | None) -> bool:
    if driver:
        try:
            return release_key(driver) >= release_key(toolkit.min_driver)
        except ValueError:
            pass
    if driver_cuda:
        # Minor-version compatibility: a driver for CUDA X.y runs every X.* wheel.
        return release_key(toolkit.version)[0] <= release_key(driver_cuda)[0]
    return True  # unknown driver: nothing to exclude on (a warning says so)


def _older(driver: str, other: str) -> bool:
    try:
        return release_key(driver) < release_key(other)
    except ValueError:
        return False


def _gpu_capabilities(machine: Machine, m: Matrix, notes: Notes) -> list[tuple[str, str]]:
    """(label, compute capability) for each visible NVIDIA GPU whose capability is known."""
    out: list[tuple[str, str]] = []
    for gpu in machine.nvidia_gpus:
        if not gpu.visible:
            continue
        cc = gpu.compute_capability
        if cc is None and gpu.name:
            row = m.nvidia_gpu(gpu.name)
            if row is not None:
                cc = row.compute_capability
                notes.relies_on(row, "nvidia.toml", f"{gpu.name} has compute capability {cc}", "*")
        label = f"GPU {gpu.index} ({gpu.name or 'NVIDIA'})"
        if cc:
            out.append((label, cc))
        else:
            notes.why(f"{label}: compute capability unknown; not checked against the wheels")
    return out


def plan(machine: Machine, m: Matrix, cons: Constraints, notes: Notes, python: str, base: str | None) -> Plan:
    nv = machine.nvidia
    driver = nv.driver_version if nv else None
    driver_cuda = nv.cuda_version if nv else None
    if driver:
        notes.why(
            f"NVIDIA driver {driver}" + (f" (supports CUDA up to {driver_cuda})" if driver_cuda else "")
        )
    elif not cons.cuda:
        notes.warn("the NVIDIA driver version is unknown; the newest CUDA variant is chosen unchecked")
    caps = _gpu_capabilities(machine, m, notes)
    wanted = cons.cuda_index
    refused: list[str] = []
    passed: list[str] = []  # builds known only from build lists, left out under --strict-data
    fits: list[tuple[TorchRelease, TorchVariant, CudaToolkit]] = []
    releases = candidate_releases(m, cons, notes, python)
    for release in releases:
        for variant in release.of_kind("cuda"):
            if wanted and variant.backend != wanted:
                continue
            if not usable(variant, cons, named=bool(wanted)):
                passed.append(f"{release.version}+{variant.index}")
                continue
            if not platform.cuda_build_exists(machine, release.version, variant.index):
                continue  # aarch64: only the CUDA builds published for it (resolve/platform.py)
            toolkit = m.cuda_toolkit(variant.cuda or "")
            if toolkit is None:
                continue
            if not _driver_ok(toolkit, driver, driver_cuda):
                refused.append(f"{variant.index} needs driver >= {toolkit.min_driver}")
                continue
            too_old = [
                label
                for label, cc in caps
                if toolkit.min_compute_capability
                and release_key(cc) < release_key(toolkit.min_compute_capability)
            ]
            if too_old:
                refused.append(
                    f"{variant.index} needs compute capability >= {toolkit.min_compute_capability} ({join(too_old)})"
                )
                continue
            fits.append((release, variant, toolkit))
    if fits:
        # CUDA minor-version compatibility lets any cu12x (cu13x) wheel run on one driver floor,
        # so the newest release wins, then the newest CUDA it was built with.
        # Within one release a confirmed build wins over one known only from build lists,
        # then one that install can fall back from (a confirmed build on its index).
        release, variant, toolkit = max(
            fits,
            key=lambda f: (
                Version(f[0].version),
                not listed_only(f[1]),
                fallback_for(m, dataclasses.replace(cons, torch=None), f[0], f[1], python) is not None,
                release_key(f[2].version),
            ),
        )
        return _finish(m, cons, notes, python, base, release, variant, toolkit, driver, refused)
    if wanted and not any(v.backend == wanted for r in releases for v in r.of_kind("cuda")):
        have = [
            v.index
            for v in sorted(
                {v.index: v for r in releases for v in r.of_kind("cuda")}.values(),
                key=lambda v: release_key(v.cuda or "0"),
            )
        ]
        what = f"torch {cons.torch}" if cons.torch else "the matrix"
        raise NoPlanError(
            f"{what} has no {wanted} wheels for Python {python}", f"choose --backend from: {join(have)}"
        )
    if passed and not refused:
        what = f"torch {cons.torch}" if cons.torch else "the matrix"
        raise NoPlanError(
            f"{what}'s CUDA builds for Python {python} ({join(passed)}) are not yet "
            "confirmed (--strict-data): only build lists name them",
            ("drop --strict-data to plan one (install falls back if the index lacks it)", "name one with --backend cuXYZ"),
        )
    fix = "update the NVIDIA driver" if driver else "check `nvidia-smi`"
    raise NoPlanError(
        f"no CUDA wheel in the matrix fits this machine ({join(sorted(set(refused))) if refused else 'no variant matches'})",
        (fix, rerun("--backend", "cpu"), *(["another --backend cuXYZ"] if wanted else [])),
    )


def _finish(
    m: Matrix,
    cons: Constraints,
    notes: Notes,
    python: str,
    base: str | None,
    release: TorchRelease,
    variant: TorchVariant,
    toolkit: CudaToolkit,
    driver: str | None,
    refused: list[str],
) -> Plan:
    tag = f"{release.version}+{variant.index}"
    if refused:
        notes.why(f"variants this machine cannot run: {join(sorted(set(refused)))}")
    notes.why(
        f"torch {tag}: the newest CUDA variant this machine can run"
        + (
            f" (CUDA {toolkit.version} needs driver >= {toolkit.min_driver}; found {driver})"
            if driver
            else ""
        )
    )
    if driver and toolkit.ga_driver and _older(driver, toolkit.ga_driver):
        notes.why(
            f"driver {driver} is older than CUDA {toolkit.version}'s GA driver {toolkit.ga_driver}: the wheel "
            "runs under minor-version compatibility, but code that needs PTX JIT for newer features may fail"
        )
    notes.relies_on(variant, "torch.toml", f"torch {tag} exists", "*")
    notes.relies_on(toolkit, "nvidia.toml", f"CUDA {toolkit.version} needs driver {toolkit.min_driver}", "*")
    return stable_plan(m, cons, notes, python, base, release, variant)
