"""The gateway's NATS micro service as one part: the tool-call endpoints (each naming who may
call on it: `calls.caller`) and the admin endpoints, `<p>.admin.<area>.<verb>`.

Started last in the gateway's order (nothing is served before every part it uses runs), stopped
first: the calls being served are then let finish (`parts.CallsDrained`). The admin areas are
made at its start (`admin`): some hold the pool's buckets, which the pool opens at its own start.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from nats.aio.client import Client as NATS
from nats.micro import add_service
from nats.micro.service import Service

from services.mcp_gateway.admin import Endpoints
from services.mcp_gateway.calls.serving import CallServer
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle
from shared.nats.admin_service import Authorize, add_admin_endpoint, person_endpoint_subject
from shared.nats.inline_subscription import add_inline_endpoint

VERSION = "0.1.0"


class GatewayEndpoints(Lifecycle[Service]):
    def __init__(self, nc: NATS, subjects: Subjects, calls: CallServer, admin: Callable[[], Endpoints],
                 authorize: Authorize) -> None:
        super().__init__("the gateway's endpoints")
        self._nc = nc
        self._subjects = subjects
        self._calls = calls
        self._admin = admin
        self._authorize = authorize

    async def _start(self, parts: contextlib.AsyncExitStack) -> Service:
        subjects, calls = self._subjects, self._calls
        service = await add_service(self._nc, name="aurora-mcp-gateway", version=VERSION,
                                    description="MCP sessions, tool pool, tool calls")
        parts.push_async_callback(service.stop)  # every endpoint added below with it
        await add_inline_endpoint(service, name="tool-call", subject=subjects.tool_call, handler=calls.tool_call)
        await add_inline_endpoint(service, name="operator-tool-call", subject=subjects.operator_tool_call,
                                  handler=calls.operator_call)
        await add_inline_endpoint(service, name="edge-tool-call", subject=subjects.edge_tool_call,
                                  handler=calls.edge_call)
        # A person's operator calls: `….u.<name>`, checked against the users registry like any admin request.
        await add_inline_endpoint(service, name="operator-tool-call-person",
                                  subject=person_endpoint_subject(subjects.operator_tool_call),
                                  handler=calls.person_call)
        for (area, verb), endpoint in self._admin().items():
            await add_admin_endpoint(service, subjects, area, verb, endpoint, self._authorize)
        return service
