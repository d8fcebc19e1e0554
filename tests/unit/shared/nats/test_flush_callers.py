"""The services wait for "reached the server" with `write_through.flush`, never nats-py's own
`flush`, whose PING can overtake a subscription still in its buffer (tests/integration/
shared/nats/test_write_through.py shows it on the wire)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]
NATS_CLIENT_NAMES = {"nc", "_nc"}  # how the code names a NATS connection


def bare_flushes(path: Path) -> list[int]:
    """The lines of `path` that call `.flush()` on something named like a NATS connection."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "flush":
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if name in NATS_CLIENT_NAMES:
                lines.append(node.lineno)
    return lines


def test_the_check_finds_a_bare_flush(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("async def f(nc, self):\n    await nc.flush()\n    await self._nc.flush(timeout=2)\n"
                      "    log_file.flush()\n")
    assert bare_flushes(sample) == [2, 3]


def test_no_service_flushes_its_connection_with_nats_pys_flush() -> None:
    found = {
        str(path.relative_to(REPO)): lines
        for package in ("services", "shared", "aurora_cli", "apps")
        for path in sorted((REPO / package).rglob("*.py"))
        if path != REPO / "shared" / "nats" / "write_through.py" and (lines := bare_flushes(path))
    }
    assert found == {}, f"use shared.nats.write_through.flush instead of nats-py's flush: {found}"
