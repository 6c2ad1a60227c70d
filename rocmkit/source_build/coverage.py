"""Does a published wheel already cover these archs? Asked of resolve, said in the plan.

A source build takes hours; when a published wheel runs natively on the GPUs the plan says so
(the build still runs: the user asked for it). When the wheel fits only through
HSA_OVERRIDE_GFX_VERSION, the plan says that a native build removes the override.
"""

from __future__ import annotations

from rocmkit.errors import RocmkitError
from rocmkit.machine import Gpu, Machine
from rocmkit.source_build.targets import ArchTargets


def machine_for(target: ArchTargets) -> Machine:
    """A machine holding one GPU per target arch (for --arch, where nothing was detected)."""
    gpus = tuple(Gpu(vendor="amd", index=i, arch=a, integrated=False) for i, a in enumerate(target.archs))
    return Machine(gpus=gpus, source="--arch")


def wheel_coverage(target: ArchTargets, machine: Machine | None, torch: str | None) -> str | None:
    """One sentence on what the published wheels do for ``target``; None when not applicable."""
    if target.backend != "rocm":
        return None  # CUDA wheels carry every current compute capability
    from rocmkit.matrix import load_matrix
    from rocmkit.resolve import Constraints, resolve

    # A typo (gfx1301 for gfx1031) would otherwise surface only when hipcc rejects the
    # arch, well into an hours-long build.
    unknown = [a for a in target.archs if load_matrix().gfx_arch(a) is None]
    if unknown:
        return (
            f"{', '.join(unknown)} is not in matrices/gfx.toml: check the name against "
            "`rocmkit detect` before building (a new arch hipcc knows still builds)"
        )

    probe = machine if machine is not None else machine_for(target)
    try:
        plan = resolve(probe, Constraints(torch=torch))
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
