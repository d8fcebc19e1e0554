"""Run the industrial app over stdio: `python -m apps.aurora_app_industrial` (startup JSON in
AURORA_APP_STARTUP, e.g. `{"alarm_interval_seconds": 60}`)."""

from __future__ import annotations

import anyio

from apps.common import load_startup
from apps.stdio import serve_stdio

from .server import IndustrialApp


async def main() -> None:
    startup = load_startup()
    async with anyio.create_task_group() as tg:
        app = IndustrialApp(startup, task_group=tg)
        await serve_stdio(app.server)
        tg.cancel_scope.cancel()  # stdin closed: stop the alarm schedule too


if __name__ == "__main__":
    anyio.run(main)
