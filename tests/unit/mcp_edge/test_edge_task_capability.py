"""Only a request whose own capabilities name the tasks extension may be answered with a task."""

from __future__ import annotations

from services.mcp_edge.edge_tasks import TASKS_EXTENSION, declares_tasks

CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def test_the_extension_is_declared_in_the_requests_own_capabilities() -> None:
    assert declares_tasks({CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}})
    assert not declares_tasks({CAPABILITIES: {"extensions": {"io.modelcontextprotocol/ui": {}}}})
    assert not declares_tasks({CAPABILITIES: {TASKS_EXTENSION: {}}})  # not under `extensions`
    assert not declares_tasks({CAPABILITIES: {"extensions": [TASKS_EXTENSION]}})
    assert not declares_tasks(None)
