"""mcp-edge's Host/Origin allow-list from its settings (services/mcp_edge/config.py)."""

from __future__ import annotations

import pytest

from services.mcp_edge.config import load_edge_settings
from shared.errors import SettingsError


def test_loopback_on_the_bound_port_by_default() -> None:
    policy = load_edge_settings({}).origin_policy(43210)
    assert policy.hosts == {"localhost:43210", "127.0.0.1:43210", "[::1]:43210"}
    assert policy.problem("127.0.0.1:43210", None) is None
    assert policy.problem("127.0.0.1:8795", None) is not None  # the configured port is not the bound one


def test_the_public_url_and_the_settings_add_names() -> None:
    settings = load_edge_settings({"AURORA_EDGE_PUBLIC_URL": "https://edge.example.test",
                                   "AURORA_EDGE_ALLOWED_HOSTS": "box.lan:8795",
                                   "AURORA_EDGE_ALLOWED_ORIGINS": "https://inspector.example.test"})
    policy = settings.origin_policy(8795)
    for host, origin in [("edge.example.test", "https://edge.example.test"),
                         ("edge.example.test:443", None), ("box.lan:8795", "http://box.lan:8795"),
                         ("localhost:8795", "https://inspector.example.test")]:
        assert policy.problem(host, origin) is None, (host, origin)
    assert policy.problem("edge.example.test", "http://evil.example") == (
        "forbidden_origin", "Origin 'http://evil.example' is not one of this server's pages; a page of another "
        "site may not call it (add the origin to AURORA_EDGE_ALLOWED_ORIGINS if it should)")


def test_a_bad_list_stops_the_start_naming_the_variable() -> None:
    with pytest.raises(SettingsError, match="AURORA_EDGE_ALLOWED_HOSTS="):
        load_edge_settings({"AURORA_EDGE_ALLOWED_HOSTS": "http://box.lan:8795"})
