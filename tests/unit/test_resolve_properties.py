"""Properties of resolve over random AMD machines (hypothesis): every plan is one the matrix backs.

A machine whose AMD GPUs no ROCm build of torch carries anywhere in the data (natively or
through a same-family HSA_OVERRIDE_GFX_VERSION sibling; old GCN such as gfx801, gfx803,
gfx902) gets CPU torch with a warning naming them; every other machine gets a ROCm plan or a
NoPlanError that says what to do."""

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


def _carried_by_some_rocm_torch() -> frozenset[str]:
    """Every gfx target some ROCm torch in the data carries: PyTorch's ROCm wheels, the ROCm
    and per-family indexes, and AMD's channels."""
    carried: set[str] = set()
    for release in MATRIX.torch_releases:
        for variant in release.of_kind("rocm"):
            carried.update(variant.archs)
    for rocm_index in MATRIX.rocm_indexes.values():
        carried.update(rocm_index.archs)
    for family in MATRIX.family_indexes:
        carried.update(family.archs)
    for chan in MATRIX.channels.values():
        carried.update(chan.archs, chan.legacy_archs)
    return frozenset(carried)


CARRIED = _carried_by_some_rocm_torch()


def has_rocm_torch(arch: str) -> bool:
    info = MATRIX.archs[arch]
    return arch in CARRIED or (info.override_arch is not None and info.override_arch in CARRIED)


# The rule is only tested if the data still has GPUs on both sides of it.
assert any(not has_rocm_torch(a) for a in ARCHS) and any(has_rocm_torch(a) for a in ARCHS)

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
    assert variant is not None
    if not any(has_rocm_torch(arch) for arch, _ in specs):
        # No ROCm torch anywhere for any of these GPUs: CPU torch, and a warning that names them.
        assert variant.kind == "cpu" and plan.backend.tag == "cpu"
        assert "HSA_OVERRIDE_GFX_VERSION" not in plan.env
        warning = " ".join(plan.warnings)
        assert "CPU" in warning and all(arch in warning for arch, _ in specs)
        return
    assert variant.kind == "rocm"
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
