"""What ``rocmkit docker render`` was asked to do, checked when it is made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.containers.dockerfile import render_all, render_dockerfile
from rocmkit.containers.images import Images, ImageSpec, choose_spec, load_images
from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.session import Session


@dataclass(frozen=True, kw_only=True)
class RenderRequest:
    """What ``rocmkit docker render`` was asked to do, checked when it is made."""

    rocm: str | None = None
    torch: str | None = None
    gfx: str | None = None  # comma-separated
    out: Path | None = None
    check: bool = False
    syntax: bool = False

    def __post_init__(self) -> None:
        if self.out is None and self.check:
            raise UsageError("--check needs --out DIR", "name the folder that holds the Dockerfiles")

    @property
    def one_image(self) -> bool:
        return bool(self.rocm or self.torch or self.gfx)

    @property
    def this_machine(self) -> bool:
        """Nothing named: the image for this machine, on stdout."""
        return not self.one_image and self.out is None

    def rendered(self, session: Session | None = None) -> dict[str, str]:
        """File name -> Dockerfile text: the one image asked for, every image in the matrix
        (``--out`` alone), or, with nothing named, the image for ``session``'s machine."""
        images = load_images()
        if self.this_machine:
            if session is None:
                from rocmkit.session import Session

                session = Session()
            spec = machine_spec(images, session)
            return {spec.filename: render_dockerfile(spec, images, syntax=self.syntax)}
        if not self.one_image:
            return render_all(images, syntax=self.syntax)
        gfx = self.gfx.split(",") if self.gfx is not None else None
        spec = choose_spec(images, rocm=self.rocm, torch=self.torch, gfx=gfx)
        return {spec.filename: render_dockerfile(spec, images, syntax=self.syntax)}


def machine_spec(images: Images, session: Session) -> ImageSpec:
    """The image for the session's machine: the ROCm and torch releases of the plan
    ``rocmkit resolve`` makes for it, installed for the archs of its visible AMD GPUs (the
    image's own install then sets what they need, such as an HSA override)."""
    from rocmkit.resolve.constraints import Constraints

    plan = session.plan(Constraints())
    rocm = plan.backend.removeprefix("rocm") if plan.backend.startswith("rocm") else None
    if rocm is None or not plan.torch_version:
        raise UsageError(
            f"this machine's plan is {plan.backend} wheels, and rocmkit renders ROCm images only",
            "name the image: --rocm X.Y --gfx LIST (or ROCMKIT_GFX=gfx942 ROCMKIT_ROCM_VERSION=6.2.4 for a GPU "
            "node's), or --out DIR for every image in the matrix",
        )
    torch = plan.torch_version.split("+", 1)[0]
    amd = [g for g in session.machine().amd_gpus if g.visible and g.arch]
    # An iGPU beside discrete GPUs is hidden by the plan (HIP_VISIBLE_DEVICES): not an image arch.
    discrete = [g.arch for g in amd if not g.integrated] or [g.arch for g in amd]
    gfx = list(dict.fromkeys(a for a in discrete if a)) or list(plan.target_archs) or None
    # The image's base is per ROCm minor release (images.toml); the plan may name a patch level.
    release = ".".join(rocm.split(".")[:2])
    return choose_spec(images, rocm=release, torch=torch, gfx=gfx)
