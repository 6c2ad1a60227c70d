"""An existing environment is a starting point: the torch rocmkit installed in a venv is kept.

``install --venv V --with X`` (and ``resolve --venv V --with X``, the same decision) on a venv
whose torch rocmkit installed plans for *that* torch: the same release and build (its local label
names the index), so what is added must fit it, and nothing replaces it unasked. rocmkit's own
install is known by its guard (``rocmkit-constraints.txt`` pins the torch it put in) together
with the torch the venv really holds now; anything else (a torch from elsewhere, a guard whose
torch was replaced since) is not claimed. ``--upgrade`` plans afresh instead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from rocmkit.errors import UsageError, rerun
from rocmkit.packages import canonical, parse_pin
from rocmkit.plan import Backend, Plan
from rocmkit.resolve.constraints import Constraints


@dataclass(frozen=True, kw_only=True)
class Kept:
    """The torch build a venv holds, as rocmkit installed it."""

    prefix: Path
    torch: str  # "2.13.0+cpu"

    def constraints(self, base: Constraints) -> Constraints:
        """``base`` narrowed to this build: its release, and the backend its local label names."""
        version = Version(self.torch)
        fields: dict[str, object] = {"torch": version.public}
        named = Backend.read(version.local or "")
        if named is not None and named.pytorch_index:
            if named.kind == "cpu":
                fields["cpu"] = True
            elif named.rocm:
                fields["rocm"] = named.rocm
            elif named.cuda:
                fields["cuda"] = named.cuda
        return dataclasses.replace(base, **fields)  # type: ignore[arg-type]

    def reason(self) -> str:
        return (
            f"the plan keeps torch {self.torch}, which rocmkit installed in {self.prefix} (its guard pins it): "
            "what is added must fit it (--upgrade plans afresh)"
        )

    def check(self, plan: Plan) -> Plan:
        """``plan`` (made from :meth:`constraints`), refused when it would not keep this torch."""
        if plan.torch_version != self.torch:
            raise UsageError(
                f"{self.prefix} holds torch {self.torch} (rocmkit's install); the plan now names torch "
                f"{plan.torch_version or '(none)'}",
                (rerun("--upgrade") + "   # replace it with what rocmkit plans now", "make another venv"),
            )
        return dataclasses.replace(plan, reasons=(self.reason(), *plan.reasons))


def _site_packages(prefix: Path) -> list[Path]:
    return sorted(prefix.glob("lib/python3*/site-packages"))


def _installed_torch(prefix: Path) -> str | None:
    for site in _site_packages(prefix):
        for meta in site.glob("torch-*.dist-info/METADATA"):
            for line in meta.read_text(errors="replace").splitlines():
                if line.startswith("Version:"):
                    return line.partition(":")[2].strip()
                if not line.strip():
                    break
    return None


def kept_torch(prefix: Path) -> Kept | None:
    """The torch rocmkit installed in the venv at ``prefix``, if it is still the one there."""
    from rocmkit.install.guard import guard_files

    constraints = guard_files(prefix).constraints
    if not constraints.is_file() or constraints.is_symlink():
        return None
    guarded = None
    for line in constraints.read_text(errors="replace").splitlines():
        pin = parse_pin(line.strip()) if not line.startswith("#") else None
        if pin is not None and pin.project == canonical("torch"):
            guarded = pin.version
    installed = _installed_torch(prefix)
    if guarded is None or installed is None:
        return None
    try:
        if Version(guarded) != Version(installed):
            return None
    except InvalidVersion:
        return None
    return Kept(prefix=prefix, torch=installed)


def keeps(cons: Constraints, prefix: Path | None, *, with_packages: bool, upgrade: bool) -> Kept | None:
    """The venv's rocmkit torch to keep for a ``--with`` plan, unless ``--upgrade`` or the
    constraints already name a build (--torch/--backend: the user chose)."""
    if prefix is None or not with_packages or upgrade:
        return None
    if cons.torch or cons.rocm or cons.cuda or cons.cpu or cons.frameworks != ("torch",) or cons.channel != "stable":
        return None
    return kept_torch(prefix)

