"""Composition root of the router: `python -m services.router`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nats.aio.client import Client as NATS

from services.router.config import load_router_settings
from services.router.service import RouterService
from shared.appconfig import load_apps_config
from shared.logs import get_logger
from shared.service import run_service
from shared.settings import Settings

log = get_logger("aurora.router")


def app_capabilities(path: Path) -> dict[str, tuple[str, ...]]:
    """Each app's declared platform capabilities (its `platform:` map), which every run's
    delivery context carries. The router needs no apps otherwise: without the file, none."""
    if not path.exists():
        log.info("no apps config; runs carry no app capabilities", file=str(path))
        return {}
    apps = load_apps_config(path)
    return {app.app_id: tuple(sorted(app.platform)) for app in apps.apps.values()}


async def main(settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    service = RouterService(nc, settings.subjects, load_router_settings(), app_capabilities(settings.apps_config))
    await service.start()
    try:
        await service.run(stop)
    finally:
        await service.stop()


if __name__ == "__main__":
    run_service("router", main)
