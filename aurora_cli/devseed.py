"""The demo's resources on a fresh dev stack: `aurora dev` creates the agents and bindings of
apps/demo.yml that do not exist yet, so a message emitted right away is routed and answered.

Only missing resources are created: what a developer changed or deleted-and-recreated on their
stack stays as they left it (`aurora apply -f apps/demo.yml` resets the demo on purpose).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli.commands.apply import Document, load_documents
from aurora_cli.output import connected
from shared.admin import AdminRequestError, admin_request
from shared.resources import APPLY, GET
from shared.settings import Settings

DEMO_FILE = Path(__file__).resolve().parents[1] / "apps" / "demo.yml"


@dataclass(frozen=True)
class Seeded:
    created: list[str]  # kind/id of what this run created
    kept: list[str]  # already there, left as it was


async def seed(settings: Settings, documents: list[Document], *, timeout: float = 20.0) -> Seeded:
    """Create each document's resource unless it exists; waits (up to `timeout`) for the
    services that own them to answer."""
    created: list[str] = []
    kept: list[str] = []
    async with connected(settings.nats) as nc:
        for doc in documents:
            name = f"{doc.kind.kind.lower()}/{doc.id}"
            if await _exists(nc, settings, doc, time.monotonic() + timeout):
                kept.append(name)
                continue
            await admin_request(nc, settings.subjects, doc.kind.area, APPLY, {"document": doc.body}, timeout=10)
            created.append(name)
    return Seeded(created, kept)


async def _exists(nc: NATS, settings: Settings, doc: Document, deadline: float) -> bool:
    while True:
        try:
            await admin_request(nc, settings.subjects, doc.kind.area, GET, {"id": doc.id}, timeout=5)
            return True
        except AdminRequestError as exc:
            if exc.code == "not_found":
                return False
            raise
        except (NoRespondersError, NatsTimeoutError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


def demo_documents(path: Path = DEMO_FILE) -> list[Document]:
    return load_documents(path)
