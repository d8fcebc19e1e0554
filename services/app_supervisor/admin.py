"""The supervisor's admin endpoints (`<prefix>.admin.supervisor.<verb>`), mapped onto the
`Supervisor`; errors travel as a code and a message."""

from __future__ import annotations

from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.micro.service import Service

from services.app_supervisor.keeper import RestartRefused
from services.app_supervisor.supervisor import Supervisor, UnknownApp
from shared.contracts.mcp_relay import RestartRequest
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, start_admin_service

SERVICE_NAME = "aurora-app-supervisor"
AREA = "supervisor"
VERSION = "0.1.0"


def endpoints(supervisor: Supervisor) -> dict[str, Any]:
    async def status(_: dict[str, Any]) -> list[Any]:
        return [msgspec.to_builtins(record) for record in supervisor.status()]

    async def restart(body: dict[str, Any]) -> dict[str, Any]:
        try:
            request = msgspec.convert(body, RestartRequest)
        except msgspec.ValidationError as exc:
            raise AdminRequestError("invalid_request", f"not a RestartRequest: {exc}") from exc
        try:
            generation = await supervisor.restart(request.app, request.instance, request.reason)
        except UnknownApp as exc:
            raise AdminRequestError("unknown_app", str(exc)) from exc
        except RestartRefused as exc:
            raise AdminRequestError("restart_refused", str(exc)) from exc
        return {"restarted": True, "generation": generation}

    return {"status": status, "restart": restart}


async def serve_admin(nc: NATS, subjects: Subjects, supervisor: Supervisor) -> Service:
    return await start_admin_service(
        nc, subjects, name=SERVICE_NAME, version=VERSION, areas={AREA: endpoints(supervisor)},
        description="starts, relays, restarts and stops local stdio MCP servers",
    )
