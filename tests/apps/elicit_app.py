"""Test MCP app that asks back during its calls: `book_table` reports progress and elicits a
form from the user; `summarize` asks the client's model (sampling). Over stdio by default, over
Streamable HTTP with `--port N` (`/mcp`)."""

from __future__ import annotations

import argparse
from typing import Any, Literal

import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

server = MCPServer("aurora-test-elicit", version="0.1.0", instructions="Asks its user and its client's model.")


class Booking(BaseModel):
    party_size: int = Field(ge=1, le=12, description="how many people")
    name: str = Field(min_length=1, description="the name for the booking")
    seating: Literal["inside", "outside"] = Field(description="where to sit")


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def book_table(restaurant: str, ctx: Context) -> dict[str, Any]:
    """Ask the user for the booking's details, reporting progress; answer what they said."""
    await ctx.report_progress(1, 3, f"looking up {restaurant}")
    answer = await ctx.elicit(f"Booking a table at {restaurant}: the details, please.", schema=Booking)
    await ctx.report_progress(3, 3, f"answer: {answer.action}")
    if answer.action == "accept":
        return {"action": "accept", "restaurant": restaurant, **answer.data.model_dump()}
    return {"action": answer.action, "restaurant": restaurant}


@server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def summarize(text: str, ctx: Context) -> dict[str, Any]:
    """Ask the client's model for a one-line summary of `text`."""
    try:
        result = await ctx.session.create_message(
            [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"Summarize: {text}"))],
            max_tokens=64, system_prompt="You summarize in one line.")
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
