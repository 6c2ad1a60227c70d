"""Does a published wheel already cover these archs? Asked of resolve, said in the plan.

A source build takes hours; when a published wheel runs natively on the GPUs the plan says so
(the build still runs: the user asked for it). When the wheel fits only through
HSA_OVERRIDE_GFX_VERSION, the plan says that a native build removes the override.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocmkit.errors import RocmkitError
from rocmkit.source_build.targets import ArchTargets

if TYPE_CHECKING:
    from rocmkit.session import Session


def wheel_coverage(target: ArchTargets, session: Session, torch: str | None) -> str | None:
    """One sentence on what the published wheels do for ``target`` on ``session``'s machine (the
    detected one, or for ``--arch`` one made of the targets: :meth:`Session.for_archs`); None
    when not applicable."""
    if target.backend != "rocm":
        return None  # CUDA wheels carry every current compute capability
    from rocmkit.resolve import Constraints

    # A typo (gfx1301 for gfx1031) would otherwise surface only when hipcc rejects the
    # arch, well into an hours-long build.
    unknown = [a for a in target.archs if session.matrix().gfx_arch(a) is None]
    if unknown:
        return (
            f"{', '.join(unknown)} is not in matrices/gfx.toml: check the name against "
            "`rocmkit detect` before building (a new arch hipcc knows still builds)"
        )

    try:
        # The data's answer: a note beside an hours-long build does not wait on an index.
        plan = session.plan(Constraints(torch=torch), live=False)
    except RocmkitError as exc:
        return f"no published wheel fits ({exc.message}): a source build is the way"
    native = [a for a in target.archs if a in plan.target_archs]
    if len(native) == len(target.archs):
        return (
            f"the published wheel {plan.torch_version} already runs natively on {', '.join(native)} "
            f"(`rocmkit install`); building anyway, as asked"
        )
    override = plan.env.get("HSA_OVERRIDE_GFX_VERSION")
    missing = [a for a in target.archs if a not in native]
    if override:
        return (
            f"the published wheel {plan.torch_version} runs {', '.join(missing)} only through "
            f"HSA_OVERRIDE_GFX_VERSION={override}; this build runs natively without it"
        )
    return f"no published wheel has code for {', '.join(missing)}: a source build is the way"
