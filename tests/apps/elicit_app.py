"""Test MCP app that asks back during its calls: `book_table` elicits a form from the user and
reports progress; `summarize` asks the client's model (sampling). Over stdio by default, over
Streamable HTTP with `--port N` (`/mcp`), where it speaks both generations of MCP.

Each tool asks the way its generation does: on a handshake session (2025-11-25) the question is a
request to the client during the call; on a stateless one (2026-07-28) the call answers with an
`InputRequiredResult` and the client calls again with the answers. `book_table` lets the SDK pick
(a `Resolve` marker); `summarize` does it by hand, so both styles of server are exercised."""

from __future__ import annotations

import argparse
from typing import Annotated, Any, Literal

import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, Field

server = MCPServer("aurora-test-elicit", version="0.1.0", instructions="Asks its user and its client's model.")
SUMMARY = "summary"  # the key of summarize's one input request
SUMMARIZER = "You summarize in one line."


class Booking(BaseModel):
    party_size: int = Field(ge=1, le=12, description="how many people")
    name: str = Field(min_length=1, description="the name for the booking")
    seating: Literal["inside", "outside"] = Field(description="where to sit")


def ask_booking(restaurant: str) -> Elicit[Booking]:
    return Elicit(f"Booking a table at {restaurant}: the details, please.", Booking)


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def book_table(restaurant: str, ctx: Context,
                     answer: Annotated[ElicitationResult[Booking], Resolve(ask_booking)]) -> dict[str, Any]:
    """Ask the user for the booking's details, reporting progress; answer what they said."""
    # The body runs once the answer is in (a stateless call's earlier rounds never reach it),
    # so both notes come from here: the same two in either generation.
    await ctx.report_progress(1, 3, f"looking up {restaurant}")
    await ctx.report_progress(3, 3, f"answer: {answer.action}")
    if answer.action == "accept":
        return {"action": "accept", "restaurant": restaurant, **answer.data.model_dump()}
    return {"action": answer.action, "restaurant": restaurant}


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def summarize(text: str, ctx: Context) -> dict[str, Any] | types.InputRequiredResult:
    """Ask the client's model for a one-line summary of `text`."""
    messages = [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"Summarize: {text}"))]
    version = ctx.protocol_version
    if version is not None and is_version_at_least(version, "2026-07-28"):
        answered = (ctx.input_responses or {}).get(SUMMARY)
        if answered is None:  # the first round: ask; the client calls again with the model's answer
            request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
                messages=messages, max_tokens=64, system_prompt=SUMMARIZER))
            return types.InputRequiredResult(input_requests={SUMMARY: request})
        if not isinstance(answered, types.CreateMessageResult):
            return {"sampled": False, "error": f"not a model's answer: {type(answered).__name__}"}
        result = answered
    else:
        try:
            result = await ctx.session.create_message(messages, max_tokens=64, system_prompt=SUMMARIZER)
        except Exception as exc:  # the client refused: say why, as a tool error
            return {"sampled": False, "error": str(exc)}
    content = result.content
    return {"sampled": True, "model": result.model,
            "text": content.text if isinstance(content, types.TextContent) else str(content)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0, help="serve Streamable HTTP on this port (0: stdio)")
    args = parser.parse_args()
    if not args.port:
        server.run()
        return
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
