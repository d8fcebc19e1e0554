"""`<p>.model.sample`: an app's `sampling/createMessage` during a tool call, asked by the gateway
of the runners (request/reply). The gateway never calls a model itself; the runners hold each
agent's model settings and the keys to it, so the request names the agent and the runner answers
with that agent's model, or says why it cannot (`no_model`, `model_failed`, …)."""

from __future__ import annotations

from typing import Literal

import msgspec


class SampleMessage(msgspec.Struct, frozen=True, kw_only=True):
    role: Literal["user", "assistant"]
    text: str


class SampleRequest(msgspec.Struct, frozen=True, kw_only=True):
    agent: str
    run_id: str | None = None
    task_id: str | None = None
    app: str  # the app that asked
    messages: list[SampleMessage]
    system_prompt: str | None = None
    max_tokens: int
    temperature: float | None = None
    stop_sequences: list[str] = msgspec.field(default_factory=list)


class SampleError(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str


class SampleReply(msgspec.Struct, frozen=True, kw_only=True):
    text: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    error: SampleError | None = None


_encoder = msgspec.json.Encoder()
_request = msgspec.json.Decoder(SampleRequest)
_reply = msgspec.json.Decoder(SampleReply)


def encode(value: msgspec.Struct) -> bytes:
    return _encoder.encode(value)


def decode_request(data: bytes) -> SampleRequest:
    return _request.decode(data)


def decode_reply(data: bytes) -> SampleReply:
    return _reply.decode(data)
