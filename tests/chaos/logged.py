"""What the services logged at warning level or above during a scenario. A fault the platform
recovers from should not leave an operator a wall of warnings to read: the count is a column of
the table, and each message with its count is in bench/chaos.json."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

LEVELS = ("warning", "error", "critical")


def warnings_logged(logs: Path) -> dict[str, dict[str, int]]:
    """Per service log under `logs` (one JSON object a line, as every service writes), how often
    each message was logged at warning level or above (`"<level>: <msg>"`), most frequent first.
    Lines that are not such objects (nats-server's own logs, a traceback's lines) are skipped."""
    found: dict[str, dict[str, int]] = {}
    for path in sorted(logs.glob("*.log")):
        counts: Counter[str] = Counter()
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.startswith("{"):
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("level") in LEVELS:
                counts[f"{entry['level']}: {entry.get('msg')}"] += 1
        if counts:
            found[path.stem] = dict(counts.most_common())
    return found


def total(logged: dict[str, dict[str, int]]) -> int:
    return sum(sum(messages.values()) for messages in logged.values())


def summary(logged: dict[str, dict[str, int]], most: int = 3) -> str:
    """One line per service: its count and its most frequent messages."""
    if not logged:
        return "no warning or error logged"
    lines = []
    for service, messages in sorted(logged.items(), key=lambda item: -sum(item[1].values())):
        top = "; ".join(f"{message} ×{count}" for message, count in list(messages.items())[:most])
        more = f"; {len(messages) - most} more kinds" if len(messages) > most else ""
        lines.append(f"{service} {sum(messages.values())}: {top}{more}")
    return "\n".join(lines)
