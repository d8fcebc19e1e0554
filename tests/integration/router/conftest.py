"""The router tests' router process: one per test, serving its agents' admin requests too."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
async def router(spawn: Any) -> Any:
    process = spawn("services.router", tag="router", AURORA_ROUTER_SERVE_AGENTS="1")
    await process.ready(30)
    return process
