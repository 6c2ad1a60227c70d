"""Properties of resolve over random AMD machines (hypothesis): every plan is one the matrix backs."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocmkit.arch import override_to_gfx
from rocmkit.errors import NoPlanError
from rocmkit.machine import Gpu, Machine
from rocmkit.matrix import load_matrix
from rocmkit.resolve import Constraints, resolve

MATRIX = load_matrix()
ARCHS = sorted(MATRIX.archs)

gpu_specs = st.lists(st.tuples(st.sampled_from(ARCHS), st.booleans()), min_size=1, max_size=4)


@settings(max_examples=120, deadline=None)
@given(specs=gpu_specs, torch=st.sampled_from([None, "2.5", "2.7", "2.9", "2.11"]))
def test_random_amd_machines(specs: list[tuple[str, bool]], torch: str | None) -> None:
    machine = Machine(
        gpus=tuple(
            Gpu(vendor="amd", index=i, arch=arch, integrated=igpu, name=f"G{i}")
            for i, (arch, igpu) in enumerate(specs)
        )
    )
    try:
        plan = resolve(machine, Constraints(python="3.11", torch=torch))
    except NoPlanError as exc:
        assert exc.fix  # a NoPlanError always says what to do
        return
    version, _, index = (plan.torch_version or "").partition("+")
    release = MATRIX.torch_release(version)
    assert release is not None and (torch is None or release.series == torch)
    variant = release.variant(index)
    assert variant is not None and variant.kind == "rocm"
    override = plan.env.get("HSA_OVERRIDE_GFX_VERSION")
    visible = plan.env.get("HIP_VISIBLE_DEVICES")
    kept = [int(i) for i in visible.split(",")] if visible else list(range(len(specs)))
    assert kept, "a plan always keeps at least one GPU"
    for ordinal in kept:
        arch = specs[ordinal][0]
        # Each kept GPU runs code that the wheel carries: its own, or the override's (same family).
        runs = override_to_gfx(override) if override else arch
        assert runs in variant.archs
        if override:
            assert MATRIX.archs[arch].family == MATRIX.archs[runs].family
    assert len(plan.unsupported_gpus) == len(specs) - len(kept)
    assert set(plan.target_archs) <= set(variant.archs)
