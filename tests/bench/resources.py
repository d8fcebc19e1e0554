"""What a process uses, read from /proc (Linux): CPU seconds and resident memory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) a live process has used; 0 when it is gone or not Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """Resident memory in MiB; 0 when the process is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return 0.0
    return 0.0


class CpuMeter:
    """The CPU each named process used during measured stretches only, added up: what ran between
    them (the baseline's turn on the same nats-server) is not counted."""

    def __init__(self, pids: Mapping[str, int], read: Callable[[int], float] = cpu_seconds) -> None:
        self._pids = dict(pids)
        self._read = read
        self._started: dict[str, float] | None = None
        self.seconds = {name: 0.0 for name in self._pids}

    def start(self) -> None:
        self._started = {name: self._read(pid) for name, pid in self._pids.items()}

    def stop(self) -> None:
        if self._started is None:
            raise RuntimeError("stop() without start()")
        for name, pid in self._pids.items():
            self.seconds[name] += self._read(pid) - self._started[name]
        self._started = None

    def ms_per(self, units: int) -> dict[str, float]:
        """Milliseconds per unit (per event, per call), by process."""
        return {name: seconds * 1000 / units for name, seconds in self.seconds.items()}

    def total_ms_per(self, units: int) -> float:
        """Milliseconds per unit, every process together."""
        return sum(self.seconds.values()) * 1000 / units


def ms_per_together(meters: Iterable[CpuMeter], units: int) -> dict[str, float]:
    """Milliseconds per unit by process, over every meter's stretches (each kept apart by kind)."""
    total: dict[str, float] = {}
    for meter in meters:
        for name, seconds in meter.seconds.items():
            total[name] = total.get(name, 0.0) + seconds * 1000 / units
    return total
