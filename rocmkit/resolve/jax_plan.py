"""``resolve --framework jax``: jax, jaxlib and the GPU plugin + PJRT that fit the machine, one version.

Facts come from ``matrices/jax.toml`` only (:mod:`rocmkit.matrix.jaxdata`):

* AMD GPUs: the ROCm plugin whose major is the node's ROCm major, from PyPI (what
  ``jax[rocm<major>-local]`` installs); when the node has no ROCm a plugin is
  built for (older, or none found), AMD's multi-arch index, which brings ROCm's
  libraries as ``rocm[libraries,device-gfxNNN]``; the GPUs are assessed against
  the gfx code objects read from the plugin wheel, as torch's are against its arch list.
* NVIDIA GPUs: the newest CUDA plugin whose driver floor the node's driver meets.
* No GPU (or ``--backend cpu``): jax and jaxlib alone.

Every pin is the same release: jax and jaxlib ``==V``, the plugin and its PJRT ``==V``
or the newest post-release of V (``0.9.1.post6``), which carry ROCm-only fixes.
"""

from __future__ import annotations

from packaging.version import Version

from rocmkit.errors import NoPlanError, rerun
from rocmkit.machine import Machine
from rocmkit.matrix import Matrix
from rocmkit.matrix.jaxdata import JaxData, JaxPlugin, JaxRelease, PluginBuild, load_jax
from rocmkit.plan import CPU, Backend, Plan
from rocmkit.resolve import platform
from rocmkit.resolve.constraints import Constraints
from rocmkit.resolve.explain import Notes, join, short_source
from rocmkit.resolve.gpus import AmdGpu, amd_gpus, assess, describe, hide_unusable

PYPI = "https://pypi.org/simple"


def _relies(jd: JaxData, notes: Notes, fact_unconfirmed: bool, sources: tuple[str, ...], what: str) -> None:
    if fact_unconfirmed:
        where = ", ".join(short_source(jd.source_text(s)) for s in sources) or "no source"
        notes.warn(f"relies on an unconfirmed fact: {what} (matrices/jax.toml; best source: {where})")


def _releases(jd: JaxData, cons: Constraints, python: str) -> list[JaxRelease]:
    """Releases matching --framework jax=X.Y and the Python, newest first; NoPlanError names the fix."""
    pool = [r for r in reversed(jd.releases) if cons.jax is None or _matches(r.version, cons.jax)]
    if not pool:
        known = ", ".join(r.version for r in jd.releases[-6:])
        raise NoPlanError(f"jax {cons.jax} is not in matrices/jax.toml", f"choose a recent one (--framework jax=X.Y): {known}")
    fits = [r for r in pool if r.supports_python(python)]
    if not fits:
        lo = min(Version(r.python_min) for r in pool)
        hi = max(Version(r.python_max) for r in pool)
        raise NoPlanError(
            f"no jax release{' ' + cons.jax if cons.jax else ''} has jaxlib wheels for Python {python} "
            f"(supported: {lo} to {hi})",
            f"use a Python between {lo} and {hi} (--python X.Y, or a venv made with it)",
        )
    return fits


def _matches(version: str, spec: str) -> bool:
    want = Version(spec).release
    return Version(version).release[: len(want)] == want


def _plan(
    cons: Constraints, notes: Notes, python: str, backend: Backend, release: JaxRelease, reqs: list[str],
    index_urls: tuple[str, ...], *, env: dict[str, str] | None = None, target_archs: tuple[str, ...] = (),
    unsupported: tuple[str, ...] = (),
) -> Plan:
    return Plan(
        backend=backend,
        channel=cons.channel,
        framework="jax",
        jax_version=release.version,
        requirements=tuple(reqs),
        index_urls=index_urls,
        env=env or {},
        warnings=tuple(notes.warnings),
        reasons=tuple(notes.reasons),
        python=python,
        target_archs=target_archs,
        unsupported_gpus=unsupported,
    )


def _pins(release: JaxRelease, plugin: JaxPlugin | None = None, build: PluginBuild | None = None,
          *, with_extra: str = "") -> list[str]:
    reqs = [f"jax=={release.version}", f"jaxlib=={release.version}"]
    if plugin is not None and build is not None:
        reqs += [f"{plugin.plugin}{with_extra}=={build.version}", f"{plugin.pjrt}=={build.version}"]
    return reqs


