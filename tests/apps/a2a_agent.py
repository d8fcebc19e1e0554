"""A remote A2A v1.0 agent for the tests, built with the official `a2a-sdk` server classes and run
as its own process: `python tests/apps/a2a_agent.py --port N [--streaming] [--token T] [--rest]`
(`--rest`: the HTTP+JSON binding only, at /rest; else JSON-RPC only, at /a2a).

Its skills (the skill a message is for is `aurora.skill` in the message's metadata):
- `lookup`: completes at once with `found: <text>` and the message's data as a data artifact;
- `book`: asks `Which date?` (input-required), then completes with `booked <text> on <answer>`;
  each message id it was sent is appended to A2A_AGENT_LOG (one JSON line each);
- `archive`: fails with `the archive is offline`;
- `vault`: stops in auth-required with `sign in to the vault first`;
- `slow`: works for 30 s before it completes (each cancel is appended to A2A_AGENT_LOG too);
- `file`: files `<text>` once per message id, as an agent that deduplicates on message ids does:
  `filed <text>` the first time, `filed <text> (already filed)` for the same id again.
With `--token`, every request but the card's must carry `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import uuid
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Part, Role
from google.protobuf import json_format
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


def words(message: Message | None) -> str:
    return "\n".join(p.text for p in message.parts if p.HasField("text")) if message is not None else ""


def said(text: str) -> Message:
    return Message(message_id=str(uuid.uuid4()), role=Role.ROLE_AGENT, parts=[Part(text=text)])


class TestAgent(AgentExecutor):
    def __init__(self, log_file: str | None) -> None:
        self._asked: dict[str, tuple[str, str]] = {}  # task id → (skill, the first message's text)
        self._log_file = log_file
        self._filed: set[str] = set()  # the message ids `file` has filed

    def _log(self, message: Message, skill: str) -> None:
        self._append({"message_id": message.message_id, "skill": skill, "text": words(message),
                      "metadata": json_format.MessageToDict(message.metadata)})

    def _append(self, entry: dict[str, Any]) -> None:
        if self._log_file:
            with open(self._log_file, "a", encoding="utf-8") as log:
                log.write(json.dumps(entry) + "\n")

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        metadata: dict[str, Any] = json_format.MessageToDict(message.metadata)
        asked = self._asked.pop(task.id, None)  # the question this message answers, if any
        skill, first = asked or (str(metadata.get("aurora.skill", "")), words(message))
        self._log(message, skill)
        await updater.start_work()
        if skill == "lookup":
            parts = [new_text_part(f"found: {words(message)}")]
            data = [json_format.MessageToDict(p.data) for p in message.parts if p.HasField("data")]
            if data:
                parts.append(new_data_part(data[0]))
            await updater.add_artifact(parts, name="answer")
            await updater.complete()
        elif skill == "book":
            if asked is None:
                self._asked[task.id] = (skill, first)
                await updater.requires_input(said("Which date?"))
                return
            await updater.add_artifact([new_text_part(f"booked {first} on {words(message)}")], name="booking")
            await updater.complete()
        elif skill == "archive":
            await updater.failed(said("the archive is offline"))
        elif skill == "slow":
            await asyncio.sleep(30)
            await updater.add_artifact([new_text_part("done at last")], name="answer")
            await updater.complete()
        elif skill == "file":
            again = " (already filed)" if message.message_id in self._filed else ""
            self._filed.add(message.message_id)
            await updater.add_artifact([new_text_part(f"filed {first}{again}")], name="receipt")
            await updater.complete()
        elif skill == "vault":
            await updater.requires_auth(said("sign in to the vault first"))
        else:
            await updater.reject(said(f"no skill named {skill!r}"))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            self._append({"canceled": task.id})
            self._asked.pop(task.id, None)
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def card(port: int, streaming: bool, rest: bool = False) -> AgentCard:
    skills = [AgentSkill(id="lookup", name="Look up", description="Looks a part up in the catalogue",
                         tags=["catalogue"], examples=["pump P-100"]),
              AgentSkill(id="book", name="Book", description="Books a service visit; asks for the date",
                         tags=["service"]),
              AgentSkill(id="archive", name="Archive", description="Archives a record", tags=["records"]),
              AgentSkill(id="vault", name="Vault", description="Opens the vault", tags=["records"]),
              AgentSkill(id="slow", name="Slow", description="Takes its time", tags=["records"]),
              AgentSkill(id="file", name="File", description="Files a form once per message id", tags=["records"])]
    path, binding = ("rest", "HTTP+JSON") if rest else ("a2a", "JSONRPC")
    interface = AgentInterface(url=f"http://127.0.0.1:{port}/{path}", protocol_binding=binding, protocol_version="1.0")
    return AgentCard(name="Parts desk", description="Answers about spare parts", version="1.0.0",
                     supported_interfaces=[interface],
                     capabilities=AgentCapabilities(streaming=streaming), skills=skills,
                     default_input_modes=["text/plain", "application/json"],
                     default_output_modes=["text/plain", "application/json"])


class BearerOnly(BaseHTTPMiddleware):
    def __init__(self, app: Any, token: str) -> None:
        super().__init__(app)
        self._token = token

    async def dispatch(self, request: Request, call_next: Any) -> Response:
        if not request.url.path.startswith("/.well-known/") and \
                request.headers.get("authorization") != f"Bearer {self._token}":
            return JSONResponse({"error": "a bearer token is required"}, status_code=401)
        response: Response = await call_next(request)
        return response


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--streaming", action="store_true")
    parser.add_argument("--token")
    parser.add_argument("--rest", action="store_true")
    args = parser.parse_args()
    agent_card = card(args.port, args.streaming, args.rest)
    handler = DefaultRequestHandler(agent_executor=TestAgent(os.environ.get("A2A_AGENT_LOG")),
                                    task_store=InMemoryTaskStore(), agent_card=agent_card)
    served = create_rest_routes(handler, path_prefix="/rest") if args.rest else create_jsonrpc_routes(handler, "/a2a")
    app = Starlette(routes=[*create_agent_card_routes(agent_card), *served])
    if args.token:
        app.add_middleware(BearerOnly, token=args.token)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
