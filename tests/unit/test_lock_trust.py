"""What a lock's digest protects, and what binds a lock or a wheelhouse when root installs from
it (issue 39, point 6).

The digest ties the plan line to the pins: an edit of one alone is refused. It is no signature:
a lock whose index and hashes were edited and whose digest was recomputed loads, as any file its
writer chose would. So root takes a lock, a wheelhouse and its wheels only from files and folders
that pass the trust rule (owner root, writable by nobody else): exit 13 otherwise."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest

from rocmkit.errors import UntrustedError
from rocmkit.install import lock
from rocmkit.install.base import Locked, Sources
from rocmkit.install.wheelhouse import LOCK_NAME, open_wheelhouse
from rocmkit.plan import Plan
from tests.unit.test_hostile_inputs import plan_dict

NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the rule is root's (and chown needs root)")


def _lock_text() -> str:
    plan = Plan.from_dict(plan_dict())
    return lock.render([Locked(name="torch", version="2.5.1+rocm6.2", hashes=("a" * 64,))],
                       Sources(index_urls=plan.index_urls), plan)  # fmt: skip


def _resealed(text: str) -> str:
    """An edit its editor made whole again: new index, new hash, the digest recomputed."""
    return _reseal(text.replace("a" * 64, "b" * 64).replace("download.pytorch.org", "evil.example"))


def _reseal(text: str) -> str:
    plan_json = next(ln for ln in text.splitlines() if ln.startswith(lock.PLAN_PREFIX))[len(lock.PLAN_PREFIX) :]
    digest = lock._plan_digest(plan_json, lock._pins_of(text))
    return re.sub(r"(?m)^# rocmkit-plan-sha256: .*$", lock.PLAN_HASH_PREFIX + digest, text)


def test_the_digest_binds_plan_and_pins_not_the_writer(tmp_path: Path) -> None:
    path = tmp_path / "torch.lock"
    path.write_text(_resealed(_lock_text()))
    # What the digest cannot do: a writer who recomputes it is believed (hashes b..., evil index).
    parsed = lock.parse(path)
    assert parsed.entries[0].hashes == ("b" * 64,)


@pytest.mark.parametrize("how", ["folder nobody's", "file nobody's", "file 0666", "folder 0777", "a symlink"])
def test_root_takes_no_lock_another_user_could_have_written(tmp_path: Path, how: str) -> None:
    folder = tmp_path / "locks"
    folder.mkdir()
    path = folder / "torch.lock"
    path.write_text(_resealed(_lock_text()))
    lock.parse(path)  # the control: root's own file in root's own folder
    if how == "folder nobody's":
        os.chown(folder, NOBODY, NOBODY)
    elif how == "file nobody's":
        os.chown(path, NOBODY, NOBODY)
    elif how == "file 0666":
        path.chmod(0o666)
    elif how == "folder 0777":
        folder.chmod(0o777)
    else:
        real = tmp_path / "real.lock"
        path.rename(real)
        path.symlink_to(real)
    with pytest.raises(UntrustedError) as err:
        lock.parse(path)
    assert err.value.exit_code == 13 and "the lock" in err.value.message and "chown root" in (err.value.fix or "")


def _wheelhouse(tmp_path: Path) -> Path:
    house = tmp_path / "house"
    house.mkdir()
    wheel = house / "torch-2.5.1+rocm6.2-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    (house / LOCK_NAME).write_text(_reseal(_lock_text().replace("a" * 64, hashlib.sha256(wheel.read_bytes()).hexdigest())))
    return house


@pytest.mark.parametrize("how", ["folder nobody's", "folder 0775", "lock nobody's", "a wheel 0666", "a wheel nobody's"])
def test_root_installs_from_no_wheelhouse_another_user_could_have_written(tmp_path: Path, how: str) -> None:
    house = _wheelhouse(tmp_path)
    assert open_wheelhouse(house).entries[0].name == "torch"  # the control
    (wheel,) = house.glob("*.whl")
    if how == "folder nobody's":
        os.chown(house, NOBODY, NOBODY)
    elif how == "folder 0775":
        house.chmod(0o775)
    elif how == "lock nobody's":
        os.chown(house / LOCK_NAME, NOBODY, NOBODY)
    elif how == "a wheel 0666":
        wheel.chmod(0o666)
    else:
        os.chown(wheel, NOBODY, NOBODY)
    with pytest.raises(UntrustedError) as err:
        open_wheelhouse(house)
    assert err.value.exit_code == 13 and "wheelhouse" in err.value.message
