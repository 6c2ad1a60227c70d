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
    from rocmkit.bench.runlog import Shard
    from rocmkit.bench.suite import Device, SuiteOptions


@dataclass(frozen=True, kw_only=True)
class BenchRequest:
    suite_name: str = "builtin"  # builtin | huggingface | timm
    results_path: Path | None = None  # JSON lines, a row appended as each model finishes
    resume: bool = False
    shard_text: str | None = None  # "I/N"; see .shard
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
    isolation: str = "fork"
    as_json: bool = False
    csv_path: Path | None = None
    html_path: Path | None = None
    svg_path: Path | None = None
    md_path: Path | None = None
    load_path: Path | None = None
    list_only: bool = False
    perturb: float = 0.0
    venv: Path | None = None  # the environment whose torch is measured (as doctor and install)
    python_path: str | None = None  # or this interpreter

    def __post_init__(self) -> None:
        from rocmkit.bench.harness import Dtype, Mode
        from rocmkit.bench.models import Impl
        from rocmkit.bench.suite import Device, Isolation

        for flag, value, allowed in (
            ("--mode", self.mode, Mode),
            ("--dtype", self.dtype, Dtype),
            ("--device", self.device, Device),
            ("--impl", self.impl, Impl),
            ("--isolation", self.isolation, Isolation),
        ):
            if value not in get_args(allowed):
                raise UsageError(f"{flag} {value!r} is not one of {', '.join(get_args(allowed))}", "pick one")
        if self.suite_name not in ("builtin", "huggingface", "timm"):
            raise UsageError(f"--suite {self.suite_name!r} is not builtin, huggingface or timm", "pick one")
        self.shard  # a malformed --shard fails now  # noqa: B018
        if self.venv is not None and self.python_path is not None:
            raise UsageError("--venv and --python name the same thing twice", "pass only one of them")
        if self.list_only:
            return
        if self.results_path is None and self.suite_name != "builtin" and self.load_path is None:
            # The dashboard suites run for an hour or more: their rows are always kept, so a crash or
            # a kill loses nothing and the same command with --resume continues.
            object.__setattr__(self, "results_path", self.default_results_path())
        if self.resume and self.results_path is None:
            raise UsageError("--resume needs the results file of the run to continue", "add --results FILE")
        for path in (*self.outputs, *((self.results_path,) if self.results_path else ())):
            # Checked before the run, not after minutes of compiling.
            if not path.parent.is_dir():
                raise UsageError(
                    f"folder {path.parent} does not exist", f"create it or write {path.name} elsewhere"
                )

    @property
    def shard(self) -> Shard | None:
        from rocmkit.bench.runlog import Shard

        return Shard.parse(self.shard_text) if self.shard_text else None

    def default_results_path(self) -> Path:
        from rocmkit.util.paths import cache_dir

        shard = self.shard
        part = f"-shard{shard.index}of{shard.count}" if shard else ""
        key = f"{self.suite_name}-{self.mode}-{self.dtype}-{self.size or 'auto'}{part}"
        from rocmkit.util.trust import CACHE_FIX, check_folder, private_folder

        # Rows here are read back (--resume): never from a folder another user can write.
        folder = cache_dir() / "bench"
        check_folder(folder, "rocmkit's bench results folder", CACHE_FIX)
        return private_folder(folder) / f"{key}.jsonl"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n.strip() for v in self.models for n in v.split(",") if n.strip())

    @property
    def outputs(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.csv_path, self.html_path, self.svg_path, self.md_path) if p)

    def suite_options(self, python: str | None = None) -> SuiteOptions:
        """The run's options; ``python``: the interpreter whose torch is measured (default:
        rocmkit's own)."""
        import sys

        from rocmkit.bench.suite import SuiteOptions

        return SuiteOptions(
            python=python or sys.executable,
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
            suite=self.suite_name,
            shard=self.shard,
            results=self.results_path,
            resume=self.resume,
            isolation=self.isolation,  # type: ignore[arg-type]  # checked in __post_init__
        )


@dataclass(frozen=True, kw_only=True)
class CompareRequest:
    """What ``rocmkit bench compare`` was asked to do."""

    a_path: Path
    b_path: Path
    reference_path: Path | None = None
    min_change: float = 0.05
    html_path: Path | None = None
    as_json: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_change <= 0.9:
            raise UsageError(f"--min-change {self.min_change:g} is not between 0 and 0.9", "give e.g. 0.05")
        if self.html_path is not None and not self.html_path.parent.is_dir():
            raise UsageError(
                f"folder {self.html_path.parent} does not exist",
                f"create it or write {self.html_path.name} elsewhere",
            )


@dataclass(frozen=True, kw_only=True)
class MergeRequest:
    """What ``rocmkit bench merge`` was asked to do: the shards' --results files, joined."""

    files: tuple[Path, ...]
    as_json: bool = False
    out_path: Path | None = None

    def __post_init__(self) -> None:
        if not self.files:
            raise UsageError("bench merge needs the --results files of the shards", "name them: FILE...")
        if self.out_path is not None and not self.out_path.parent.is_dir():
            raise UsageError(
                f"folder {self.out_path.parent} does not exist", f"create it or write {self.out_path.name} elsewhere"
            )
