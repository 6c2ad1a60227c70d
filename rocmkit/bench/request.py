"""What ``rocmkit bench models`` was asked to do: one frozen request, checked here, not in the CLI.

Light on purpose (the CLI builds it before anything runs): the harness and suite modules
are imported only when the request is checked or turned into suite options.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from rocmkit.errors import UsageError

if TYPE_CHECKING:
    from rocmkit.bench.harness import Dtype, Mode
    from rocmkit.bench.models import Impl
    from rocmkit.bench.suite import Device, SuiteOptions


@dataclass(frozen=True, kw_only=True)
class BenchRequest:
    models: tuple[str, ...] = ()  # as given: comma-separated or repeated; see .names
    mode: Mode = "infer"
    dtype: Dtype = "fp32"
    size: str | None = None
    repeat: int = 30
    warmup: int = 3
    device: Device = "auto"
    impl: Impl = "auto"
    cosine: bool = False
    timeout_s: float | None = None
    compile_mode: str = "default"
    threads: int | None = None
    as_json: bool = False
    csv_path: Path | None = None
    html_path: Path | None = None
    svg_path: Path | None = None
    md_path: Path | None = None
    load_path: Path | None = None
    list_only: bool = False
    perturb: float = 0.0

    def __post_init__(self) -> None:
        from rocmkit.bench.harness import Dtype, Mode
        from rocmkit.bench.models import Impl
        from rocmkit.bench.suite import Device

        for flag, value, allowed in (
            ("--mode", self.mode, Mode),
            ("--dtype", self.dtype, Dtype),
            ("--device", self.device, Device),
            ("--impl", self.impl, Impl),
        ):
            if value not in get_args(allowed):
                raise UsageError(f"{flag} {value!r} is not one of {', '.join(get_args(allowed))}", "pick one")
        if self.list_only:
            return
        for path in self.outputs:
            # Checked before the run, not after minutes of compiling.
            if not path.parent.is_dir():
                raise UsageError(
                    f"folder {path.parent} does not exist", f"create it or write {path.name} elsewhere"
                )

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n.strip() for v in self.models for n in v.split(",") if n.strip())

    @property
    def outputs(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.csv_path, self.html_path, self.svg_path, self.md_path) if p)

    def suite_options(self) -> SuiteOptions:
        from rocmkit.bench.suite import SuiteOptions

        return SuiteOptions(
            models=self.names,
            mode=self.mode,
            dtype=self.dtype,
            size=self.size,
            repeat=self.repeat,
            warmup=self.warmup,
            device=self.device,
            impl=self.impl,
            cosine=self.cosine,
            timeout_s=self.timeout_s,
            threads=self.threads,
            compile_mode=self.compile_mode,
            perturb=self.perturb,
        )
