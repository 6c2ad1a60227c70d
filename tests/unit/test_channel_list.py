"""The ``--channel`` choices are the channels ``matrices/channels.toml`` declares.

The tuples in ``resolve/constraints.py`` stay literals (click builds its choices from them at
import, before any data is read: reading channels.toml there would cost every command a TOML
parse), so this test ties them to the data: a channel added to one and not the other fails here
(docs/architecture.md, "How to add a channel")."""

from __future__ import annotations

from rocmkit.matrix.fields import read_toml
from rocmkit.resolve.constraints import AMD_CHANNELS, CHANNELS
from rocmkit.util.paths import shipped_matrices_dir


def _declared() -> tuple[list[str], list[str]]:
    doc = read_toml(shipped_matrices_dir() / "channels.toml")
    every: list[str] = []
    amd: list[str] = []
    for row in doc["channel"]:
        names = [row["name"], *row.get("aliases", [])]
        every += names
        if row["kind"] == "amd":
            amd += names
    return every, amd


def test_the_channel_tuple_is_channels_toml() -> None:
    every, _ = _declared()
    assert sorted(CHANNELS) == sorted(every)
    assert len(set(CHANNELS)) == len(CHANNELS)


def test_the_amd_channels_are_those_of_kind_amd() -> None:
    _, amd = _declared()
    assert sorted(AMD_CHANNELS) == sorted(amd)
    # PyTorch's own channels come first in --help, AMD's after them.
    assert CHANNELS[len(CHANNELS) - len(AMD_CHANNELS) :] == AMD_CHANNELS


def test_the_loaded_matrix_knows_every_channel_by_name() -> None:
    from rocmkit.matrix import load_matrix

    m = load_matrix()
    assert all(name in m.channels for name in CHANNELS)
