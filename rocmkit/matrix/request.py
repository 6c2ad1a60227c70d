"""What ``rocmkit matrix refresh`` was asked to do: one frozen request, checked here, and the
``--write`` run (generate the data from upstream's sources, diff, write) it drives."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from rocmkit.errors import UsageError, rerun


@dataclass(frozen=True, kw_only=True)
class RefreshRequest:
    directory: Path | None = None
    index_base: str = "https://download.pytorch.org/whl"
    only: tuple[str, ...] = ()
    timeout: float = 20.0
    as_json: bool = False
    write: bool = False
    dry_run: bool = False
    simple_url: str | None = None
    recording: Path | None = None
    test_infra: Path | None = None
    therock: Path | None = None
    pytorch: Path | None = None  # a clone of pytorch/pytorch (manywheel/build.sh)
    allow_redirect: tuple[str, ...] = ()  # hosts a redirect may lead to (else: the host asked only)
    allow_insecure_index: bool = False  # --write from a plain-http index off the loopback

    def __post_init__(self) -> None:
        from rocmkit.util.redact import check_url, conceal

        if self.timeout <= 0:
            raise UsageError(f"--timeout {self.timeout:g} is not a positive number of seconds", "give e.g. 20")
        # Credentials in either URL reach the index; only the masked URL is kept and shown.
        object.__setattr__(self, "index_base", conceal(check_url("--index", self.index_base)))
        if self.simple_url is not None:
            object.__setattr__(self, "simple_url", conceal(check_url("--simple", self.simple_url)))

    def redirects(self) -> AbstractContextManager[None]:
        """Every read of this refresh: redirects only to the host asked, or to --allow redirect=HOST's."""
        from rocmkit.pkgindex.http import same_host_redirects

        return same_host_redirects(self.allow_redirect)


def refresh_write(req: RefreshRequest, data: Callable[[str], None], message: Callable[[str], None]) -> None:
    """Generate the data files from upstream's sources; ``data`` gets the diff, ``message`` the rest."""
    from rocmkit.matrix import load_matrix
    from rocmkit.matrix.inputs import (
        build_inputs,
        clone_upstream,
        index_inputs,
        jax_index_pages,
        jax_projects,
        recorded_index,
        recorded_jax_pages,
        recorded_upstream,
        recording_meta,
    )
    from rocmkit.matrix.write import plan_refresh, write_refresh
    from rocmkit.pkgindex.http import plain_http
    from rocmkit.util.paths import matrices_dir, overlay_dir
    from rocmkit.util.redact import has_credentials, without_credentials

    source_dir = req.directory or matrices_dir()
    upstream = recorded_upstream(req.recording) if req.recording else {}
    upstream.update(clone_upstream(req.test_infra, req.therock, req.pytorch))
    read_on = None
    jax_read_on = None
    jax_names = jax_projects(source_dir)
    if req.simple_url is None and req.recording is not None:
        meta = recording_meta(req.recording)
        pages, metadata = recorded_index(req.recording)
        index_url, read_on = meta["index_url"], meta["read_on"]
        jax_pages, jax_read_on = recorded_jax_pages(req.recording, jax_names)
    else:
        index_url = req.simple_url or load_matrix(source_dir).pypi_url or "https://pypi.org/simple"
        if plain_http(index_url) and not req.allow_insecure_index:
            raise UsageError(
                f"the simple index {index_url} is plain http: anyone on the path could change the data "
                "rocmkit then trusts for every resolve",
                ("use an https index (--simple)", rerun("--allow", "insecure-index") + "   # if you trust the path"),
            )
        message(f"reading {index_url.rstrip('/')}/{{torch,torchvision,torchaudio}}/ and the jax projects")
        pages, metadata = index_inputs(index_url, timeout=req.timeout)
        jax_pages = jax_index_pages(index_url, jax_names, timeout=req.timeout)
        # The source lines name where the data really came from (a redirect the user allowed).
        real = pages["torch"].url.rstrip("/").rsplit("/", 1)[0]
        # (The client never puts credentials in a URL: compared, and named, without them.)
        if real != without_credentials(index_url).rstrip("/"):
            message(f"note: {index_url.rstrip('/')} redirected to {real}: the sources name {real}")
            index_url = real
        elif has_credentials(index_url):
            index_url = real
    inputs = build_inputs(
        index_url=index_url, pages=pages, metadata=metadata, upstream=upstream, read_on=read_on,
        jax_pages=jax_pages, jax_read_on=jax_read_on,
    )
    result = plan_refresh(source_dir, inputs)
    for line in result.summary:
        message(f"changed: {line}")
    data(result.diff())
    for note in result.outcome.notes:
        message(f"note: {note}")
    if not result.changed:
        message(f"the data in {source_dir} is what the sources say: nothing to write")
        return
    if req.dry_run:
        message(f"--dry-run: {len(result.changed)} file(s) would change; nothing written")
        return
    target = req.directory or overlay_dir()
    written = write_refresh(target, result, source_dir=source_dir)
    if not written:
        message(f"{target} already holds this data: nothing written, the data in use is unchanged")
        return
    message(f"wrote {', '.join(written)}")
    if req.directory is None:
        import shlex

        # Written whole and stamped (rocmkit.matrix.write): one refresh's data, never a mix.
        # Said on stdout, where the diff is: every later command now plans from this data.
        data(
            f"\nrocmkit now reads its data from {target}, not the data it shipped with: every later "
            f"command plans from it.\nTo go back to the shipped data: rm -r {shlex.quote(str(target))}\n"
        )
    message("next: rocmkit resolve   # the plan from the new data")
