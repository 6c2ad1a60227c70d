"""AMD's own channels: ``--channel amd`` (ROCm releases), ``amd-rc`` (release candidates) and
``amd-nightly`` (nightlies; ``therock`` is its old name), from ``matrices/channels.toml``.

AMD publishes one index per stream for every GPU: torch there is host code, and a
``device-gfxNNNN`` extra per GPU target adds that target's kernels (AMD's RELEASES.md).
So the plan names one extra for each arch the node has (a node with an MI300X and an
RX 7900 XTX gets ``device-gfx942,device-gfx1100``); a GPU the channel has no device package
for is hidden, as the stable path hides a GPU its wheel cannot run. With no AMD GPU to go
by (an image build), the all-arch index (``whl/``, ``device-all`` automatic) is used.

``--backend rocmX.Y`` picks the ROCm release: releases before the channel's ``layout_from``
live on the older multi-arch index (``legacy_url``), and ``rocm[libraries,device-...]`` is
pinned beside torch in the version form of the channel's stream (``==7.14.*`` for
releases, ``>=7.14.0rc0,<7.15`` for release candidates, ``>=7.14.0a0,<7.15`` for
nightlies: AMD's versioning.md), since torch itself names the ROCm it was built with.
"""

from __future__ import annotations

from rocmkit.errors import NoPlanError, rerun
from rocmkit.machine import Machine
from rocmkit.matrix import Channel, Matrix
from rocmkit.matrix.model import release_key
from rocmkit.plan import Backend, Plan
from rocmkit.resolve.constraints import Constraints
from rocmkit.resolve.driver import check_driver
from rocmkit.resolve.explain import Notes, join
from rocmkit.resolve.gpus import AmdGpu, amd_gpus, describe
from rocmkit.resolve.releases import companions_of

# The lowest version of each stream's X.Y.Z release (AMD's versioning.md): a release
# candidate is X.Y.ZrcN, a nightly X.Y.ZaYYYYMMDD.
_PRE = {"rc": "rc0", "nightly": "a0"}


def rocm_spec(stream: str | None, rocm: str) -> str:
    """The specifier that selects ROCm ``rocm`` ("7.14" or "7.14.1") on ``stream``."""
    parts = release_key(rocm)
    if stream in _PRE:
        lo = ".".join(str(p) for p in (*parts, 0)[:3])
        hi = (parts[0], parts[1] + 1) if len(parts) < 3 else (parts[0], parts[1], parts[2] + 1)
        return f">={lo}{_PRE[stream]},<{'.'.join(str(p) for p in hi)}"
    return f"=={rocm}" if len(parts) >= 3 else f"=={rocm}.*"


def torch_spec(torch: str | None) -> str:
    """ "2.13" -> "==2.13.*", "2.13.1" -> "==2.13.1" (local +rocm... labels match either)."""
    if not torch:
        return ""
    return f"=={torch}" if len(release_key(torch)) >= 3 else f"=={torch}.*"


