"""Test "MCP app" that reads stdin but never answers anything, not even `initialize` (it just sleeps)."""

from __future__ import annotations

import sys
import time


def main() -> None:
    for _line in sys.stdin:  # swallow requests so the client's writes never block
        pass
    while True:  # stdin closed: keep hanging so the client's kill escalation is exercised
        time.sleep(3600)


if __name__ == "__main__":
    main()
