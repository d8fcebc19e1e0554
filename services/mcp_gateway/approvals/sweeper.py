"""Approvals nobody decided in time expire on their own: the sweeper asks the store every
`every` seconds; the store reports each one it expires (`approval.expired`), here or wherever a
late decision or call found it first."""

from __future__ import annotations

import asyncio
import contextlib

from services.mcp_gateway.approvals.store import ApprovalStore
from services.mcp_gateway.background import BackgroundLoop
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway")


class ApprovalSweeper(BackgroundLoop):
    def __init__(self, approvals: ApprovalStore, every: float) -> None:
        super().__init__("the approval sweeper", "gateway-approval-sweeper")
        self._approvals = approvals
        self._every = every

    async def _loop(self, halt: asyncio.Event) -> None:
        while not halt.is_set():
            try:
                await self._approvals.expire_due()
            except Exception as exc:
                log.warning("approval sweep failed", error=str(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(halt.wait(), self._every)
