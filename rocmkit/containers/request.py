"""What ``rocmkit docker render`` was asked to do, checked when it is made."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit.containers.dockerfile import render_all, render_dockerfile
from rocmkit.containers.images import Images, ImageSpec, choose_spec, cuda_release, load_images
from rocmkit.errors import UsageError
from rocmkit.packages import parse_pin
from rocmkit.util.say import Say

if TYPE_CHECKING:
    from rocmkit.plan import Backend
    from rocmkit.session import Session


@dataclass(frozen=True, kw_only=True)
class RenderRequest:
    """What ``rocmkit docker render`` was asked to do, checked when it is made."""

    rocm: str | None = None
    cuda: str | None = None  # "12.8" or "cu128"
    cpu: bool = False
    torch: str | None = None
    gfx: str | None = None  # comma-separated
    out: Path | None = None
    output: Path | None = None  # one Dockerfile, written whole or not at all
    check: bool = False
    syntax: bool = False

    def __post_init__(self) -> None:
        if self.out is None and self.check:
            raise UsageError("--check needs --out DIR", "name the folder that holds the Dockerfiles")
        if self.out is not None and self.output is not None:
            raise UsageError("--out DIR and --output FILE name two places to write", "pass only one of them")
        named = [n for n, v in (("rocm", self.rocm), ("cuda", self.cuda), ("cpu", self.cpu)) if v]
        if len(named) > 1:
            raise UsageError(f"two backends asked for: {' and '.join(named)}", "give one --backend")
        if self.gfx is not None and (self.cuda or self.cpu):
            raise UsageError(
                "--gfx is for ROCm images", "drop --gfx: a CPU or CUDA image runs on whatever the node has"
            )
        if self.cuda is not None:
            cuda_release(self.cuda)

    @property
    def one_image(self) -> bool:
        return bool(self.rocm or self.cuda or self.cpu or self.torch or self.gfx)

    @property
    def this_machine(self) -> bool:
        """Nothing named: the image for this machine, on stdout."""
        return not self.one_image and self.out is None

    @property
    def saved_as(self) -> str | None:
        """The file the build line names, as the user named it (``--out DIR``: DIR/NAME with DIR
        a folder at the checkout's root, as docker/ is); None for stdout."""
        if self.output is not None:
            return str(self.output)
        if self.out is not None:
            return f"{self.out.name}/{{filename}}"
        return None

    def rendered(self, session: Session | None = None, say: Say | None = None) -> dict[str, str]:
        """File name -> Dockerfile text: the one image asked for, every image in the matrix
        (``--out`` alone), or, with nothing named, the image for ``session``'s machine
        (``say`` hears what the image pins differently from the plan, if anything)."""
        images = load_images()
        if self.this_machine:
            if session is None:
                from rocmkit.session import Session

                session = Session()
            spec = machine_spec(images, session, say=say)
            return {spec.filename: render_dockerfile(spec, images, syntax=self.syntax, saved_as=self.saved_as)}
        if not self.one_image:
            return render_all(images, syntax=self.syntax, saved_as=self.saved_as)
        gfx = self.gfx.split(",") if self.gfx is not None else None
        spec = choose_spec(images, rocm=self.rocm, cuda=self.cuda, cpu=self.cpu, torch=self.torch, gfx=gfx)
        return {spec.filename: render_dockerfile(spec, images, syntax=self.syntax, saved_as=self.saved_as)}


def machine_spec(images: Images, session: Session, *, say: Say | None = None) -> ImageSpec:
    """The image for the session's machine: the torch build of the plan ``rocmkit resolve``
    makes for it, and its kind. A ROCm plan's image is installed for the archs of the
    machine's visible AMD GPUs (the image's own install then sets what they need, such as an
    HSA override); a CUDA plan's for its cuXYZ wheels; a CPU plan's for the CPU wheels."""
    from rocmkit.resolve.constraints import Constraints

    plan = session.plan(Constraints())
    backend = plan.backend
    kind = _kind_of(backend)
    if kind is None or not plan.torch_version:
        what = f"{backend} wheels" if plan.torch_version else f"{plan.framework} only"
        raise UsageError(
            f"this machine's plan is {what}, for which rocmkit renders no image",
            "name the image: --backend rocmX.Y --gfx LIST, --backend cuXYZ or --backend cpu (or --out DIR for every image in the matrix)",
        )
    planned = plan.torch_version.split("+", 1)[0]
    # A planned build known only from upstream's build lists (no index confirmed it): the
    # image pins the newest confirmed build on the same index, which its install can get,
    # rather than one its `docker build` may not find.
    confirmed = _fallback_torch(plan.fallback)
    torch = confirmed or planned
    if kind == "cpu":
        spec = choose_spec(images, cpu=True, torch=torch)
    elif kind == "cuda":
        spec = choose_spec(images, cuda=str(backend), torch=torch)
    else:
        amd = [g for g in session.machine().amd_gpus if g.visible and g.arch]
        # An iGPU beside discrete GPUs is hidden by the plan (HIP_VISIBLE_DEVICES): not an image arch.
        discrete = [g.arch for g in amd if not g.integrated] or [g.arch for g in amd]
        gfx = list(dict.fromkeys(a for a in discrete if a)) or list(plan.target_archs) or None
        # The plan's own index release (rocm6.2.4 is an index apart from rocm6.2): the image's
        # base is that minor release's, its install names the index the plan used.
        spec = choose_spec(images, rocm=backend.rocm, torch=torch, gfx=gfx)
    if plan.platform:  # aarch64 or WSL2: the image is built and run for it (docs/platforms.md)
        spec = dataclasses.replace(spec, platform=plan.platform)
    if confirmed is not None and say is not None:
        say(
            f"this machine's plan, torch {plan.torch_version}, is not yet seen on an index; the image pins "
            f"torch {confirmed}, the newest confirmed build on the same index "
            f"(`rocmkit docker render {options(spec, torch=planned)}` pins the other)"
        )
    return spec


def options(spec: ImageSpec, *, torch: str | None = None) -> str:
    """The ``docker render`` options that name ``spec`` (with another torch release)."""
    gfx = f" --gfx {','.join(spec.gfx)}" if spec.gfx else ""
    return f"--backend {spec.backend_tag} --torch {torch or spec.torch}{gfx}"


def _kind_of(backend: Backend) -> str | None:
    """The image a plan's backend makes: rocm6.2 -> rocm, cu128 -> cuda, cpu -> cpu; None for one
    no image renders (an AMD channel's amd-nightly-gfx1151, a JAX plugin family, xpu)."""
    if not backend.pytorch_index or backend.kind not in ("rocm", "cuda", "cpu"):
        return None
    return backend.kind


def _fallback_torch(fallback: tuple[str, ...]) -> str | None:
    """The torch release of a plan's fallback requirements ("2.13.0"), if it has one."""
    for req in fallback:
        pin = parse_pin(req)
        if pin is not None and pin.name == "torch":
            return pin.version.split("+", 1)[0]
    return None