def _pypi(m: Matrix) -> str:
    """PyPI's simple index, as channels.toml names it (a mirror's copy of the data may name its own)."""
    return m.pypi_url or PYPI


def cpu_plan(m: Matrix, jd: JaxData, cons: Constraints, notes: Notes, python: str) -> Plan:
    release = _releases(jd, cons, python)[0]
    notes.why(f"jax {release.version}: the newest release with jaxlib wheels for Python {python}; "
              "jaxlib runs on the CPU, no plugin is needed")
    _relies(jd, notes, not release.is_confirmed(), release.sources, f"jax {release.version} exists")
    return _plan(cons, notes, python, CPU, release, _pins(release), (_pypi(m),))


def plan(machine: Machine, m: Matrix, cons: Constraints, notes: Notes, python: str, *,
         jd: JaxData | None = None) -> Plan:
    jd = jd or load_jax()
    if cons.cpu:
        return cpu_plan(m, jd, cons, notes, python)
    kind = "rocm" if cons.rocm else "cuda" if cons.cuda else machine.backend_kind
    if kind == "rocm":
        return _rocm(machine, m, jd, cons, notes, python)
    if kind == "cuda" or (machine.nvidia is not None and machine.nvidia.driver_version and not machine.gpus):
        return _cuda(machine, m, jd, cons, notes, python)
    if any(not g.visible for g in machine.gpus):
        notes.why("the GPUs are hidden by *_VISIBLE_DEVICES; none is visible, so jax on the CPU")
    else:
        notes.why("no GPU was detected, so jax on the CPU")
    return cpu_plan(m, jd, cons, notes, python)


