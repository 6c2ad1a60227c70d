"""``rocmkit matrix check --sources`` for ``matrices/companions.toml``: a companion's ROCm arch
list re-read from the code objects of the published wheel it cites.

A build row whose ``archs`` cite a wheel source (its text: the project page, then the wheel's
file name and "code objects") is held to what that wheel's ROCm libraries carry, library by
library: the row for ROCm 7.2 against ``..._rocm72.so`` (:func:`rocmkit.pkgindex.codeobjects.rocm_of`).
The wheel is read from the recording, or live by range requests
(:meth:`rocmkit.matrix.sourceread.Sources.wheel_targets`).
"""

from __future__ import annotations

import re

from rocmkit.companions.data import Build, CompanionData
from rocmkit.matrix.sourceread import Report, Sources
from rocmkit.pkgindex.codeobjects import rocm_of

FILE = "companions.toml"
# "https://pypi.org/simple/bitsandbytes/ (bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl ... code objects ..."
_WHEEL_SOURCE = re.compile(r"^(https?://\S+?)/([A-Za-z0-9._-]+)/\s+\((\S+\.whl)\b.*\bcode objects\b", re.S)


def wheel_source(text: str) -> tuple[str, str, str] | None:
    """(index URL, project, wheel file name) of a source that cites a wheel's code objects."""
    m = _WHEEL_SOURCE.match(text)
    return (m.group(1), m.group(2), m.group(3)) if m else None


def check_companion_archs(data: CompanionData, sources: Sources, rep: Report) -> None:
    """Every confirmed ROCm arch list citing a wheel's code objects, against those code objects."""
    for build in data.builds:
        if build.backend != "rocm" or not build.archs or "archs" in build.unconfirmed or "*" in build.unconfirmed:
            continue
        for key in build.sources:
            cited = wheel_source(data.sources.get(key, ""))
            if cited is not None:
                _check_build(build, key, cited, sources, rep)


def _check_build(build: Build, key: str, cited: tuple[str, str, str], sources: Sources, rep: Report) -> None:
    index_url, project, filename = cited
    read = sources.wheel_targets(index_url, project, filename)
    if read is None:
        rep.unreadable.append(f"{FILE} [sources] {key}: {index_url.rstrip('/')}/{project}/{filename}")
        return
    by_rocm = {rocm_of(member): (member, found) for member, found in read.items()}
    for rocm in build.rocm:
        rep.checked += 1
        where = f"{FILE} {build.label} ROCm {rocm} archs"
        if rocm not in by_rocm:
            have = ", ".join(sorted(str(v) for v in by_rocm))
            rep.not_stated.append(f"{where}: {filename} has no ROCm {rocm} library (it has {have or 'none'})")
            continue
        member, found = by_rocm[rocm]
        if set(build.archs) != set(found):
            rep.not_stated.append(
                f"{where} {' '.join(sorted(build.archs))}: {filename}'s {member} carries code objects for "
                f"{' '.join(found)}"
            )
