"""One benchmark child process: ``python -m rocmkit.bench.child (run SPEC OUT | probe OUT [MODULE...])``.

Spawned, or forked from the run's warm worker (:func:`fork_main`, the same
arguments). ``run`` reads a JSON job (model name and harness options), runs that one
model and writes its :class:`~rocmkit.bench.results.ModelResult` as JSON to
OUT. ``probe`` writes which backend and device torch sees here, and the
versions. A model that crashes the interpreter, hangs or exhausts memory
takes only this process down: the parent records the row and goes on.

The parent sets the compile caches (TORCHINDUCTOR_CACHE_DIR,
TRITON_CACHE_DIR) and TORCHINDUCTOR_COMPILE_THREADS in this process's
environment, since torch reads them at import.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path
from typing import Any


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def probe(needed: tuple[str, ...] = ()) -> dict[str, Any]:
    """The backend, device and versions; ``needed`` (transformers for the HF suite, timm for
    TIMM's) are imported for real, since only an import shows they load beside this torch.
    The others' versions come from their metadata: an import would cost seconds a run of
    the builtin set never uses."""
    import importlib.metadata

    import torch

    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "hip": getattr(torch.version, "hip", None),
        "cuda": torch.version.cuda,
    }
    import_errors: dict[str, str] = {}
    for name in ("triton", "transformers", "timm"):
        if name not in needed and name not in sys.modules:
            try:
                versions[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                versions[name] = None
            continue
        try:
            module = __import__(name)
            versions[name] = str(getattr(module, "__version__", "unknown"))
        except Exception as exc:  # timm beside a mismatched torchvision raises RuntimeError, not ImportError
            versions[name] = None
            lines = str(exc).strip().splitlines()
            import_errors[name] = f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]
    if torch.cuda.is_available():
        backend = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        device = torch.cuda.get_device_name(0)
    else:
        backend = "cpu"
        n = torch.get_num_threads()
        device = f"{_cpu_name()} ({n} thread{'s' if n != 1 else ''})"
    return {"backend": backend, "device": device, "versions": versions, "import_errors": import_errors}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    from rocmkit.bench.harness import HarnessOptions, run_model
    from rocmkit.bench.models import all_models

    spec = all_models(suite=job.get("suite", "builtin"))[job["model"]]
    opts = HarnessOptions(**job["options"])
    return run_model(spec, opts).to_dict()


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "probe":
        result = probe(tuple(argv[2:]))
        out = Path(argv[1])
    elif len(argv) == 3 and argv[0] == "run":
        result = run_job(json.loads(Path(argv[1]).read_text()))
        out = Path(argv[2])
    else:
        print("usage: python -m rocmkit.bench.child (run SPEC OUT | probe OUT [MODULE...])", file=sys.stderr)
        return 2
    from rocmkit.proc.result_file import write_result

    write_result(result, out)  # renamed into place: the parent never reads half a file
    return 0


def fork_main(request: dict[str, Any]) -> int:
    """The same, in a fork of the bench worker (:mod:`rocmkit.bench.forks`): the request
    carries the command line's arguments."""
    return main([str(a) for a in request["args"]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
