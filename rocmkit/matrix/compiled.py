"""The validated matrix, compiled once into rocmkit's cache and read back in a few ms.

`rocmkit resolve` and `rocmkit detect` are interactive: parsing and validating the
TOML files costs more than resolving, and so does importing the loader (TOML
parser, validators, regexes). The first load stores the validated :class:`Matrix`
as a pickle named by a hash of everything that decides it: every ``*.toml`` in the
matrix folder, the loader's own source, rocmkit's version and the Python version.
A later load hashes the same bytes (well under a millisecond) and, on a match, skips
the loader altogether; any edit to a matrix file or to the loader is a new hash, so
a stale matrix is never read. Files that fail validation are never stored: the
loader's error is raised as before.

A pickle runs code when read, so only a file this user owns, in a folder nobody
else can write to, is read; anything else is ignored (and parsed again).
"""

from __future__ import annotations

import contextlib
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from rocmkit import __version__

if TYPE_CHECKING:
    from rocmkit.matrix.model import Matrix

SCHEMA = "rocmkit.matrix-compiled/1"
_LOADER = ("load.py", "fields.py", "model.py")
_MEMO: dict[str, Matrix] = {}
_MAX_PICKLE = 64 * 1024 * 1024


def matrix_key(directory: Path) -> str:
    """A checksum of the matrix files, the loader's code and the versions that read them.

    CRC-32 and Adler-32 over the same bytes (64 bits) tell an edited file from the one
    cached; no adversary is in the loop (the cache folder is the user's own), and zlib
    spares the hot path the OpenSSL load hashlib costs."""
    parts = [f"{SCHEMA}\n{__version__}\n{sys.version}\n".encode()]
    here = Path(__file__).resolve().parent
    for name in _LOADER:
        parts.append(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    with contextlib.suppress(OSError):
        for path in sorted(directory.glob("*.toml")):
            parts.append(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    data = b"".join(parts)
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


def _cache_folder() -> Path:
    from rocmkit.util.paths import cache_dir

    return cache_dir() / "matrix"


def load_matrix(directory: Path | None = None) -> Matrix:
    """The matrix in ``directory`` (default: :func:`rocmkit.util.paths.matrices_dir`), from the
    compiled cache when its files are unchanged, else loaded, validated and stored."""
    from rocmkit.util.paths import matrices_dir

    folder = (directory or matrices_dir()).resolve()
    key = matrix_key(folder)
    memo = _MEMO.get(f"{folder}\0{key}")
    if memo is not None:
        return memo
    import pickle

    path = _cache_folder() / f"{key}.pickle"
    matrix: Matrix | None = None
    from rocmkit.util.trust import load_cached

    # Only a file of this user's (or root's), in folders nobody else can write, is unpickled.
    raw = load_cached(path, max_bytes=_MAX_PICKLE)
    if raw is not None:
        # A truncated or foreign file is a cache miss, never an error.
        with contextlib.suppress(Exception):
            loaded = pickle.loads(raw)
            from rocmkit.matrix.model import Matrix

            matrix = loaded if isinstance(loaded, Matrix) else None
    if matrix is None:
        from rocmkit.matrix.load import parse_matrix

        matrix = parse_matrix(folder)
        _store(path, matrix)
    _MEMO[f"{folder}\0{key}"] = matrix
    return matrix


def _store(path: Path, matrix: Matrix) -> None:
    import pickle

    # A cache that cannot be written costs the next run a parse, nothing more.
    with contextlib.suppress(OSError, pickle.PicklingError):
        from rocmkit.util.trust import store_cached

        store_cached(path, pickle.dumps(matrix, protocol=pickle.HIGHEST_PROTOCOL))


def clear() -> None:
    """Forget what this process loaded (the files on disk stay: their names are hashes)."""
    _MEMO.clear()
