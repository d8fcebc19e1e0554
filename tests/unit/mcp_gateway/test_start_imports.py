"""The gateway starts without the A2A SDK: importing it costs 0.3 s of CPU at every start, and
most gateways call no remote agent; it is imported at the first A2A call or card import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_the_gateways_modules_import_no_a2a_sdk() -> None:
    probe = ("import sys, services.mcp_gateway.__main__, services.mcp_gateway.wiring; "
             "print(sorted(name for name in sys.modules if name == 'a2a' or name.startswith('a2a.')))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"imported at start: {done.stdout.strip()[:300]}"
