"""The reaper deletes every folder it is handed by the time drain returns, and works again after."""

from __future__ import annotations

from pathlib import Path

from conformance.harness.reaper import Reaper


def _filled(root: Path, name: str) -> Path:
    folder = root / name
    for bucket in range(4):
        (folder / f"{bucket:02x}").mkdir(parents=True)
        (folder / f"{bucket:02x}" / "entry").write_bytes(b"x" * 64)
    return folder


def test_drain_returns_once_every_discarded_folder_is_gone(tmp_path: Path) -> None:
    reaper = Reaper()
    folders = [_filled(tmp_path, f"store-{i}") for i in range(20)]
    for folder in folders:
        reaper.discard(folder)
    reaper.drain()
    assert [p for p in folders if p.exists()] == []


def test_a_drained_reaper_takes_folders_again(tmp_path: Path) -> None:
    reaper = Reaper()
    reaper.discard(_filled(tmp_path, "first"))
    reaper.drain()
    reaper.discard(later := _filled(tmp_path, "later"))
    reaper.drain()
    assert list(tmp_path.iterdir()) == [] and not later.exists()
