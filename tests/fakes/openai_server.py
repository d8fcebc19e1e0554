"""A scripted OpenAI-compatible Chat Completions server, over real HTTP, for the llm agent tests.

Each scenario is a Python function keyed by the model name the agent is configured with: it sees
the request (`Conversation`) and returns the next assistant turn — tool calls to propose or a
final answer. Every request is kept for assertions (prompts, offered tools, truncated results).

    fake = FakeOpenAI().start()
    fake.script("relay", lambda chat: chat.call("get_alarm", alarm_id="ALM-1001") if chat.turn == 1
                else chat.answer("done"))
    agent model: {base_url: fake.base_url, model: relay}
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    """What the fake answers: text, tool calls, or an HTTP error status."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)  # sent with an error status (Retry-After …)


class Conversation:
    """One request as a script reads it."""

    def __init__(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.body = body
        self.headers = headers
        self.messages: list[dict[str, Any]] = list(body.get("messages") or [])
        self.tools: list[dict[str, Any]] = list(body.get("tools") or [])
        self.received_at = time.monotonic()  # when the request came (tests measure the waits between)

    @property
    def turn(self) -> int:
        """1 for the first request of a run, 2 after the first assistant turn, …"""
        return 1 + sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def system(self) -> str:
        return "\n".join(str(m.get("content")) for m in self.messages if m.get("role") == "system")

    @property
    def event(self) -> dict[str, Any]:
        """The event JSON the runner put in the first user message."""
        text = next(str(m["content"]) for m in self.messages if m.get("role") == "user")
        start = text.index("{")
        decoder = json.JSONDecoder()
        value, _ = decoder.raw_decode(text[start:])
        return dict(value)

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool message so far, decoded (the runner sends `{"status", "result"|"error"}`)."""
        found = []
        for message in self.messages:
            if message.get("role") == "tool":
                try:
                    found.append(json.loads(message["content"]))
                except ValueError:
                    found.append({"raw": message["content"]})
        return found

    def last_result(self) -> dict[str, Any]:
        return self.tool_results()[-1]

    def function(self, suffix: str) -> str:
        """The offered function whose name ends with `suffix` (names are made LLM-safe)."""
        for tool in self.tools:
            name = str(tool["function"]["name"])
            if name == suffix or name.endswith(suffix):
                return name
        raise KeyError(f"no offered tool ends with {suffix!r}; offered: {[t['function']['name'] for t in self.tools]}")

    def call(self, suffix: str, **arguments: Any) -> Turn:
        return self.calls((suffix, arguments))

    def calls(self, *wanted: tuple[str, dict[str, Any]]) -> Turn:
        return Turn(tool_calls=[
            {"id": f"call_{uuid.uuid4().hex[:10]}", "type": "function",
             "function": {"name": self.function(suffix), "arguments": json.dumps(arguments, ensure_ascii=False)}}
            for suffix, arguments in wanted
        ])

    @staticmethod
    def answer(text: str) -> Turn:
        return Turn(content=text)


Script = Callable[[Conversation], Turn]


class FakeOpenAI:
    def __init__(self, *, api_key: str | None = None, port: int = 0) -> None:
        self.api_key = api_key
        self.port = port  # 0: any free port; a fixed one lets a test point an agent at it before it starts
        self.requests: list[Conversation] = []
        self._scripts: dict[str, Script] = {}
        self._keys: dict[str, str] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def script(self, model: str, script: Script, *, api_key: str | None = None) -> None:
        """Answer requests for `model` with `script`; with `api_key`, only requests bearing it."""
        self._scripts[model] = script
        if api_key is not None:
            self._keys[model] = api_key

    def requests_for(self, model: str) -> list[Conversation]:
        with self._lock:
            return [r for r in self.requests if r.body.get("model") == model]

    @property
    def base_url(self) -> str:
        if self._server is None:
            assert self.port, "start() the fake first, or give it a port"
            return f"http://127.0.0.1:{self.port}/v1"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                body = json.loads(raw)
                key = fake._keys.get(str(body.get("model"))) or fake.api_key
                if key and self.headers.get("Authorization") != f"Bearer {key}":
                    self._send(401, {"error": {"message": "invalid api key"}})
                    return
                chat = Conversation(body, dict(self.headers.items()))
                with fake._lock:
                    fake.requests.append(chat)
                script = fake._scripts.get(str(body.get("model")))
                if script is None:
                    self._send(404, {"error": {"message": f"model {body.get('model')!r} not found"}})
                    return
                try:
                    turn = script(chat)
                except Exception as exc:  # a script bug shows up in the test as a model error
                    self._send(500, {"error": {"message": f"script failed: {type(exc).__name__}: {exc}"}})
                    return
                if turn.delay:
                    threading.Event().wait(turn.delay)
                if turn.status != 200:
                    self._send(turn.status, {"error": {"message": "scripted failure"}}, turn.headers)
                    return
                # The shape llama-cpp-python's server answers in (tests/model/test_real_model.py
                # holds this to it): a tool-call turn also carries the legacy `function_call`.
                message: dict[str, Any] = {"role": "assistant", "content": turn.content}
                if turn.tool_calls:
                    message["tool_calls"] = turn.tool_calls
                    message["function_call"] = dict(turn.tool_calls[0]["function"])
                self._send(200, {
                    "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                    "created": int(time.time()), "model": body.get("model"),
                    "choices": [{"index": 0, "message": message, "logprobs": None,
                                 "finish_reason": "tool_calls" if turn.tool_calls else "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                })

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body, ensure_ascii=False).encode()
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