def _rocm(machine: Machine, m: Matrix, jd: JaxData, cons: Constraints, notes: Notes, python: str) -> Plan:
    rocm = cons.rocm_version or machine.rocm.version
    major = int(rocm.split(".")[0]) if rocm else None
    families = {p.major: p for p in jd.of_backend("rocm")}
    releases = _releases(jd, cons, python)
    gpus = amd_gpus(machine, m)
    if major is not None and major in families:
        plugin = families[major]
        notes.why(f"ROCm {rocm} is installed{' (--backend)' if cons.rocm else ''}: the {plugin.family} plugin "
                  f"({plugin.plugin}) is built for ROCm {major}.x")
        route = jd.route("pypi")
    else:
        # No plugin for this ROCm (an older one, or none found): AMD's multi-arch index brings its own ROCm.
        plugin = max(families.values(), key=lambda p: (_newest_build(releases, p.family, python) is not None, -p.major))
        route = jd.route("amd-multi-arch")
        have = ", ".join(f"ROCm {k}.x" for k in sorted(families))
        found = f"ROCm {rocm} is installed" if rocm else "no ROCm installation was found"
        notes.why(f"{found}, and JAX ROCm plugins exist for {have} only: AMD's multi-arch index brings "
                  f"ROCm {plugin.major}'s libraries as pip packages (rocm[libraries,device-gfxNNN]) with the plugin")
        if rocm:
            notes.warn(f"the node's ROCm {rocm} is older than any JAX ROCm plugin needs; the plan installs "
                       f"ROCm {plugin.major} libraries into the venv, which still need a recent amdgpu driver")
    for release in releases:
        build = release.build(plugin.family, python)
        if build is None:
            continue
        if plugin.min_jaxlib and Version(release.version) < Version(plugin.min_jaxlib):
            continue
        break
    else:
        spans = [(r, b) for r in jd.releases for b in r.plugins if b.family == plugin.family
                 and not (plugin.min_jaxlib and Version(r.version) < Version(plugin.min_jaxlib))]
        lo = min((Version(b.python_min) for _, b in spans), default=None)
        hi = max((Version(b.python_max) for _, b in spans), default=None)
        raise NoPlanError(
            f"no jax release has {plugin.plugin} wheels for Python {python}"
            + (f" with jaxlib >= {plugin.min_jaxlib} (for {plugin.module})" if plugin.min_jaxlib else ""),
            f"use a Python between {lo} and {hi} (--python X.Y, or a venv made with it)" if lo and hi
            else f"matrices/jax.toml lists no {plugin.plugin} build; run `rocmkit matrix refresh --write`",
        )
    notes.why(f"jax {release.version}: the newest release with {plugin.plugin} {build.version} and "
              f"{plugin.pjrt} {build.version} for Python {python}; jax, jaxlib, plugin and PJRT pinned to one version")
    if build.version != release.version:
        notes.why(f"{plugin.plugin} {build.version} is the newest post-release of {release.version} "
                  "(ROCm-only fixes ship as post-releases)")
    _relies(jd, notes, not release.is_confirmed(), release.sources, f"jax {release.version} exists")
    env, target, unsupported = _assess_gpus(jd, machine, notes, plugin, build, gpus)
    reqs = _pins(release, plugin, build)
    index_urls: tuple[str, ...] = (_pypi(m),)
    if route is None:
        raise NoPlanError("matrices/jax.toml lacks the install routes", "reinstall rocmkit")
    if route.name == "amd-multi-arch":
        extras = _device_extras(m, gpus, target)
        if not extras:
            raise NoPlanError(
                f"no GPU here is both among {plugin.plugin}'s archs and a device extra of AMD's multi-arch index "
                f"({describe(gpus) or 'no AMD GPU arch known'})",
                "install ROCm 7 on the node (the PyPI route), or set ROCMKIT_GFX=gfxNNN if the arch is misdetected",
            )
        first = (route.first or "").replace("device-{gfx}", ",".join(f"device-{a}" for a in extras))
        # ROCm's libraries first, then the plugin and PJRT (from AMD's index), then jax and jaxlib.
        reqs = [*([first] if first else []), *reqs[2:], *reqs[:2]]
        arch = extras[0]
        index_urls = (route.index, _pypi(m))
        notes.why(route.description.format(major=plugin.major, gfx=arch))
        _relies(jd, notes, not route.is_confirmed(), route.sources, f"the {route.name} route")
        notes.warn(f"AMD's multi-arch index ({route.index}) is a nightly index: which jax versions it holds "
                   f"is not recorded; if {plugin.plugin}=={build.version} is missing there, pass --framework jax=X.Y with one it has")
    else:
        notes.why(route.description.format(major=plugin.major) + (f"; the same as jax[{plugin.extra}]=="
                                                                  f"{release.version}" if plugin.extra else ""))
        if plugin.min_jaxlib:
            notes.why(f"{plugin.module} is known to jaxlib {plugin.min_jaxlib} and later")
    return _plan(cons, notes, python, Backend.parse(plugin.family), release, reqs, index_urls, env=env,
                 target_archs=target, unsupported=unsupported)


def _device_extras(m: Matrix, gpus: tuple[AmdGpu, ...], target: tuple[str, ...]) -> list[str]:
    """The device-gfxNNN extras to install: the usable archs of the discrete GPUs (all usable ones when
    the machine has only integrated GPUs), kept to those AMD's multi-arch index offers (channels.toml
    therock: its legacy_archs, the whl-multi-arch index the route installs from, else its archs)."""
    rock = m.channels.get("therock")
    offered = set(rock.legacy_archs or rock.archs) if rock is not None else set(target)
    discrete = {g.arch for g in gpus if not g.integrated and g.arch in target}
    return sorted(a for a in (discrete or set(target)) if a in offered)


def _newest_build(releases: list[JaxRelease], family: str, python: str) -> PluginBuild | None:
    return next((b for r in releases if (b := r.build(family, python)) is not None), None)


def _assess_gpus(jd: JaxData, machine: Machine, notes: Notes, plugin: JaxPlugin, build: PluginBuild,
                 mine: tuple[AmdGpu, ...]) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...]]:
    read = jd.archs_for(plugin.family, build.version)
    env: dict[str, str] = {}
    if read is None:
        notes.warn(f"matrices/jax.toml records no gfx list for {plugin.plugin}; the GPUs are not checked against it")
        return env, tuple(sorted({g.arch for g in mine if g.arch})), ()
    if read.version != build.version:
        notes.why(f"the gfx list is the one read from {plugin.plugin} {read.version}'s wheel (nearest to {build.version})")
    _relies(jd, notes, not read.is_confirmed("archs"), read.sources, f"{plugin.plugin} carries code for {len(read.archs)} archs")
    fit = assess(mine, read.archs)
    if fit.usable:
        notes.why(f"{describe([u.gpu for u in fit.usable])}: in {plugin.plugin}'s code objects"
                  + (f" (with HSA_OVERRIDE_GFX_VERSION={fit.override})" if fit.override else ""))
    if fit.override:
        env["HSA_OVERRIDE_GFX_VERSION"] = fit.override
    hidden, unsupported = hide_unusable(fit, machine, notes, f"{plugin.plugin} {build.version}", build="plugin")
    return {**env, **hidden}, tuple(sorted({u.code_arch for u in fit.usable})), unsupported


