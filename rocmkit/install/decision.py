"""The one decision ``rocmkit resolve`` and ``rocmkit install`` both make (so ``resolve`` prints
what ``install`` carries out): :func:`decide`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.install.existing import keeps
from rocmkit.plan import Backend, Plan
from rocmkit.resolve.constraints import Constraints

if TYPE_CHECKING:
    from rocmkit.session import Session


def decide(
    session: Session,
    cons: Constraints,
    prefix: Path | None,
    *,
    with_packages: bool,
    upgrade: bool,
    fallback_index: bool,
    hold: Callable[[Plan], Plan] = lambda plan: plan,
    say: Callable[[str], None] = lambda _: None,
    wanted: tuple[str, ...] = (),
    build: tuple[str, ...] = (),
) -> Plan:
    """The one decision ``resolve`` and ``install`` both make: the venv's rocmkit torch kept (a
    ``--with`` plan, unless ``--upgrade``), then the plan through the session, held to what its
    index serves or, with ``--fallback-index``, to the user's pip sources when it does not answer;
    then, for a ``--with`` library built for one torch release (xformers), the first candidate
    torch it has a prebuilt wheel for (:func:`rocmkit.companions.resolve.pair_with`; ``build``:
    the names asked to be built from source instead).
    ``hold``: install's last step on the plan (a listed-only build its index lacks: its fallback)."""
    from rocmkit.install.indexcheck import user_fallbacks

    kept = keeps(cons, prefix, with_packages=with_packages, upgrade=upgrade)
    if kept is not None:
        say(kept.reason())
        cons = kept.constraints(cons)
    fallbacks = user_fallbacks() if fallback_index and not session.offline else ()
    plan = hold(session.plan(cons, fallbacks=fallbacks))
    if kept is not None:
        return kept.check(plan)
    chosen = cons.torch or cons.rocm or cons.cuda or cons.cpu or cons.channel != "stable"
    if not wanted or chosen or cons.frameworks != ("torch",):
        return plan  # the user named the build: a --with library fits it, or is refused
    from rocmkit.companions.data import load_companions
    from rocmkit.companions.resolve import pair_with, pairing_constraints

    def replan(torch: str, index: Backend) -> Plan:
        named = dataclasses.replace(cons, **pairing_constraints(torch, index))  # type: ignore[arg-type]
        return hold(session.plan(named, fallbacks=fallbacks))

    plan = pair_with(plan, wanted, load_companions(), replan, build=build)
    if session.offline or not plan.unserved or not plan.torch_version:
        return plan
    return _served_candidate(plan, wanted, session, fallbacks, replan)


def _served_candidate(
    plan: Plan,
    wanted: tuple[str, ...],
    session: Session,
    fallbacks: Sequence[tuple[str, bool]],
    replan: Callable[[str, Backend], Plan],
) -> Plan:
    """When a ``--with`` package needs a companion the sources do not serve for the planned torch
    (timm needs torchvision), the first older release, newest first and within the live check's
    support window, whose plan has that companion served: one resolution of the whole closure,
    said as a trade. None found: the plan stands, and install (and resolve) refuse it before
    anything changes, naming the fixes."""
    from packaging.version import Version

    from rocmkit.errors import NoPlanError
    from rocmkit.install.closure import sources_now
    from rocmkit.install.companions import unserved_need
    from rocmkit.packages import requirement_name
    from rocmkit.resolve.live import WINDOW_SERIES

    assert plan.torch_version is not None and plan.python is not None
    need = unserved_need(plan, wanted, plan.requirements, sources_now(plan, fallbacks), plan.python)
    if need is None:
        return plan
    project, _, via, _ = need
    now = Version(plan.torch_version)
    series = sorted({r.series for r in session.matrix().torch_releases}, key=Version)
    here = series.index(f"{now.release[0]}.{now.release[1]}") if f"{now.release[0]}.{now.release[1]}" in series else None
    for release in reversed(session.matrix().torch_releases):
        older = Version(release.version)
        if older >= Version(now.public) or (here is not None and here - series.index(release.series) > WINDOW_SERIES):
            continue
        try:
            candidate = replan(release.version, (Backend.read(now.local) if now.local else None) or plan.backend)
        except NoPlanError:
            continue
        pins = {requirement_name(r) for r in candidate.requirements}
        if project in pins and not any(requirement_name(u) == project for u in candidate.unserved):
            why = (
                f"torch {older}, not {now.public}: the newest release whose {project} (needed by "
                f"{', '.join(via)}) the sources serve for this build"
            )
            return dataclasses.replace(candidate, reasons=(why, *candidate.reasons))
    return plan
