"""An install as a transaction: record, back up, change, and on any failure restore exactly.

The restore puts back the managed files (the guard), uninstalls what the
failed step added, reinstalls the backup wheels of what it replaced or
removed (offline, ``--no-deps``), then records the state again and compares
it with the one taken before: the user is told whether the environment is
exactly as it was, and if not, what differs.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rocmkit.install.base import Changes, Installer, InstallSpec, Sources
from rocmkit.install.journal import Journal, journal_path
from rocmkit.install.state import (
    Backup,
    EnvState,
    FileCheck,
    StateDiff,
    compare_files,
    diff,
    list_files,
    load_listing,
    make_backup,
    put_back_installer_files,
    remove_leftovers,
    restore_files,
    restore_links,
    save_listing,
    snapshot,
)


@dataclass(frozen=True, kw_only=True)
class RestoreReport:
    remaining: StateDiff
    steps: tuple[str, ...]
    files: FileCheck = field(default_factory=lambda: FileCheck(checked=False))

    @property
    def restored(self) -> bool:
        """Every distribution and guard file as recorded (what the journal's restore can do)."""
        return self.remaining.empty

    @property
    def exact(self) -> bool:
        """Restored, and every file of the venv as it was (names, kinds, sizes, and the bytes
        of the files an installer rewrites)."""
        return self.restored and self.files.checked and not self.files.differ

    def describe(self) -> str:
        gone = ""
        if self.files.removed:
            shown = ", ".join(self.files.removed[:3]) + (", ..." if len(self.files.removed) > 3 else "")
            gone = f"; removed {len(self.files.removed)} entries the interrupted install had left ({shown})"
        if not self.restored:
            files = f"; files: {self.files.said()}" if self.files.differ else ""
            return f"the environment could NOT be fully restored: {self.remaining.describe()}{files}{gone}"
        if self.exact:
            return f"the environment was restored exactly to its recorded state (every file as it was){gone}"
        if not self.files.checked:
            return (
                "the environment's distributions and guard files were restored to their recorded state; "
                f"its files were not compared one by one (no file list from before){gone}"
            )
        return (
            "the environment's distributions and guard files were restored to their recorded state, "
            f"not every file as it was: {self.files.said()}{gone}"
        )


def restore_state(installer: Installer, backup: Backup) -> RestoreReport:
    """Put ``installer``'s target back to ``backup.state``: the managed files, then the
    distributions (uninstall what was added, reinstall the backups of what changed).
    Used in-process after a failure and, from the journal, after a kill -9."""
    target = installer.target
    managed = tuple(Path(p) for p in backup.file_bytes)
    steps: list[str] = []
    restore_files(backup)
    before = None
    removed: list[str] = []
    own = tuple(Path(p).name for p in backup.file_bytes)
    if backup.listing is not None and target.is_venv:
        before = load_listing(backup.folder, backup.listing)
    if before is not None:
        restore_links(before, tuple(backup.file_bytes))
        # What the installer unpacked before it was stopped (a package with no dist-info yet,
        # pip's ~name stash, whose dist-info still names the old version) is no distribution
        # to restore: only the file list from before shows it. Gone first, so the list of
        # distributions below is the venv's own.
        removed += remove_leftovers(target.prefix, before, own)
    current = diff(backup.state, snapshot(target, managed))
    if current.added:
        names = tuple(d.name for d in current.added)
        result = installer.uninstall(names)
        steps.append(f"uninstalled {', '.join(names)}: {result.describe()}")
    wanted = [before for before, _ in current.changed] + list(current.removed)
    pins = tuple(d.pin() for d in wanted if d.name in backup.wheels)
    if pins:
        spec = InstallSpec(
            requirements=pins,
            sources=Sources(find_links=(str(backup.folder / "wheels"),), no_index=True, offline=True),
            no_deps=True,
            reinstall=True,
            break_system_packages=target.externally_managed is not None,
        )
        result = installer.install(spec)
        steps.append(f"reinstalled {', '.join(pins)} from backups: {result.describe()}")
        put_back_installer_files(backup, target, tuple(d.name for d in wanted if d.name in backup.wheels))
    files = FileCheck(checked=False)
    if before is not None:
        removed += remove_leftovers(target.prefix, before, own)  # the restore's own (uv's .lock)
        files = compare_files(target.prefix, before, tuple(removed))
    remaining = diff(backup.state, snapshot(target, managed))
    return RestoreReport(remaining=remaining, steps=tuple(steps), files=files)


class Transaction:
    """Record ``target``'s state now; ``backup()`` before changing; ``restore()`` on failure.

    The record is also written to the install journal (:mod:`rocmkit.install.journal`)
    before this returns, so that nothing changes in the environment unjournaled."""

    def __init__(
        self,
        installer: Installer,
        workdir: Path,
        managed_files: tuple[Path, ...] = (),
        *,
        intent: tuple[str, ...] = (),
    ) -> None:
        self.installer = installer
        self.target = installer.target
        self.workdir = workdir
        self.managed_files = managed_files
        workdir.mkdir(parents=True, exist_ok=True)
        self.before: EnvState = snapshot(self.target, managed_files)
        # Every file of the venv (names, kinds, sizes, the metadata's bytes): a restore then
        # removes what an installer stopped mid-unpack left, and says what is not as it was.
        listing = save_listing(workdir, list_files(self.target.prefix)) if self.target.is_venv else None
        # The managed files are saved at once: they are rewritten before the dry run.
        self._backup: Backup = dataclasses.replace(
            make_backup(self.target, self.before, set(), workdir, managed_files), listing=listing
        )
        self.journal = Journal(
            path=journal_path(self.target),
            prefix=str(self.target.prefix),
            installer=installer.name,
            intent=intent,
            workdir=workdir,
            before=self.before,
            files=dict(self._backup.file_bytes),
            listing=listing,
        )
        self.journal.save()

    def backup(self, changes: Changes) -> Backup:
        """Back up every installed distribution that ``changes`` would replace or remove."""
        names = {name for name, _ in (*changes.install, *changes.remove) if name in self.before.dists}
        backup = make_backup(self.target, self.before, names, self.workdir)
        # Keep the managed files' bytes from before: they have been rewritten since.
        self._backup = dataclasses.replace(
            backup, file_bytes=self._backup.file_bytes, listing=self._backup.listing
        )
        self.journal.wheels = dict(backup.wheels)
        self.journal.at("backed-up")
        return self._backup

    def manage(self, paths: tuple[Path, ...]) -> None:
        """Journal more files before they change (the WSL2 runtime step): one not recorded when
        the transaction began did not exist then, so a restore removes it."""
        new: dict[str, bytes | None] = {str(p): None for p in paths if str(p) not in self._backup.file_bytes}
        if not new:
            return
        self._backup = dataclasses.replace(self._backup, file_bytes={**self._backup.file_bytes, **new})
        self.managed_files = (*self.managed_files, *(Path(p) for p in new))
        self.journal.files.update(new)
        self.journal.save()

    def commit(self) -> None:
        self.journal.close()

    def after_state(self) -> EnvState:
        return snapshot(self.target, self.managed_files)

    def after(self) -> StateDiff:
        return diff(self.before, self.after_state())

    def restore(self) -> RestoreReport:
        """Restore; the journal goes once the environment is exactly as recorded (else it stays,
        and the next run tries again)."""
        self.journal.at("restoring")
        report = restore_state(self.installer, self._backup)
        if report.restored:
            self.journal.close()
        return report

    def discard_backups(self) -> None:
        """Drop the backup wheels (a real torch is GBs); the state records stay."""
        shutil.rmtree(self.workdir / "wheels", ignore_errors=True)
