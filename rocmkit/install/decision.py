"""The one decision ``rocmkit resolve`` and ``rocmkit install`` both make (so ``resolve`` prints
what ``install`` carries out): :func:`decide`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.install.existing import keeps
from rocmkit.plan import Plan
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

    def replan(torch: str, index: str) -> Plan:
        named = dataclasses.replace(cons, **pairing_constraints(torch, index))  # type: ignore[arg-type]
        return hold(session.plan(named, fallbacks=fallbacks))

    return pair_with(plan, wanted, load_companions(), replan, build=build)
