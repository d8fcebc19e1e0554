"""The ready file compose's health checks test: written once a service serves, gone before it
serves and once it stops."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from shared.config.settings import load_settings
from shared.readiness import READY_FILE, ReadyWhenStarted, mark_not_ready, mark_ready


class Service:
    """A lifecycle that records whether the ready file existed at each of its steps."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: dict[str, bool] = {}

    async def start(self) -> None:
        self.seen["start"] = self.path.exists()

    async def run(self, stop: asyncio.Event) -> None:
        self.seen["run"] = self.path.exists()
        await stop.wait()

    async def stop(self) -> None:
        self.seen["stop"] = self.path.exists()


async def test_a_service_is_ready_from_the_end_of_its_start_until_its_stop(tmp_path: Path) -> None:
    path = tmp_path / "run" / "aurora.ready"
    path.parent.mkdir()
    path.write_text("1\n")  # the last process's, in a restarted container
    service = Service(path)
    ready = ReadyWhenStarted(service, load_settings({READY_FILE: str(path)}).ready_file)
    assert not path.exists()
    stop = asyncio.Event()
    await ready.start()
    assert path.read_text().strip().isdigit()
    stop.set()
    await ready.run(stop)
    await ready.stop()
    assert service.seen == {"start": False, "run": True, "stop": False}
    assert not path.exists()


def test_without_the_setting_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_settings({}).ready_file is None
    mark_ready(None)
    mark_not_ready(None)
    assert list(tmp_path.iterdir()) == []
