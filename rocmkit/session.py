"""The one front door to the pipeline's middle: a command's machine, matrix, index base and plan.

Every command that plans (``resolve``, ``doctor``, ``install``, ``build``, ``docker render``,
``bench``) builds one :class:`Session` from its request and asks it, instead of each getting
the machine, the matrix, the index base and the plan its own way:

* :meth:`Session.machine`: a capture replayed, or this machine through the detection cache
  (:mod:`rocmkit.cache.detect_cache`), detected once per session;
* :meth:`Session.matrix`: the data, loaded once;
* :attr:`Session.index_base`: the one read of ``--index-base`` / ``ROCMKIT_INDEX_BASE``;
* :meth:`Session.plan`: resolve (cached beside the machine), then, unless offline, held to what
  the index serves now (:mod:`rocmkit.resolve.live`, whose answers are cached for minutes).

The environment is read once, when the session is made (``environ``: a test or an API caller
passes its own), so two parts of one command never see two different settings.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmkit.machine import Machine
    from rocmkit.matrix import Matrix
    from rocmkit.plan import Plan
    from rocmkit.resolve.constraints import Constraints

INDEX_BASE_ENV = "ROCMKIT_INDEX_BASE"
OFFLINE_ENV = "ROCMKIT_OFFLINE"

# A fallback source pip would use when the planned index does not answer: (URL or folder,
# whether it is an index (PEP 503) rather than a find-links page or folder).
Fallback = tuple[str, bool]


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "").strip().lower() in ("1", "true", "yes")


def _running_python() -> str:
    import sys

    return f"{sys.version_info.major}.{sys.version_info.minor}"


class Session:
    """What one command works on, got once. Not thread-safe (one command, one thread)."""

    def __init__(
        self,
        *,
        capture: Path | None = None,
        fresh: bool = False,
        offline: bool = False,
        index_base: str | None = None,
        python: str | None = None,
        environ: Mapping[str, str] | None = None,
        cache_dir: Path | None = None,
        allow_redirect: Sequence[str] = (),
    ) -> None:
        """``offline`` and ``index_base`` as given on the command line; the environment's
        ``ROCMKIT_OFFLINE`` and ``ROCMKIT_INDEX_BASE`` apply where they are not given.
        ``python``: the target Python (``3.11``) plans are made for, where constraints do not
        name one (default: the running interpreter's)."""

        self.environ: Mapping[str, str] = dict(os.environ if environ is None else environ)
        self.capture = capture
        self.fresh = fresh
        self.offline = offline or env_flag(self.environ, OFFLINE_ENV)
        given = index_base or None
        from_env = self.environ.get(INDEX_BASE_ENV) or None
        self.index_base: str | None = given or from_env
        # Where the index base came from, for the plan's reasons.
        self.index_base_from: str | None = None if given or not from_env else INDEX_BASE_ENV
        if self.index_base is not None:
            from rocmkit.util.redact import check_url, conceal

            # One well-formed URL (no spaces or line breaks: exit 4); a mirror's token in it is
            # kept in memory only, and everything downstream holds user:*** (util/redact.py).
            self.index_base = conceal(check_url("--index-base" if given else INDEX_BASE_ENV, self.index_base))
        self.python = python
        self.allow_redirect = tuple(allow_redirect)
        self._cache_dir = cache_dir
        self._machine: Machine | None = None
        self._matrix: Matrix | None = None
        self._plans: dict[str, Plan] = {}
        # Until when the index answers the online plans rest on stay fresh (epoch seconds):
        # +inf when none was read, None when one cannot be replayed (a local folder).
        self.fresh_until: float | None = float("inf")
        # When this machine was detected (epoch seconds; None for a capture): what is derived
        # from it expires with it (the output cache).
        self.detected_at: float | None = None

    @property
    def cache_dir(self) -> Path:
        if self._cache_dir is None:
            from rocmkit.util.paths import cache_dir

            self._cache_dir = cache_dir()
        return self._cache_dir

    def machine(self) -> Machine:
        """The capture, or this machine (from the detection cache when its state is unchanged)."""
        if self._machine is None:
            if self.capture is not None:
                from rocmkit.detect import detect_machine
                from rocmkit.sources import CaptureSource

                self._machine = detect_machine(CaptureSource(Path(self.capture)), environ=self.environ)
            else:
                from rocmkit.cache.detect_cache import machine_at

                self._machine, self.detected_at, _ = machine_at(
                    self.cache_dir, fresh=self.fresh, environ=self.environ, detect=self._detect
                )
        return self._machine

    def _detect(self) -> Machine:
        # Imported only on a cache miss: the probes and parsers are most of detection's cost.
        from rocmkit.detect import detect_machine

        return detect_machine(environ=self.environ)

    def matrix(self) -> Matrix:
        """The data in use (``matrices/``, an overlay, or ``ROCMKIT_MATRICES_DIR``), loaded once."""
        if self._matrix is None:
            from rocmkit.matrix import load_matrix

            self._matrix = load_matrix()
        return self._matrix

    def constraints(self, constraints: Constraints) -> Constraints:
        """``constraints`` with what the session fixes: the index base and the target Python."""
        filled = constraints
        if filled.index_base is None and self.index_base is not None:
            filled = dataclasses.replace(filled, index_base=self.index_base, index_base_from=self.index_base_from)
        if filled.python is None and self.python is not None:
            filled = dataclasses.replace(filled, python=self.python)
        return filled.validated()

    def for_archs(self, archs: Sequence[str]) -> Session:
        """This session for a machine made of gfx targets rather than detected (``build --arch``):
        one discrete AMD GPU per target, in order; the same data, index base, Python and
        environment. Its plans are never cached beside a detected machine's (its source is
        ``--arch``)."""
        from rocmkit.machine import Gpu, Machine

        made = Session(
            offline=self.offline, python=self.python, environ=self.environ, cache_dir=self._cache_dir,
            allow_redirect=self.allow_redirect,
        )
        made.index_base, made.index_base_from, made._matrix = self.index_base, self.index_base_from, self.matrix()
        gpus = tuple(Gpu(vendor="amd", index=i, arch=a, integrated=False) for i, a in enumerate(archs))
        made._machine = Machine(gpus=gpus, source="--arch")
        return made

    def plan(self, constraints: Constraints, fallbacks: Sequence[Fallback] = (), *, live: bool = True) -> Plan:
        """The plan for this session's machine: resolved from the data (cached beside the
        machine), then, unless offline, held to what its index serves now; when that index does
        not answer, to what ``fallbacks`` (the user's own pip sources) hold. ``live=False``: the
        data's answer only, for a note that should not wait on an index (``build``'s wheel
        coverage). Raises what resolve raises (NoPlanError with the fix, DataError for broken data)."""
        cons = self.constraints(constraints)
        online = live and not self.offline
        key = json.dumps([dataclasses.asdict(cons), [list(f) for f in fallbacks], online], sort_keys=True)
        if key in self._plans:
            return self._plans[key]
        from rocmkit.cache.detect_cache import cached_plan
        from rocmkit.resolve.core import resolve

        machine = self.machine()
        matrix = self.matrix()
        plan = cached_plan(
            self.cache_dir,
            machine,
            lambda m: resolve(m, cons, matrix=matrix),
            fresh=self.fresh,
            environ=self.environ,
            # The running Python is resolve's default target: another interpreter, another plan.
            variant=json.dumps([dataclasses.asdict(cons), cons.python or _running_python()], sort_keys=True),
        )
        assert plan is not None  # resolve raises rather than answer None
        # The live check reads PyTorch's indexes; a JAX or torch-xla plan rests on the data.
        if online and cons.frameworks == ("torch",):
            from rocmkit.resolve.live import Seen, check_plan, observer

            read = observer(cache=self.cache_dir / "indexes")

            def noted(sources: Sequence[Fallback]) -> list[Seen]:
                seen = read(sources)
                for s in seen:
                    self.fresh_until = (
                        None if s.fresh_until is None or self.fresh_until is None else min(self.fresh_until, s.fresh_until)
                    )
                return seen

            from rocmkit.pkgindex.http import same_host_redirects

            # What the index says steers the plan: only from the host asked (or one the user named).
            with same_host_redirects(self.allow_redirect):
                plan = check_plan(plan, machine, cons, matrix, fallbacks=fallbacks, read=noted)
        self._plans[key] = plan
        return plan
