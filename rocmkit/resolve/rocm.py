"""The ROCm half of resolve: PyTorch's ROCm wheels (stable, nightly); AMD's own channels are
in ``amd.py``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from packaging.version import Version

from rocmkit.errors import NoPlanError, rerun
from rocmkit.machine import Machine
from rocmkit.matrix import Matrix, TorchRelease, TorchVariant
from rocmkit.matrix.model import release_key
from rocmkit.plan import Backend, Plan
from rocmkit.resolve.constraints import Constraints
from rocmkit.resolve.driver import check_driver, in_window, window_filter
from rocmkit.resolve.explain import Notes, join, short_source
from rocmkit.resolve.gpus import AmdGpu, Assessment, amd_gpus, assess, describe, hide_unusable
from rocmkit.resolve.releases import (
    candidate_releases,
    fallback_for,
    listed_only,
    stable_plan,
    usable,
)


@dataclass(frozen=True)
class _Candidate:
    release: TorchRelease
    variant: TorchVariant
    fit: Assessment
    incomplete: tuple[str, ...] = ()  # code archs a bundled library of this index lacks
    # 2: confirmed; 1: known only from build lists, with a confirmed fallback on its index; 0: neither.
    # Within one release a confirmed build (or one install can fall back from) wins.
    trust: int = 2

    @property
    def complete(self) -> int:
        return sum(1 for u in self.fit.usable if u.code_arch not in self.incomplete)

    def key(self) -> tuple[int, int, int, Version, int, int, tuple[int, ...]]:
        primary, total, native = self.fit.score()
        rocm = release_key(self.variant.rocm or "0")
        return (primary, total, self.complete, Version(self.release.version), self.trust, native, rocm)


def rocm_matches(index_rocm: str, wanted: str, m: Matrix) -> bool:
    """--backend rocm6.2 means the rocm6.2 index when one exists, else any rocm6.2.x (rocm6.4 -> rocm6.4.1)."""
    if any(i.rocm == wanted for i in m.rocm_indexes.values()):
        return index_rocm == wanted
    return index_rocm.startswith(wanted + ".")


def plan(machine: Machine, m: Matrix, cons: Constraints, notes: Notes, python: str, base: str | None) -> Plan:
    gpus = amd_gpus(machine, m)
    for g in gpus:
        if g.arch_from != "detected":
            notes.why(f"{g.label}: detection gave no gfx name; its {g.arch_from} is {g.arch}")
    if not gpus:
        notes.why(
            "no AMD GPU is visible on this machine; the plan follows --backend/--channel for another machine"
            " (or a container image)"
        )
    if cons.channel == "nightly":
        return _nightly(machine, m, cons, notes, python, base, gpus)
    return _stable(machine, m, cons, notes, python, base, gpus)


def _stable(
    machine: Machine,
    m: Matrix,
    cons: Constraints,
    notes: Notes,
    python: str,
    base: str | None,
    gpus: tuple[AmdGpu, ...],
) -> Plan:
    wanted = cons.rocm_version
    candidates: list[_Candidate] = []
    passed: list[str] = []  # builds known only from build lists, left out under --strict-data
    anyrel = dataclasses.replace(cons, torch=None)
    for release in candidate_releases(m, cons, notes, python):
        for variant in release.of_kind("rocm"):
            if wanted and not rocm_matches(variant.rocm or "", wanted, m):
                continue
            if not usable(variant, cons, named=bool(wanted)):
                passed.append(f"{release.version}+{variant.index}")
                continue
            index = m.rocm_indexes.get(variant.index)
            incomplete = index.incomplete_archs if index else ()
            # Ranked on an index with confirmed builds (any release), even where --torch leaves no fallback.
            trust = 2 if not listed_only(variant) else 1 if fallback_for(m, anyrel, release, variant, python) else 0
            candidates.append(_Candidate(release, variant, assess(gpus, variant.archs), incomplete, trust))
    if not candidates:
        what = f"torch {cons.torch}" if cons.torch else "the matrix"
        if passed:
            raise NoPlanError(
                f"{what}'s ROCm builds for Python {python} ({join(passed)}) are not yet "
                "confirmed (--strict-data): only build lists name them",
                "drop --strict-data to plan one (install falls back if the index lacks it); or name one with "
                "--backend rocmX.Y",
            )
        have = sorted(
            {v.rocm or "" for r in m.torch_series(cons.torch or "") or m.torch_releases for v in r.of_kind("rocm")}
        )
        raise NoPlanError(
            f"{what} has no ROCm{' ' + wanted if wanted else ''} wheels for Python {python}",
            f"choose --backend from: {join([str(Backend.rocm_index(v)) for v in have])}",
        )
    best = max(candidates, key=_Candidate.key)
    if gpus and not best.fit.usable:
        _no_wheel_for(gpus, m, cons, python)
    if not wanted:
        best = _inside_driver_window(machine, m, notes, candidates, best)
    for cand in candidates:
        if (
            cand.key()[:2] == best.key()[:2]
            and cand.complete < best.complete
            and cand.key()[3] > best.key()[3]
        ):
            lacking = join(sorted({u.code_arch for u in cand.fit.usable} & set(cand.incomplete)))
            notes.why(
                f"torch {cand.release.version}+{cand.variant.index} was passed over: a library its wheels "
                f"bundle reportedly lacks {lacking}"
            )
            break
    return _finish(machine, m, cons, notes, python, base, best.release, best.variant, best.fit, gpus)


def _inside_driver_window(
    machine: Machine, m: Matrix, notes: Notes, candidates: list[_Candidate], best: _Candidate
) -> _Candidate:
    """Prefer a build whose ROCm is inside the node's amdgpu driver window, among the builds
    that run on as many GPUs as the best one (AMD supports a driver with its window only)."""
    rel, how = window_filter(machine, m)
    if rel is None or in_window(rel, best.variant.rocm or "0") is not False:
        return best
    inside = [
        c for c in candidates
        if c.key()[:2] == best.key()[:2] and in_window(rel, c.variant.rocm or "0")
    ]
    if not inside:
        return best
    chosen = max(inside, key=_Candidate.key)
    notes.why(
        f"torch {best.release.version}+{best.variant.index} was passed over: its ROCm {best.variant.rocm} is "
        f"outside the window of {how} (ROCm {rel.userspace_min} to {rel.userspace_max}); "
        f"{chosen.release.version}+{chosen.variant.index} is inside (for the newer one, install the amdgpu-dkms "
        f"of a newer ROCm, or pass --backend {best.variant.backend})"
    )
    return chosen


def _no_wheel_for(gpus: tuple[AmdGpu, ...], m: Matrix, cons: Constraints, python: str) -> None:
    """No candidate runs on any GPU: say which release would, or which channel."""
    archs = join(sorted({g.arch or "unknown" for g in gpus}))
    first: tuple[TorchRelease, TorchVariant] | None = None
    for release in m.torch_releases:
        for variant in release.of_kind("rocm"):
            if (
                variant.is_confirmed()
                and assess(gpus, variant.archs).usable
                and release.supports_python(python)
            ):
                first = first or (release, variant)
    amd = m.channels["amd-nightly"] if "amd-nightly" in m.channels else m.channels["therock"]
    on_amd = [g.arch for g in gpus if g.arch in amd.archs]
    fixes: list[str] = []
    if first is not None and cons.torch:
        fixes.append(
            f"use --torch {first[0].series} or newer (first with {archs}: {first[0].version}+{first[1].index})"
        )
    if on_amd:
        fixes.append(f"use --channel {amd.name} (AMD's multi-arch builds have device code for it)")
    unknown = [str(g.ordinal) for g in gpus if g.arch is None]
    if unknown:
        # "device code for unknown" names no fix; the override does.
        fixes.append("set ROCMKIT_GFX=gfxNNNN to the GPU's gfx target if you know it")
    fixes.append("or --backend cpu for CPU wheels" if fixes else "use --backend cpu for CPU wheels")
    on = f" for ROCm {cons.rocm_version}" if cons.rocm else ""
    if unknown and len(unknown) == len(gpus):
        gpu_word = "GPU" if len(unknown) == 1 else "GPUs"
        message = (
            f"the gfx arch of AMD {gpu_word} {', '.join(unknown)} is unknown (neither detection nor the PCI ids in "
            "matrices/gfx.toml name it), so no ROCm wheel can be matched to it"
        )
    elif cons.torch:
        message = f"torch {cons.torch} has no ROCm wheels{on} with device code for {archs}"
    else:
        message = f"no PyTorch release in the matrix has ROCm wheels{on} with device code for {archs}"
    raise NoPlanError(message, "; ".join(fixes))


def _finish(
    machine: Machine,
    m: Matrix,
    cons: Constraints,
    notes: Notes,
    python: str,
    base: str | None,
    release: TorchRelease,
    variant: TorchVariant,
    fit: Assessment,
    gpus: tuple[AmdGpu, ...],
) -> Plan:
    tag = f"{release.version}+{variant.index}"
    notes.why(
        f"torch {tag}: the newest release whose ROCm wheels run on "
        + (describe([u.gpu for u in fit.usable]) if fit.usable else "the requested ROCm")
        + f" with Python {python}"
        + (f" and ROCm {cons.rocm_version}" if cons.rocm else "")
    )
    notes.relies_on(variant, "torch.toml", f"torch {tag} exists on {variant.index}", "*")
    rocm_index = m.rocm_indexes.get(variant.index)
    used = sorted({u.code_arch for u in fit.usable})
    if rocm_index is not None and used:
        notes.relies_on(rocm_index, "torch.toml", f"the archs compiled into {variant.index} wheels", "archs")
        for arch in sorted(set(used) & set(rocm_index.incomplete_archs)):
            why = "; ".join(
                short_source(m.source_text("torch.toml", k)) for k in rocm_index.incomplete_sources
            )
            notes.warn(
                f"torch {tag}: {arch} code is in torch, but a library the wheel bundles reportedly lacks it "
                f"({why}); if GPU matrix multiplies fail, pick an older --backend rocmX.Y"
            )
    env: dict[str, str] = {}
    for use in fit.usable:
        if use.how == "override" and use.gpu.info is not None:
            value = use.gpu.info.hsa_override or ""
            notes.why(
                f"{use.gpu.arch} is not in torch {tag}'s arch list; {use.code_arch} is, and {use.gpu.arch} "
                f"runs {use.code_arch} code with HSA_OVERRIDE_GFX_VERSION={value}"
            )
            notes.relies_on(
                use.gpu.info, "gfx.toml", f"{use.gpu.arch} runs {use.code_arch} code", "hsa_override"
            )
        else:
            notes.why(f"{use.gpu.arch} is in the wheel's arch list")
    if fit.override:
        env["HSA_OVERRIDE_GFX_VERSION"] = fit.override
        current = machine.env.get("HSA_OVERRIDE_GFX_VERSION")
        if current and current != fit.override:
            notes.warn(f"HSA_OVERRIDE_GFX_VERSION is set to {current} here; the plan needs {fit.override}")
    hidden, unsupported = hide_unusable(fit, machine, notes, f"torch {tag}")
    env.update(hidden)
    _check_rocm_release(m, notes, variant, fit)
    check_driver(machine, m, notes, variant.rocm or "")
    _check_userspace(machine, notes, variant.rocm or "")
    return stable_plan(
        m, cons, notes, python, base, release, variant, env=env, target_archs=tuple(used), unsupported=unsupported
    )


def _check_rocm_release(m: Matrix, notes: Notes, variant: TorchVariant, fit: Assessment) -> None:
    rel = m.rocm_release(variant.rocm or "")
    if rel is None:
        return
    for use in fit.usable:
        arch = use.gpu.arch or ""
        if arch in rel.deprecated:
            notes.warn(f"ROCm {rel.version} lists {arch} as deprecated")
        elif rel.supported and arch not in rel.supported and rel.is_confirmed("supported"):
            notes.why(
                f"AMD does not list {arch} as supported by ROCm {rel.version}; "
                "PyTorch's wheel carries code for it, which is what matters here"
            )


def _check_userspace(machine: Machine, notes: Notes, rocm: str) -> None:
    have = machine.rocm.version
    if not have or not rocm:
        return
    try:
        older = release_key(have)[:2] < release_key(rocm)[:2]
    except ValueError:
        return
    if older:
        notes.why(
            f"the installed ROCm {have} is older than the wheel's {rocm}; that is fine: "
            "PyTorch's ROCm wheels bundle their own ROCm libraries"
        )


def _nightly(
    machine: Machine,
    m: Matrix,
    cons: Constraints,
    notes: Notes,
    python: str,
    base: str | None,
    gpus: tuple[AmdGpu, ...],
) -> Plan:
    chan = m.channels["nightly"]
    if cons.torch:
        notes.warn(f"--torch {cons.torch} is not applied to nightly builds (always the next release)")
    notes.relies_on(chan, "channels.toml", "the indexes PyTorch nightly builds", "indexes")
    rocm_indexes = {b.rocm: i for i in chan.indexes if (b := Backend.parse(i)).rocm is not None}
    options = [i for rocm, i in rocm_indexes.items() if not cons.rocm_version or rocm_matches(rocm, cons.rocm_version, m)]
    if not options:
        raise NoPlanError(
            f"the nightly channel has no ROCm {cons.rocm_version or ''} index in matrices/channels.toml",
            f"choose from {join(list(rocm_indexes.values()))}",
        )
    scored = []
    for index in options:
        archs = m.rocm_indexes[index].archs if index in m.rocm_indexes else ()
        rocm = Backend.parse(index).rocm or "0"
        scored.append((assess(gpus, archs).score(), release_key(rocm), index, assess(gpus, archs)))
    _, _, index, fit = max(scored)
    backend = Backend.parse(index)
    if gpus and not fit.usable:
        raise NoPlanError(
            f"the nightly ROCm wheels ({join(options)}) carry no code for "
            f"{join(sorted({g.arch or 'unknown' for g in gpus}))}",
            (rerun("--channel", "amd-nightly") + "   # AMD's multi-arch builds", rerun("--backend", "cpu")),
        )
    for use in fit.usable:
        if use.how == "override":
            notes.why(
                f"{use.gpu.arch} runs {use.code_arch} code with HSA_OVERRIDE_GFX_VERSION={fit.override}"
            )
    env = {"HSA_OVERRIDE_GFX_VERSION": fit.override} if fit.override else {}
    hidden, unsupported = hide_unusable(fit, machine, notes, f"the nightly {index} wheels")
    env.update(hidden)
    torch_min = chan.torch_min or "0.dev0"
    notes.why(f"nightly channel: torch>={torch_min} (pre-releases) from {index}")
    notes.warn("nightly builds are not pinned; record what was installed with `rocmkit install --lock FILE`")
    notes.relies_on(chan, "channels.toml", f"nightly versions start at {torch_min}", "torch_min")
    check_driver(machine, m, notes, backend.rocm or "")
    return Plan(
        backend=backend,
        channel="nightly",
        requirements=(f"torch>={torch_min}", "torchvision", "torchaudio"),
        companions=("torchvision", "torchaudio"),
        index_urls=(m.index_url("nightly", index, base),),
        env=env,
        warnings=tuple(notes.warnings),
        reasons=tuple(notes.reasons),
        python=python,
        target_archs=tuple(sorted({u.code_arch for u in fit.usable})),
        unsupported_gpus=unsupported,
    )
