"""`subscriptions/listen` (2026-07-28): a stateless client's stream of its agent's list changes.

That era has no standing GET stream: the response to a listen request is the stream. The SDK's
`ListenHandler` fans one bus out to every listener, but what changes here is per agent (each
endpoint is one agent's set), so the edge serves it from `ListChanges`, like the 2025-11-25
GET stream: the ack first, then `notifications/tools/list_changed` as the agent's set changes,
each tagged with the listen request's id, until the client goes. Only tool list changes exist
here (the edge serves no prompts or resources): other kinds asked for are not acknowledged.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ToolsListChanged, event_to_notification

from services.mcp_edge.changes import ListChanges
from services.mcp_edge.gate import Caller
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.listen")


def honored(requested: types.SubscriptionFilter) -> types.SubscriptionFilter:
    """What of the filter the edge delivers: tool list changes, if asked for."""
    return types.SubscriptionFilter(tools_list_changed=True if requested.tools_list_changed else None)


async def serve_listen(changes: ListChanges, caller: Caller, ctx: ServerRequestContext[Any],
                       params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
    subscription_id = ctx.request_id
    if subscription_id is None:
        raise MCPError(code=types.INVALID_REQUEST, message="subscriptions/listen requires a request id")
    delivered = honored(params.notifications)
    meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
    queue = await changes.listen(caller.agent)  # listening before the ack: no change between is lost
    log.info("listen stream open", agent=caller.agent, token=caller.token_id)
    try:
        await ctx.session.send_notification(types.SubscriptionsAcknowledgedNotification(
            params=types.SubscriptionsAcknowledgedNotificationParams(notifications=delivered, _meta=meta)),
            related_request_id=subscription_id)
        while True:
            await queue.get()
            if delivered.tools_list_changed:
                await ctx.session.send_notification(event_to_notification(ToolsListChanged(), meta),
                                                    related_request_id=subscription_id)
    finally:
        changes.leave(caller.agent, queue)
