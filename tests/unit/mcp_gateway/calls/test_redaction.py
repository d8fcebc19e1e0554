"""The gateway's redaction: credentials learnt from the apps config and HTTP systems, arguments
redacted by their tool's schema, summaries redacted before they are cut."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.calls.redaction import GatewayRedaction
from services.mcp_gateway.systems.secrets import DeclaredSecrets
from shared.config.appconfig import parse_apps_config
from shared.contracts.system import AuthHeader, System
from shared.contracts.tooldef import ToolDefinition
from shared.redaction import MARKER, Redactor

TOOL = ToolDefinition.model_validate({
    "name": "crm.login", "system": "crm", "side_effect": "write",
    "input_schema": {"type": "object", "properties": {"user": {"type": "string"},
                                                      "otp": {"type": "string", "format": "password"}}},
    "execution": {"kind": "http", "method": "POST", "path": "/login"}})


def redaction(secrets: DeclaredSecrets | None = None) -> GatewayRedaction:
    return GatewayRedaction(Redactor(), lambda: {TOOL.name: TOOL}, secrets)


def test_header_values_and_variables_in_urls_are_learnt() -> None:
    apps = parse_apps_config({"apps": {"remote": {"package": "acme.remote", "mcp": {
        "transport": "streamable_http", "url": "https://acme.test/mcp?key=${ACME_URL_KEY}",
        "headers": {"Authorization": "Bearer ${ACME_TOKEN}", "X-Missing": "${NOT_SET_ANYWHERE}"}}}}})
    hide = redaction()
    hide.learn_apps(apps, {"ACME_TOKEN": "tok-111222333", "ACME_URL_KEY": "url-444555666"})
    text = "GET https://acme.test/mcp?key=url-444555666 with Bearer tok-111222333 failed"
    # The whole header value is replaced (longest first), and so would be its token alone.
    assert hide.scrub(text) == f"GET https://acme.test/mcp?key={MARKER} with {MARKER} failed"
    assert hide.scrub("tok-111222333") == MARKER


def test_system_credentials_are_learnt_at_start_and_when_read() -> None:
    env = {"CRM_TOKEN_AT_START": "start-777888999", "CRM_TOKEN_ON_CALL": "call-777888999",
           "CRM_TOKEN_UNDECLARED": "undeclared-777888999",
           "AURORA_GATEWAY_SECRET_ENV": "CRM_TOKEN_AT_START,CRM_TOKEN_ON_CALL"}
    hide = redaction(DeclaredSecrets.from_env(env))
    hide.learn_systems([System(name="crm", base_url="http://crm.test",
                               auth=AuthHeader(value_env="CRM_TOKEN_AT_START")),
                        System(name="other", base_url="http://other.test",
                               auth=AuthHeader(value_env="CRM_TOKEN_UNDECLARED"))])  # never read: no error
    assert hide.read_secret(AuthHeader(value_env="CRM_TOKEN_ON_CALL")) == "call-777888999"
    assert hide.scrub("start-777888999 / call-777888999") == f"{MARKER} / {MARKER}"


def test_arguments_follow_their_tools_schema_and_summaries_are_redacted_before_the_cut() -> None:
    hide = redaction()
    arguments: dict[str, Any] = {"user": "ann", "otp": "123456"}
    assert hide.arguments("crm.login", arguments) == {"user": "ann", "otp": MARKER}
    assert hide.arguments("other.tool", arguments) == arguments  # no schema, no secret name
    long = {"otp": "123456", "user": "x" * 600}
    summary = hide.summary(long, hide.paths("crm.login"))
    assert "123456" not in summary and len(summary) == 512
