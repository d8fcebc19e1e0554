"""The demo's resources on a fresh dev stack: `aurora dev` (and compose's `demo-init`, through
`aurora apply -f deploy/demo/`) applies deploy/demo/ — the asset register's reviewed tools, the
agents and bindings of the three scenarios — so a message sent right away is routed and answered.
With a default model configured (AURORA_MODEL_BASE_URL, AURORA_MODEL) it applies deploy/demo/llm/
too: the same scenarios, handed to `llm` agents.

Only missing agents and bindings are created: what a developer changed or deleted-and-recreated
on their stack stays as they left it (`aurora apply -f deploy/demo/` resets the demo on purpose).
The OpenAPI import is applied every time: it is idempotent and publishes only what the reviewed
file lists.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli import toolfile
from aurora_cli.commands.apply import Document, await_areas, in_dependency_order, load_documents
from aurora_cli.output import connected
from shared.config.settings import Settings
from shared.nats.admin_service import AdminRequestError, admin_request
from shared.resources import APPLY, GET

DEMO_DIR = Path(__file__).resolve().parents[1] / "deploy" / "demo"


@dataclass(frozen=True)
class Seeded:
    created: list[str]  # kind/id of what this run created
    kept: list[str]  # already there, left as it was


async def seed(settings: Settings, documents: list[Document], *, timeout: float = 20.0,
               env: dict[str, str] | None = None) -> Seeded:
    """Create each document's resource unless it exists; waits (up to `timeout`) for the
    services that own them to answer. `env` fills `${VAR}` in an import's base_url (the dev
    stack's AURORA_ASSETS_URL)."""
    created: list[str] = []
    kept: list[str] = []
    async with connected(settings.nats) as nc:
        for doc in documents:
            name = f"{doc.kind.kind.lower()}/{doc.id}"
            if doc.kind is toolfile.KIND:
                await await_areas(nc, settings, ["systems", "tools"], timeout)
                result = await toolfile.apply_import(nc, settings.subjects,
                                                     toolfile.parse(doc.body), Path(doc.source), env=env)
                (kept if result == "unchanged" else created).append(name)
                continue
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


def has_model(env: dict[str, str]) -> bool:
    """Do the runners have a default model (the README's model settings)? Then the demo's `llm`
    agents (deploy/demo/llm/) take the scenarios over from the playbooks."""
    return bool(env.get("AURORA_MODEL_BASE_URL", "").strip() and env.get("AURORA_MODEL", "").strip())


def demo_documents(path: Path = DEMO_DIR, *, with_llm: bool = False) -> list[Document]:
    """The demo's documents in dependency order, across both folders (deploy/demo/llm/'s agents
    name the tools deploy/demo/ imports)."""
    documents = load_documents(path)
    return in_dependency_order(documents + load_documents(path / "llm")) if with_llm else documents
