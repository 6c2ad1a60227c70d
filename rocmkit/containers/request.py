"""What ``rocmkit docker render`` was asked to do, checked when it is made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rocmkit.containers.dockerfile import render_all, render_dockerfile
from rocmkit.containers.images import choose_spec, load_images
from rocmkit.errors import UsageError


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
        if not self.one_image and self.out is None:
            raise UsageError("nothing to render", "pass --rocm X.Y (one file on stdout) or --out DIR (every image)")
        if self.out is None and self.check:
            raise UsageError("--check needs --out DIR", "name the folder that holds the Dockerfiles")

    @property
    def one_image(self) -> bool:
        return bool(self.rocm or self.torch or self.gfx)

    def rendered(self) -> dict[str, str]:
        """File name -> Dockerfile text: the one image asked for, or every image in the matrix."""
        images = load_images()
        if not self.one_image:
            return render_all(images, syntax=self.syntax)
        gfx = self.gfx.split(",") if self.gfx is not None else None
        spec = choose_spec(images, rocm=self.rocm, torch=self.torch, gfx=gfx)
        return {spec.filename: render_dockerfile(spec, images, syntax=self.syntax)}
