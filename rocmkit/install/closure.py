"""The whole closure an install puts in, as uv resolves it, without installing anything.

``uv pip compile`` (uv is what rocmkit installs with) against the sources the install will really
use: the plan's indexes that answer, and, when torch's own does not and ``--fallback-index`` is
given, the user's pip sources that do (as :func:`rocmkit.install.indexcheck.decide_sources` picks
them). ``resolve --closure`` prints it; install refuses a ``--with`` package whose closure needs a
companion no source serves (:func:`rocmkit.install.companions.refuse_unserved_needs`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rocmkit.errors import NoPlanError

if TYPE_CHECKING:
    from rocmkit.install.base import Sources
    from rocmkit.plan import Plan
    from rocmkit.pyenv import PyEnv

Closure = dict[str, tuple[str, tuple[str, ...]]]  # project -> (version, the projects that pull it in)


def sources_now(plan: Plan, fallbacks: Sequence[tuple[str, bool]]) -> Sources:
    """The sources an install of ``plan`` would use now: its indexes that answer, and when torch's
    own does not, the ``fallbacks`` (the user's pip sources under --fallback-index) that do."""
    from rocmkit.install.base import Sources
    from rocmkit.install.indexcheck import answers

    live = [u for u in plan.index_urls if answers(u)]
    links: list[str] = []
    if plan.index_urls and plan.index_urls[0] not in live:
        live += [u for u, is_index in fallbacks if is_index and u not in live and answers(u)]
        links = [u for u, is_index in fallbacks if not is_index]
    return Sources(index_urls=tuple(live), find_links=tuple(links))


def closure_of(requirements: tuple[str, ...], sources: Sources, target: PyEnv | str) -> tuple[Closure | None, str]:
    """uv's resolution of ``requirements`` from ``sources`` for ``target`` (an environment, or a
    Python version for a plan not yet tied to one): (the closure, "") or (None, why not)."""
    from rocmkit.errors import ToolError
    from rocmkit.install.base import InstallSpec
    from rocmkit.install.uv import UvInstaller
    from rocmkit.install.venv import find_uv
    from rocmkit.pyenv import this_python

    if find_uv() is None:
        return None, "uv is not installed"
    if not (sources.index_urls or sources.find_links):
        return None, "no source answers"
    # For a Python version uv is told the version; rocmkit's own interpreter stands in as the target.
    env = this_python() if isinstance(target, str) else target
    try:
        uv = UvInstaller(env)
    except ToolError as exc:
        return None, exc.message
    found, result = uv.closure(
        InstallSpec(requirements=requirements, sources=sources),
        python_version=target if isinstance(target, str) else None,
    )
    if result.ok:
        return found, ""
    return None, _uv_reason(result.stderr or result.stdout) or result.describe()


def _uv_reason(text: str) -> str:
    """uv's failure in one line: its ``error:`` and the last ``cause:`` under it (the root cause)."""
    said = [line.strip() for line in text.splitlines() if line.strip()]
    error = next((line.removeprefix("error:").strip() for line in said if line.startswith("error:")), "")
    causes = [line.removeprefix("cause:").strip() for line in said if line.startswith("cause:")]
    return ": ".join(part for part in (error, causes[-1] if causes else "") if part) or (said[-1] if said else "")


def plan_closure(plan: Plan, fallbacks: Sequence[tuple[str, bool]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``name==version`` of everything an install of ``plan`` (and its prebuilt ``--with``
    packages) would put in, and the sources it was resolved from (masked); NoPlanError, before
    anything is installed, when it does not resolve."""
    from rocmkit.util.redact import redact_text

    sources = sources_now(plan, fallbacks)
    wanted = (*plan.requirements, *(p.requirement for p in plan.with_packages if p.how != "source"))
    found, why = closure_of(wanted, sources, plan.python or f"{sys.version_info.major}.{sys.version_info.minor}")
    if found is None:
        where = ", ".join((*sources.index_urls, *sources.find_links)) or "no source that answers"
        raise NoPlanError(
            f"the plan's closure does not resolve from {redact_text(where)}: {redact_text(why)}",
            "an install would fail the same way: check the index (--index-base), or --fallback-index "
            "to use your pip configuration's sources",
        )
    pins = tuple(f"{name}=={version}" for name, (version, _) in sorted(found.items()))
    return pins, tuple(redact_text(u) for u in (*sources.index_urls, *sources.find_links))
