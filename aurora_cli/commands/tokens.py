"""`aurora tokens create|list|revoke`: bearer tokens for MCP clients of an agent's endpoint.

mcp-edge serves each agent as an MCP server at `/agents/<id>/mcp`; a client authenticates with a
token made here. The token is printed once: the edge keeps only its SHA-256.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from aurora_cli.commands.pool_admin import admin_call
from aurora_cli.output import print_json, run, settings_or_fail, stdout, table

app = typer.Typer(help="Bearer tokens for MCP clients of an agent's endpoint (mcp-edge).", no_args_is_help=True)


async def edge_call(verb: str, body: dict[str, Any]) -> Any:
    """`<prefix>.admin.tokens.<verb>`, served by mcp-edge; every failure said in one line."""
    return await admin_call(settings_or_fail(), "tokens", verb, body, timeout=10, service="mcp-edge")


def token_rows(tokens: list[dict[str, Any]]) -> list[list[Any]]:
    return [[t.get("id"), t.get("name"), t.get("agent"), t.get("created_at"), t.get("expires_at") or "never",
             t.get("revoked_at") or "-"] for t in tokens]


@app.command("create")
def create(
    agent: Annotated[str, typer.Option("--agent", help="The agent whose endpoint the token opens.")],
    expires: Annotated[str | None, typer.Option(
        "--expires", help="A duration (30m, 12h, 90d) or an ISO 8601 time with a zone; default: never.")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Who holds it (shown in lists; the audit names "
                                                            "the token's id).")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Make a token for one agent's MCP endpoint and print it, once."""
    body: dict[str, Any] = {"agent": agent}
    if expires:
        body["expires"] = expires
    if name:
        body["name"] = name
    created = run(edge_call("create", body))
    if json_output:
        print_json(created)
        return
    stdout.print(f"token {created['id']} ({created['name']}) for agent {agent}, expires "
                 f"{created.get('expires_at') or 'never'}. It is shown only now:", markup=False)
    stdout.print(created["token"], markup=False)
    stdout.print(f"endpoint: http(s)://<mcp-edge address>{created['endpoint_path']}  "
                 "(header Authorization: Bearer <token>)", markup=False)


@app.command("list")
def list_tokens(
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's tokens.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Tokens, oldest first: id, name, agent, expiry, revocation (never the secret)."""
    listed = run(edge_call("list", {"agent": agent} if agent else {}))
    if json_output:
        print_json(listed)
        return
    stdout.print(table("tokens", ["id", "name", "agent", "created", "expires", "revoked"],
                       token_rows(listed["tokens"])))


@app.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(metavar="ID", help="The token's id (from `aurora tokens list`).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Revoke a token: from now on every request with it is refused (401)."""
    revoked = run(edge_call("revoke", {"id": token_id}))
    if json_output:
        print_json(revoked)
        return
    stdout.print(f"token {revoked['id']} ({revoked['name']}) revoked at {revoked['revoked_at']}", markup=False)
