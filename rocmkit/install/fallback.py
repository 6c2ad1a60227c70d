"""The planned build is known only from upstream's build lists: if its index answers without
it, install the plan's fallback (the newest confirmed build on the *same* index), loudly.

resolve plans the newest release upstream built for the machine even before an index has
been seen serving it (``Plan.fallback`` names the newest confirmed build beside it). Before
pip or uv run, install reads the torch page of the planned index once: it serves the planned
build (the plan stands), it does not answer (the plan stands: the index check after this
says what to do), or it answers without it, and then the fallback's pins replace the plan's.
Never another index or source: the fallback lives on the index the plan already names.
"""

from __future__ import annotations

import dataclasses

from rocmkit.packages import canonical, is_triton, parse_pin, requirement_name
from rocmkit.plan import Plan
from rocmkit.resolve.live import ProjectReader, check_pins, default_cache, project_reader


def _pin_of(requirements: tuple[str, ...], project: str) -> str | None:
    for req in requirements:
        pin = parse_pin(req)
        if pin is not None and pin.project == canonical(project):
            return pin.version
    return None


def fallback_plan(plan: Plan) -> Plan:
    """``plan`` with its fallback's pins (same index, same environment), marked as such."""
    reqs = plan.fallback
    rocm = plan.backend.rocm is not None
    # torch, and a ROCm build's Triton, are required; the rest (torchvision, torchaudio, the CPU
    # plan's interpreter Triton and numpy) are companions, as resolve marks them.
    required = {
        r for r in reqs if requirement_name(r) == "torch" or (rocm and is_triton(requirement_name(r) or ""))
    }
    triton = next((r for r in reqs if rocm and is_triton(requirement_name(r) or "")), None)
    return dataclasses.replace(
        plan,
        torch_version=_pin_of(reqs, "torch"),
        requirements=reqs,
        companions=tuple(r for r in reqs if r not in required),
        triton=triton,
        fallback=(),
    )


def hold_to_index(plan: Plan, *, read: ProjectReader | None = None) -> tuple[Plan, str | None]:
    """The plan to install, and the loud message when it fell back."""
    pin = _pin_of(plan.requirements, "torch")
    if not plan.fallback or not plan.index_urls or not plan.python or pin is None:
        return plan, None
    read = read or project_reader(cache=default_cache())
    index = plan.index_urls[0]
    seen = read(index, "torch")
    if not seen.answered or seen.serves(pin, plan.python):
        return plan, None
    back = fallback_plan(plan)
    message = (
        f"WARNING: {index} answers but does not serve torch {pin} for Python {plan.python} (planned as the "
        f"newest release upstream built for this machine, known only from its build lists); installing the "
        f"fallback torch {back.torch_version} from the same index instead"
    )
    back = dataclasses.replace(back, warnings=(*back.warnings, message))
    return check_pins(back, read), message