def plan(machine: Machine, m: Matrix, cons: Constraints, notes: Notes, python: str) -> Plan:
    chan = m.channels[cons.channel]
    gpus = amd_gpus(machine, m)
    for g in gpus:
        if g.arch_from != "detected":
            notes.why(f"{g.label}: detection gave no gfx name; its {g.arch_from} is {g.arch}")
    if cons.channel != chan.name:
        notes.why(f"--channel {cons.channel} is the old name of {chan.name} (AMD's nightly builds)")
    _check_python(chan, python)
    if cons.index_base:
        notes.warn(f"--index-base replaces download.pytorch.org only; AMD's index for {chan.name} is used as is")
    wanted = cons.rocm_version
    index = chan.index_for(wanted)
    legacy = index == chan.legacy_url and index != chan.url
    notes.relies_on(chan, "channels.toml", f"the {chan.name} channel's index {index}", "legacy_url" if legacy else "url")
    if wanted and chan.layout_from:
        notes.relies_on(
            chan, "channels.toml", f"ROCm {chan.layout_from} is the first release in the whl/whl-next layout",
            "layout_from",
        )
        if legacy:
            notes.why(
                f"ROCm {wanted} predates the whl-next layout (from {chan.layout_from}): "
                f"AMD's multi-arch index {index}"
            )
    offered = chan.archs_for(wanted)  # the device packages of the index picked (legacy_url's may differ)
    usable = [g for g in gpus if g.arch in offered]
    unusable = [g for g in gpus if g.arch not in offered]
    torch = torch_spec(cons.torch)
    if not gpus:
        return _all_archs(machine, m, cons, notes, python, chan, index, legacy, torch)
    if not usable:
        what = join(sorted({g.arch or "unknown" for g in gpus}))
        # The first few of its targets: the whole list (30 and more) is no line to read.
        some = join(list(offered)[:6]) + (f" and {len(offered) - 6} more" if len(offered) > 6 else "")
        raise NoPlanError(
            f"AMD's {chan.name} wheels have device code per gfx target: none for {what} (they have {some})",
            (
                "ROCMKIT_GFX=gfxNNNN rocmkit resolve   # or ROCM_BOOTSTRAP_FORCE_GFX_ARCH: plan for the target GPU",
                rerun("--channel", "stable"),
            ),
        )
    archs = sorted({g.arch or "" for g in usable})
    extras = ",".join(f"device-{a}" for a in archs)
    reqs = [p.replace("device-{gfx}", extras) for p in chan.packages]
    if torch:
        reqs = [r + torch if r.startswith("torch[") else r for r in reqs]
    notes.why(
        f"{chan.name}: AMD's index {index} has device packages for {join(archs)}; "
        f"the {extras} extra{'s add' if len(archs) > 1 else ' adds'} them to a torch of host code only"
    )
    notes.why(f"{describe(usable)} {'runs' if len(usable) == 1 else 'run'} natively: no HSA_OVERRIDE_GFX_VERSION")
    notes.relies_on(
        chan, "channels.toml", f"the {chan.name} channel's device packages and Pythons",
        "legacy_archs" if legacy and chan.legacy_archs else "archs",
    )
    if wanted:
        reqs.append(f"rocm[libraries,{extras}]{rocm_spec(chan.stream, wanted)}")
        notes.why(
            f"--backend rocm{wanted}: rocm[libraries,{extras}] is pinned beside torch, so the resolver takes the "
            f"torch built with ROCm {wanted} ({chan.stream} versions: AMD's versioning.md)"
        )
        check_driver(machine, m, notes, wanted)
    else:
        notes.why(
            f"no --backend rocmX.Y: the newest ROCm on {chan.name}"
            + (f" ({chan.rocm} as matrices/channels.toml records it)" if chan.rocm else "")
            + "; torch depends on rocm[libraries] from the same index"
        )
        if chan.rocm:
            notes.relies_on(chan, "channels.toml", f"{chan.name} publishes ROCm {chan.rocm}", "rocm")
        check_driver(machine, m, notes, chan.rocm)
    _stream_warning(chan, notes)
    env: dict[str, str] = {}
    unsupported: list[str] = []
    if unusable:
        visible = ",".join(str(g.ordinal) for g in usable)
        env["HIP_VISIBLE_DEVICES"] = visible
        for g in unusable:
            why = f"AMD has no device-{g.arch} package" if g.arch else "its gfx arch is unknown"
            unsupported.append(f"{g.label}: {why}; hidden with HIP_VISIBLE_DEVICES={visible}")
            notes.warn(f"{g.label} will not work with {chan.name}: {why}; HIP_VISIBLE_DEVICES={visible} hides it")
    targets = "-".join(archs)
    if len(f"amd-{chan.stream or chan.name}-{targets}") > 64:
        targets = f"{len(archs)}-targets"  # a plan's backend is a short name (planschema); target_archs lists them all
    return Plan(
        backend=Backend.amd_channel(chan.stream or chan.name, targets),
        channel=chan.name,
        requirements=tuple(reqs),
        companions=companions_of(reqs),
        index_urls=(index,),
        env=env,
        warnings=tuple(notes.warnings),
        reasons=tuple(notes.reasons),
        python=python,
        target_archs=tuple(archs),
        unsupported_gpus=tuple(unsupported),
    )


def _all_archs(
    machine: Machine,
    m: Matrix,
    cons: Constraints,
    notes: Notes,
    python: str,
    chan: Channel,
    index: str,
    legacy: bool,
    torch: str,
) -> Plan:
    """No AMD GPU here (an image build): every device package, as AMD's all-arch route does."""
    if legacy or not chan.all_arch_url:
        reqs = [p.replace("device-{gfx}", "device-all") for p in chan.packages]
        where = index
        how = "the device-all extra installs every target's device package"
    else:
        reqs = [p.replace("[device-{gfx}]", "") for p in chan.packages]
        where = chan.all_arch_url
        how = "that index makes device-all automatic"
        notes.relies_on(chan, "channels.toml", f"the {chan.name} channel's all-arch index {where}", "all_arch_url")
    if torch:
        reqs = [r + torch if r.startswith("torch") else r for r in reqs]
    notes.why(
        f"no AMD GPU is visible here, so {chan.name}'s wheels for every GPU target ({where}): {how} "
        "(set ROCMKIT_GFX or ROCM_BOOTSTRAP_FORCE_GFX_ARCH for a smaller install for known targets)"
    )
    if cons.rocm_version:
        reqs.append(f"rocm[libraries,device-all]{rocm_spec(chan.stream, cons.rocm_version)}")
    _stream_warning(chan, notes)
    return Plan(
        backend=Backend.amd_channel(chan.stream or chan.name, "all"),
        channel=chan.name,
        requirements=tuple(reqs),
        companions=companions_of(reqs),
        index_urls=(where,),
        warnings=tuple(notes.warnings),
        reasons=tuple(notes.reasons),
        python=python,
    )


def _check_python(chan: Channel, python: str) -> None:
    if chan.python_min and chan.python_max:
        key = release_key(python)[:2]
        if not release_key(chan.python_min) <= key <= release_key(chan.python_max):
            raise NoPlanError(
                f"AMD's {chan.name} index has wheels for Python {chan.python_min} to {chan.python_max}, not {python}",
                f"use a Python in that range (--python {chan.python_max})",
            )


def _stream_warning(chan: Channel, notes: Notes) -> None:
    if chan.stream == "nightly":
        notes.warn(
            f"{chan.name} is AMD's nightly channel: versions are not pinned, and its torch depends on "
            "rocm[libraries] from the same index (it may replace a ROCm installed with pip); record what was "
            "installed with `rocmkit install --lock FILE`"
        )
    elif chan.stream == "rc":
        notes.warn(f"{chan.name} holds AMD's release candidates: pre-release ROCm, not a final release")


__all__ = ["AmdGpu", "plan", "rocm_spec", "torch_spec"]
