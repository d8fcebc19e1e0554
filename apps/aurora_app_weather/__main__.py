"""Run the weather app over stdio: `python -m apps.aurora_app_weather` (startup JSON in AURORA_APP_STARTUP)."""

from __future__ import annotations

import anyio

from apps.common import load_startup
from apps.stdio import serve_stdio

from .server import WeatherApp


async def main() -> None:
    startup = load_startup()
    async with anyio.create_task_group() as tg:
        app = WeatherApp(startup, task_group=tg)
        await serve_stdio(app.server)
        tg.cancel_scope.cancel()  # stdin closed: stop background emitters too


if __name__ == "__main__":
    anyio.run(main)
