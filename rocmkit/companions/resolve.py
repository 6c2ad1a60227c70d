"""``--with NAME``: each package resolved for the plan, with its reason and warnings, or refused.

A library in ``matrices/companions.toml`` gets the first build (in file order: wheels before source
builds) that fits the plan: its backend, its torch release (xformers' native code loads under no
other), the toolkit library it carries (bitsandbytes), and every target arch of the plan. A source
build is built against the environment's own torch (no build isolation) with the row's build
variables filled in for this machine. When no build fits, the plan is refused
(:class:`~rocmkit.errors.NoPlanError`, exit 6) naming why each build did not fit. Any other
package (transformers, timm) comes from the plan's indexes, with PyPI added last, under the guard.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from rocmkit.arch import BackendKind
from rocmkit.companions.data import PYPI_SIMPLE, Build, CompanionData
from rocmkit.errors import NoPlanError
from rocmkit.machine import Machine
from rocmkit.packages import canonical
from rocmkit.plan import Backend, Plan, WithPackage
from rocmkit.util.buildjobs import max_jobs


def _major_minor(version: str | None) -> str | None:
    if not version:
        return None
    parts = version.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else None


@dataclass(frozen=True, kw_only=True)
class Fit:
    build: Build
    problems: tuple[str, ...]  # why it does not fit (empty: it fits)
    warnings: tuple[str, ...] = ()


def assess(build: Build, plan: Plan, wanted_version: str | None = None) -> Fit:
    """Whether ``build`` fits ``plan``, and what to warn about when it does."""
    kind, toolkit = plan.backend.kind, plan.backend.toolkit
    problems: list[str] = []
    warnings: list[str] = []
    torch_release = plan.torch_version.split("+", 1)[0] if plan.torch_version else None
    if build.backend != kind:
        problems.append(f"it is a {build.backend} build, the plan is {plan.backend}")
        return Fit(build=build, problems=tuple(problems))
    if wanted_version is not None and build.version != wanted_version:
        problems.append(f"it is {build.version}, --with asks for {wanted_version}")
    if build.index == "pytorch" and plan.backend not in [Backend.parse(b) for b in build.backends]:
        problems.append(f"PyTorch's index serves it for {', '.join(build.backends)}, not {plan.backend}")
    if torch_release is None:
        if build.torch is not None or build.torch_requires != "*":
            problems.append("the plan's torch version is not known (a nightly plan), so its pairing cannot be checked")
    elif build.torch is not None and build.torch != torch_release:
        problems.append(f"its native code is built for torch {build.torch}, the plan has {torch_release}")
    elif not build.torch_allows(torch_release):
        problems.append(f"it requires torch {build.torch_requires}, the plan has {torch_release}")
    libs = build.rocm if kind == "rocm" else build.cuda if kind == "cuda" else ()
    have = _major_minor(toolkit)
    if libs and have not in libs:
        same_major = [v for v in libs if have and v.split(".")[0] == have.split(".")[0]]
        name = "ROCm" if kind == "rocm" else "CUDA"
        if same_major and have:
            # bitsandbytes loads the nearest library of the same major (bitsandbytes/cextension.py).
            warnings.append(
                f"{build.companion} {build.version} has no {name} {have} library; it loads its {name} "
                f"{_nearest(same_major, have)} one (of {', '.join(libs)})"
            )
        else:
            problems.append(f"its wheel carries {name} {', '.join(libs)} libraries, the plan is {name} {have or '?'}")
    if kind == "rocm" and build.archs:
        if not plan.target_archs:
            problems.append(f"it covers {', '.join(build.archs)} and the plan names no GPU arch")
        missing = [a for a in plan.target_archs if not build.covers(a)]
        if missing:
            problems.append(f"it covers {', '.join(build.archs)}, not {', '.join(missing)}")
    if build.kind == "source" and any("{archs" in v for v in build.build_env.values()) and not plan.target_archs:
        problems.append("its build needs the GPU archs, and the plan names none")
    return Fit(build=build, problems=tuple(problems), warnings=tuple(warnings))


def _nearest(candidates: list[str], have: str) -> str:
    """bitsandbytes' rule: the highest version at or below the runtime's, else the lowest above."""

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split("."))

    below = [v for v in candidates if key(v) <= key(have)]
    return max(below, key=key) if below else min(candidates, key=key)


def _fill(template: str, plan: Plan, jobs: int) -> str:
    return (
        template.replace("{archs;}", ";".join(plan.target_archs))
        .replace("{archs,}", ",".join(plan.target_archs))
        .replace("{max_jobs}", str(jobs))
    )


def _why(build: Build, plan: Plan, rejected: list[Fit], jobs_rule: str) -> str:
    name = f"{build.companion}=={build.version}"
    archs = ", ".join(plan.target_archs)
    if build.kind == "wheel":
        where = f"PyTorch's {plan.backend} index" if build.index == "pytorch" else "PyPI"
        text = f"{name}: a prebuilt wheel from {where}"
        if build.torch:
            text += f", built for torch {build.torch}"
        if build.backend == "rocm" and build.archs and archs:
            text += f", covering {archs}"
        libs = build.rocm or build.cuda
        if libs:
            text += f" (it carries {'ROCm' if build.rocm else 'CUDA'} {', '.join(libs)} libraries)"
        return text
    skipped = [f for f in rejected if f.build.kind == "wheel"]
    text = f"{name}: "
    text += f"no prebuilt {_toolkit(build)} wheel fits" + (f" {archs}" if archs else "") + "; built from source"
    if build.variant:
        text += f" with the {build.variant} backend"
        other = [
            f for f in rejected if f.build.kind == "source" and f.build.variant and f.build.variant != build.variant
        ]
        if other:
            text += f" ({other[0].build.variant} does not fit: {other[0].problems[0]})"
    elif skipped:
        text += f" ({skipped[0].build.label}: {skipped[0].problems[0]})"
    text += ", against this environment's own torch (no build isolation)"
    if "MAX_JOBS" in build.build_env:
        text += f"; {jobs_rule}"
    return text


def _toolkit(build: Build) -> str:
    return {"rocm": "ROCm", "cuda": "CUDA"}.get(build.backend, "CPU")


def resolve_one(
    requirement: str,
    plan: Plan,
    machine: Machine,
    data: CompanionData,
    pypi: str = PYPI_SIMPLE,
    *,
    build: tuple[str, ...] = (),
) -> tuple[WithPackage, tuple[str, ...], tuple[str, ...], dict[str, str]]:
    """One ``--with`` requirement: the package, its reasons, its warnings and the variables it
    reads at import. Raises NoPlanError when the library is known and no build fits."""
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    name = canonical(req.name)
    companion = data.companions.get(name)
    if companion is None:
        return (
            WithPackage(name=name, requirement=requirement, how="index"),
            (f"{requirement}: from the plan's indexes, under the guard that keeps this torch",),
            (),
            {},
        )
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    wanted_version = pinned[0] if pinned else None
    fits: list[Fit] = []
    rows = data.builds_of(name)
    if name in build:
        rows = tuple(sorted(rows, key=lambda b: b.kind != "source"))  # --build NAME: its source build first
    for row in rows:
        fit = assess(row, plan, wanted_version)
        if req.specifier and not req.specifier.contains(row.version, prereleases=True):
            fit = dataclasses.replace(fit, problems=(*fit.problems, f"{row.version} is outside {req.specifier}"))
        fits.append(fit)
    chosen = next((f for f in fits if not f.problems), None)
    if chosen is None:
        raise _refusal(name, plan, fits, companion.note)
    return _resolved(name, chosen, fits, plan, machine, companion.pins_torch, pypi)


def _resolved(
    name: str,
    chosen: Fit,
    fits: list[Fit],
    plan: Plan,
    machine: Machine,
    pins_torch: bool,
    pypi: str,
) -> tuple[WithPackage, tuple[str, ...], tuple[str, ...], dict[str, str]]:
    build = chosen.build
    jobs, rule = max_jobs(machine.host.cpu_cores, machine.host.memory_bytes, "cuda" if build.backend == "cuda" else "rocm")
    rejected = [f for f in fits if f.problems]
    reasons = [_why(build, plan, rejected, rule)]
    if build.note:
        reasons.append(f"{name}: {build.note}")
    warnings = list(chosen.warnings)
    if build.unconfirmed:
        fields = "the whole row" if "*" in build.unconfirmed else ", ".join(build.unconfirmed)
        warnings.append(f"{build.label}: {fields} not confirmed by a source (matrices/companions.toml)")
    if build.kind == "source":
        warnings.append(
            f"{name} is compiled on this machine ({rule.split(' = ')[0]} = {jobs}): expect a long build; "
            "it needs the ROCm/CUDA compiler of the plan's toolkit"
        )
    index_url = plan.index_urls[0] if build.index == "pytorch" and plan.index_urls else pypi
    package = WithPackage(
        name=name,
        requirement=f"{name}=={build.version}",
        how=build.kind,
        index_url=index_url,
        build_env={k: _fill(v, plan, jobs) for k, v in build.build_env.items()},
        build_requires=build.build_requires,
        pins_torch=pins_torch,
    )
    return package, tuple(reasons), tuple(warnings), dict(build.run_env)


def _refusal(name: str, plan: Plan, fits: list[Fit], note: str | None) -> NoPlanError:
    archs = f" on {', '.join(plan.target_archs)}" if plan.target_archs else ""
    torch = f"torch {plan.torch_version}" if plan.torch_version else f"the {plan.channel} torch"
    same = [f for f in fits if f.build.backend == plan.backend.kind]
    why = "; ".join(f"{f.build.label}: {f.problems[0]}" for f in same[:4])
    if not same:
        why = f"matrices/companions.toml has no {plan.backend.kind} build of it" + (
            f" ({note})" if note else ""
        )
    fix = f"drop --with {name}"
    # The nearest build that differs only in its pairing: resolving for its torch makes it fit.
    pairing = ("native code is built for torch", "index serves it for", "not confirmed")
    paired = next(
        (
            f.build
            for f in same
            if f.build.torch and f.build.backends and all(any(w in p for w in pairing) for p in f.problems)
        ),
        None,
    )
    if paired is not None and paired.torch is not None:
        torch_minor = ".".join(paired.torch.split(".")[:2])
        served = Backend.parse(paired.backends[-1])
        fix = f"resolve a torch it pairs with (e.g. --torch {torch_minor} --backend {served} for {name} {paired.version}), or {fix}"
    return NoPlanError(f"--with {name}: no build fits {torch} ({plan.backend}){archs}: {why}", fix)


def resolve_with(
    plan: Plan,
    machine: Machine,
    wanted: tuple[str, ...],
    data: CompanionData,
    *,
    pypi: str = PYPI_SIMPLE,
    build: tuple[str, ...] = (),
) -> Plan:
    """``plan`` with the ``--with`` packages resolved into it (or NoPlanError). ``pypi``: the
    index that stands for PyPI (the user's own default index, when pip's configuration names one).
    A package the plan already resolved (a saved plan) is not resolved again."""
    from packaging.requirements import Requirement

    have = {p.name for p in plan.with_packages}
    wanted = tuple(w for w in wanted if canonical(Requirement(w).name) not in have)
    if not wanted:
        return plan
    packages: list[WithPackage] = []
    reasons: list[str] = []
    warnings: list[str] = []
    env = dict(plan.env)
    for requirement in wanted:
        package, why, warn, run_env = resolve_one(requirement, plan, machine, data, pypi, build=build)
        packages.append(package)
        reasons += why
        warnings += warn
        env.update(run_env)
    index_urls = plan.index_urls
    from_pypi = any(p.how != "index" and p.index_url == pypi for p in packages)
    # Other packages (timm, transformers) come from the plan's indexes; a plan with torch's index
    # alone (an older CPU release, which pins no interpreter Triton) gets PyPI after it too.
    plain = any(p.how == "index" for p in packages) and len(index_urls) < 2
    if pypi not in index_urls and (from_pypi or plain):
        # A library PyTorch's index does not carry comes from PyPI, ranked after it: torch's
        # pins carry a local label (+rocm7.2) that PyPI's builds never have.
        index_urls = (*index_urls, pypi)
    return dataclasses.replace(
        plan,
        with_packages=(*plan.with_packages, *packages),
        reasons=(*plan.reasons, *reasons),
        warnings=(*plan.warnings, *warnings),
        env=env,
        index_urls=index_urls,
    )


# (torch release, backend index rocm7.1 / cu128) -> the plan for them, as the session makes
# it (held to what the index serves); raises NoPlanError when that pair does not fit the machine.
Replan = Callable[[str, Backend], Plan]


def pair_with(
    plan: Plan, wanted: tuple[str, ...], data: CompanionData, replan: Replan, *, build: tuple[str, ...] = ()
) -> Plan:
    """One resolution for a ``--with`` library whose native code is built for one torch release
    (xformers): when no prebuilt wheel of it fits the plan's torch, the plan becomes the first
    candidate, in rocmkit's order (its wheels newest first, each backend index newest first),
    whose torch has that library's wheel and fits the machine, and the reasons say what was
    traded. A source build stays only when no candidate has a wheel, or when asked (``build``:
    ``--build NAME``)."""
    from packaging.requirements import Requirement

    current = plan
    for requirement in wanted:
        req = Requirement(requirement)
        name = canonical(req.name)
        companion = data.companions.get(name)
        if companion is None or not companion.pins_torch or name in build or not current.torch_version:
            continue
        pinned = next((s.version for s in req.specifier if s.operator in ("==", "===")), None)
        wheels = [
            b
            for b in data.builds_of(name)
            if b.kind == "wheel" and (not req.specifier or req.specifier.contains(b.version, prereleases=True))
        ]
        if any(not assess(b, current, pinned).problems for b in wheels):
            continue  # a wheel fits the torch planned: nothing to trade
        kind = current.backend.kind
        found = _first_paired(current, wheels, kind, pinned, replan)
        if found is not None:
            candidate, wheel, index = found
            was = current.torch_version.split("+", 1)[0]
            now = (candidate.torch_version or "").split("+", 1)[0]
            why = (
                f"torch {now}, not {was}: the newest release {name} publishes a {_toolkit(wheel)} wheel for "
                f"({name} {wheel.version} on {index})"
            )
            if any(b.kind == "source" and b.backend == kind for b in data.builds_of(name)):
                why += f"; --build {name} builds it from source against torch {was} instead (hours)"
            current = dataclasses.replace(candidate, reasons=(why, *candidate.reasons))
    return current


def _first_paired(
    plan: Plan, wheels: list[Build], kind: BackendKind | None, pinned: str | None, replan: Replan
) -> tuple[Plan, Build, str] | None:
    for wheel in wheels:
        if wheel.backend != kind or not wheel.torch or not wheel.backends:
            continue
        for index in reversed(wheel.backends):  # the newest toolkit the machine runs
            try:
                candidate = replan(wheel.torch, Backend.parse(index))
            except NoPlanError:
                continue
            if not assess(wheel, candidate, pinned).problems:
                return candidate, wheel, index
    return None


def pairing_constraints(torch: str, index: Backend) -> dict[str, str]:
    """The constraints that name ``torch`` on the backend index ``index`` (rocm7.1, cu128)."""
    fields = {"torch": torch}
    if index.rocm:
        fields["rocm"] = index.rocm
    elif index.cuda:
        fields["cuda"] = index.cuda
    return fields