def _driver_major(driver: str | None) -> int | None:
    try:
        return int(driver.split(".")[0]) if driver else None
    except ValueError:
        return None


def _cuda(machine: Machine, m: Matrix, jd: JaxData, cons: Constraints, notes: Notes, python: str) -> Plan:
    driver = machine.nvidia.driver_version if machine.nvidia else None
    have = _driver_major(driver)
    wanted = int((cons.cuda_index.cuda or "0").split(".")[0]) if cons.cuda_index else None  # cu130 -> 13
    refused: list[str] = []
    releases = _releases(jd, cons, python)
    for plugin in sorted(jd.of_backend("cuda"), key=lambda p: -p.major):
        if wanted is not None and plugin.major != wanted:
            continue
        floor = _driver_major(plugin.min_driver)
        if have is not None and floor is not None and have < floor:
            refused.append(f"{plugin.family} needs driver >= {plugin.min_driver}")
            continue
        for release in releases:
            build = release.build(plugin.family, python)
            if build is None or not platform.jax_plugin_exists(machine, plugin.family, build.version):
                continue  # aarch64: only the plugin releases with aarch64 wheels (resolve/platform.py)
            if driver:
                notes.why(f"NVIDIA driver {driver}: {plugin.plugin} needs >= {plugin.min_driver}")
            else:
                notes.warn("the NVIDIA driver version is unknown; the newest CUDA plugin is chosen unchecked")
            if refused:
                notes.why(f"plugins this driver cannot run: {join(refused)}")
            notes.why(f"jax {release.version}: the newest release with {plugin.plugin} {build.version} for Python "
                      f"{python}; {plugin.plugin}[with-cuda] brings CUDA {plugin.major}'s libraries from PyPI "
                      f"(the same as jax[{plugin.extra}]=={release.version})")
            _relies(jd, notes, not plugin.is_confirmed("min_driver"), plugin.sources,
                    f"{plugin.plugin} needs driver {plugin.min_driver}")
            return _plan(cons, notes, python, Backend.parse(plugin.family), release, _pins(release, plugin, build, with_extra="[with-cuda]"),
                         (_pypi(m),))
    raise NoPlanError(
        f"no JAX CUDA plugin fits this machine ({join(refused) if refused else 'none for Python ' + python})",
        ("update the NVIDIA driver", rerun("--backend", "cpu")),
    )


def combine(torch: Plan, jax: Plan) -> Plan:
    """One plan for a venv with torch and jax: both sets of pins, torch's index first (its wheels are
    the ones only that index has), then the jax plan's; the reasons and warnings of both."""
    from dataclasses import replace

    reqs = list(torch.requirements) + [r for r in jax.requirements if r not in torch.requirements]
    urls = list(torch.index_urls) + [u for u in jax.index_urls if u not in torch.index_urls]
    env = dict(torch.env)
    warnings = list(torch.warnings) + [f"jax: {w}" for w in jax.warnings]
    for key, value in jax.env.items():
        if key in env and env[key] != value:
            warnings.append(f"torch's plan sets {key}={env[key]} and jax's {key}={value}; torch's is kept")
        env.setdefault(key, value)
    return replace(
        torch,
        framework="torch+jax",
        jax_version=jax.jax_version,
        requirements=tuple(reqs),
        index_urls=tuple(urls),
        env=env,
        warnings=tuple(warnings),
        reasons=tuple(torch.reasons) + tuple(f"jax: {r}" for r in jax.reasons),
        unsupported_gpus=tuple(torch.unsupported_gpus) + tuple(
            f"jax: {u}" for u in jax.unsupported_gpus if u not in torch.unsupported_gpus
        ),
    )
