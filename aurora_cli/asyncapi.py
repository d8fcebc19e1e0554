"""The AsyncAPI 3.0 document of every Aurora subject and message, generated from the models.

`python -m aurora_cli.asyncapi --write` (`make asyncapi`) writes `docs/asyncapi.yaml` and one
standalone JSON Schema per message under `docs/schemas/`; `--check` fails when they are stale.

Everything below the catalog is mechanical. To document a new contract, add one `Message`
line (its payload type) and name it in a `Channel`; to say who uses a channel, add one `Op`.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml
from pydantic import BaseModel

from shared.contracts.audit import AuditRecord
from shared.contracts.edge_ask import EdgeAnswer, EdgeAsk
from shared.contracts.mcp_relay import ProcessEvent, RestartRequest, SessionEvent
from shared.contracts.run import RecordedRun
from shared.contracts.sampling import SampleReply, SampleRequest
from shared.contracts.schedule import TimerBody
from shared.contracts.signals import SIGNAL_TYPES, Signal
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallEnvelope, ToolResultEnvelope
from shared.contracts.validation import AmpEvent, NativeEvent
from shared.jetstream import deadletter
from shared.nats.bus import RECEIPT_HEADER

VERSION = "0.1.0"
REF = "#/components/schemas/{name}"
DOCS = Path(__file__).resolve().parents[1] / "docs"


class AdminError(msgspec.Struct, frozen=True, kw_only=True):
    """What every admin endpoint answers on failure (never a stack trace)."""

    error: dict[str, str]


# --------------------------------------------------------------------------- catalog

@dataclass(frozen=True)
class Message:
    name: str
    model: Any  # a pydantic model class, a msgspec type, or a ready JSON Schema dict
    summary: str
    headers: dict[str, str] | None = None  # NATS header → description
    content_type: str = "application/json"


@dataclass(frozen=True)
class Channel:
    key: str
    address: Callable[[str], str | None]  # prefix → address template (None: a dynamic inbox)
    description: str
    messages: tuple[str, ...]
    parameters: dict[str, dict[str, Any]] | None = None
    stream: str | None = None  # JetStream stream suffix (AMP_<suffix>) or None for core NATS


@dataclass(frozen=True)
class Op:
    service: str
    action: str  # "send" | "receive"
    channel: str
    summary: str
    reply: str | None = None  # channel key of the reply, for request/reply


_SIGNAL_KINDS = [str(t.__struct_config__.tag) for t in SIGNAL_TYPES]
_TRACE = "W3C trace context of the producer"
_JSONRPC: dict[str, Any] = {
    "title": "JsonRpcMessage",
    "description": "One MCP JSON-RPC 2.0 message (request, response or notification), bytes as the app wrote them.",
    "type": "object",
    "properties": {"jsonrpc": {"const": "2.0"}, "id": {"type": ["string", "integer"]},
                   "method": {"type": "string"}, "params": {"type": "object"}, "result": {},
                   "error": {"type": "object"}},
    "required": ["jsonrpc"],
}
_EMPTY: dict[str, Any] = {"title": "Empty", "description": "No body: the headers say it all.", "maxLength": 0}
_ANY_BYTES: dict[str, Any] = {"title": "OriginalBytes",
                              "description": "The original message, byte for byte (often not valid input)."}
_ANY_JSON_OBJECT: dict[str, Any] = {"title": "AdminRequest", "type": "object",
                                    "description": "The endpoint's JSON request body."}

MESSAGES: tuple[Message, ...] = (
    Message("AmpEvent", AmpEvent, "A complete, validated AMP event (`aurora/event`).",
            {"Nats-Msg-Id": "the event's header.message_id (JetStream de-duplication)", "traceparent": _TRACE}),
    *(Message(t.__name__, t, (t.__doc__ or "").strip().splitlines()[0],
              {"Nats-Msg-Id": "the signal_id (de-duplication)", "traceparent": _TRACE}) for t in SIGNAL_TYPES),
    Message("NativeEvent", NativeEvent, "An `aurora/event` as a native app sends it (the `event` of a "
            "native_event signal), before the bridge completes it."),
    Message("McpJsonRpc", _JSONRPC, "An MCP JSON-RPC message relayed between gateway and supervisor."),
    Message("ProcessEvent", ProcessEvent, "An app process changed state (supervisor → gateway)."),
    Message("SessionEvent", SessionEvent, "An app's MCP session changed state (gateway → supervisor)."),
    Message("Receipt", _EMPTY, "An event of the app's the gateway stored (gateway → supervisor), so the "
            "supervisor stops sending it again.", {RECEIPT_HEADER: "the token the event came with"}),
    Message("ToolCallRequest", ToolCallEnvelope, "A tool call (header.method `tools/call`)."),
    Message("ToolCallResult", ToolResultEnvelope, "The envelope reply to every tool call (header.method "
            "`tools/result`); a transport success is not a tool success: read `status`."),
    Message("Run", RecordedRun, "A routed run: its run record, which holds the run (issue 38) — custody's fields, "
            "the run's header (method `agent/run` | `pipeline/run`, message_id = run_id), the event inline or "
            "`event_ref`. Created once per run id.", {"Nats-Expected-Last-Subject-Sequence": "0 (create-only)"}),
    Message("AuditRecord", AuditRecord, "One record per tool call; the event-bridge makes the tool.* event of "
            "an executed one (`executed`) from it."),
    Message("SampleRequest", SampleRequest, "An app's sampling/createMessage during an agent's tool call."),
    Message("SampleReply", SampleReply, "The agent's model's completion, or why there is none."),
    Message("EdgeAsk", EdgeAsk, "An app's elicitation/sampling during an mcp-edge call, for that call's client."),
    Message("EdgeAnswer", EdgeAnswer, "The external MCP client's result, or why it was not asked or did not answer."),
    Message("DeadLetter", _ANY_BYTES, "What a stage could not process: the original bytes, the reason in headers.",
            {deadletter.REASON: "why it was rejected", deadletter.STAGE: "the stage that rejected it",
             deadletter.ORIGINAL_SUBJECT: "where it was received", deadletter.ORIGINAL_STREAM: "its stream",
             deadletter.ORIGINAL_SEQUENCE: "its stream sequence", deadletter.AT: "when (RFC 3339)",
             deadletter.DELIVERIES: "how many times it was delivered",
             deadletter.CONSUMER: "the durable that gave up on it",
             deadletter.ORIGINAL_HEADERS: "the original's headers, one JSON object",
             deadletter.VIA: "stage (its consumer loop) or advisory (the routers' advisory listener)",
             "Nats-Msg-Id": "dlq:<stage>:<stream>:<sequence>, so a retried stage adds no second copy"},
            content_type="application/octet-stream"),
    Message("ScheduleTimer", TimerBody, "A schedule's next tick as a one-shot JetStream timer (the scheduler "
            "arms it; `Nats-Rollup: sub` keeps one per schedule, a message without `Nats-Schedule` disarms it).",
            {"Nats-Schedule": "`@at <UTC time>`", "Nats-Schedule-Target": "<prefix>.sched.tick.<schedule>",
             "Nats-Schedule-TTL": "how long the fired tick is kept", "Nats-Rollup": "sub"}),
    Message("ScheduleTick", TimerBody, "A fired timer: the server publishes the timer's body at its time.",
            {"Nats-Scheduler": "the timer's subject"}),
    Message("AdminRequest", _ANY_JSON_OBJECT, "An admin request (NATS micro endpoint)."),
    Message("RestartRequest", RestartRequest, "Gateway → supervisor: restart an app's process."),
    Message("AdminReply", {"title": "AdminReply", "description": "The endpoint's JSON answer."},
            "An admin reply."),
    Message("AdminError", AdminError, "An admin endpoint's error answer.",
            {"Nats-Service-Error-Code": "the error code", "Nats-Service-Error": "the message"}),
)

_APP = {"description": "app id as a subject token (`im.polaris.qq` → `im_polaris_qq`)"}
_INSTANCE = {"description": "app instance (default `default`)"}

CHANNELS: tuple[Channel, ...] = (
    Channel("events", lambda p: f"{p}.evt.{{app}}.{{type}}",
            "AMP events: the inbox external consumers subscribe to (`amp.evt.>`, `amp.evt.*.message.>`). "
            "`{type}` is the dotted event type and may span several tokens.",
            ("AmpEvent",), {"app": _APP, "type": {"description": "event type, e.g. message.received"}}, "EVENTS"),
    Channel("signals", lambda p: f"{p}.sig.{{app}}.{{kind}}",
            "Raw signals from supervisor, gateway and CLI; only the event-bridge turns them into events.",
            tuple(t.__name__ for t in SIGNAL_TYPES),
            {"app": _APP, "kind": {"description": "signal kind", "enum": _SIGNAL_KINDS}}, "SIGNALS"),
    Channel("mcpClientToServer", lambda p: f"{p}.mcp.{{app}}.{{instance}}.c2s",
            "MCP JSON-RPC from the gateway's session to the app's stdin.", ("McpJsonRpc",),
            {"app": _APP, "instance": _INSTANCE}),
    Channel("mcpServerToClient", lambda p: f"{p}.mcp.{{app}}.{{instance}}.s2c",
            "MCP JSON-RPC from the app's stdout to the gateway's session.", ("McpJsonRpc",),
            {"app": _APP, "instance": _INSTANCE}),
    Channel("mcpProcess", lambda p: f"{p}.mcp.{{app}}.{{instance}}.proc",
            "Process lifecycle of a stdio app, from the supervisor.", ("ProcessEvent",),
            {"app": _APP, "instance": _INSTANCE}),
    Channel("mcpSession", lambda p: f"{p}.mcp.{{app}}.{{instance}}.sess",
            "MCP session lifecycle, from the gateway.", ("SessionEvent",), {"app": _APP, "instance": _INSTANCE}),
    Channel("mcpReceipts", lambda p: f"{p}.mcp.{{app}}.{{instance}}.rcpt",
            "The gateway's receipts for an app's events it stored.", ("Receipt",),
            {"app": _APP, "instance": _INSTANCE}),
    Channel("toolCall", lambda p: f"{p}.tool.call",
            "Tool invocation, request/reply, queue group of gateways.", ("ToolCallRequest",)),
    Channel("edgeToolCall", lambda p: f"{p}.tool.edge",
            "Tool calls of external MCP clients, relayed by mcp-edge (which alone may publish here): "
            "the agent is the bearer token's, the actor the token (kind api); no run.", ("ToolCallRequest",)),
    Channel("toolCallReply", lambda p: None, "The caller's reply inbox for a tool call.", ("ToolCallResult",)),
    Channel("runs", lambda p: f"$KV.{Subjects(p).stream('RUN_RECORDS')}.run.{{run_id}}",
            "Routed runs: each is its run record in the KV_<prefix>_RUN_RECORDS stream (kept 30 days), "
            "which runners consume with their durable `runner` (filter `run.>`) and the gateway reads for custody. "
            "Before issue 38 runs were a work queue of their own (`<prefix>.run.<target_type>.<target_id>`, "
            "AMP_RUNS), which runners still drain where an older deployment left it.",
            ("Run",), {"run_id": {"description": "the run id (a uuid5 of the event and the binding)"}}),
    Channel("audit", lambda p: f"{p}.audit.{{app}}", "One audit record per tool call.", ("AuditRecord",),
            {"app": _APP}, "AUDIT"),
    Channel("deadLetters", lambda p: f"{p}.dlq.{{stage}}", "Dead letters, with the reason in headers.",
            ("DeadLetter",), {"stage": {"description": "the stage that gave up, e.g. event_bridge"}}, "DLQ"),
    Channel("scheduleTimers", lambda p: f"{p}.sched.timer.{{schedule}}",
            "Each schedule's next tick (JetStream message schedules, nats-server 2.12+).", ("ScheduleTimer",),
            {"schedule": {"description": "schedule id"}}, "SCHEDULE_TIMERS"),
    Channel("scheduleTicks", lambda p: f"{p}.sched.tick.{{schedule}}",
            "Ticks the server fires from the timers; published by no client.", ("ScheduleTick",),
            {"schedule": {"description": "schedule id"}}, "SCHEDULE_TIMERS"),
    Channel("admin", lambda p: f"{p}.admin.{{area}}.{{verb}}",
            "Admin API: NATS micro services (discoverable with $SRV.PING/INFO/STATS), JSON in and out.",
            ("AdminRequest", "RestartRequest"),
            {"area": {"description": "service area, e.g. event_bridge, supervisor"},
             "verb": {"description": "e.g. health, restart"}}),
    Channel("adminReply", lambda p: None, "The caller's reply inbox for an admin request.",
            ("AdminReply", "AdminError")),
    Channel("modelSample", lambda p: f"{p}.model.sample",
            "An app's sampling request, request/reply, queue group of runners (the agents' models).",
            ("SampleRequest",)),
    Channel("modelSampleReply", lambda p: None, "The gateway's reply inbox for a sampling request.",
            ("SampleReply",)),
    Channel("edgeAsk", lambda p: f"{p}.edge.ask.{{task}}",
            "An app's request to the client of an mcp-edge call, request/reply; the instance holding the call "
            "listens while it is open.", ("EdgeAsk",), {"task": {"description": "the edge call's task id"}}),
    Channel("edgeAskReply", lambda p: None, "The gateway's reply inbox for an edge ask.", ("EdgeAnswer",)),
    Channel("edgeClientReply", lambda p: f"{p}.edge.reply.{{session}}",
            "A 2025-11-25 client's JSON-RPC response to a request an edge call sent it, POSTed to any instance.",
            ("McpJsonRpc",), {"session": {"description": "the MCP session id"}}),
)

OPERATIONS: tuple[Op, ...] = (
    Op("app-supervisor", "send", "signals", "Process lifecycle signals."),
    Op("app-supervisor", "receive", "mcpClientToServer", "Write JSON-RPC to the app's stdin."),
    Op("app-supervisor", "send", "mcpServerToClient", "Relay the app's stdout lines."),
    Op("app-supervisor", "send", "mcpProcess", "Announce process generations and exits."),
    Op("app-supervisor", "receive", "mcpSession", "Stop a process only after its session closed."),
    Op("app-supervisor", "receive", "mcpReceipts", "Stop sending an event again once it is stored."),
    Op("app-supervisor", "receive", "admin", "supervisor.* admin endpoints (restart).", reply="adminReply"),
    Op("mcp-gateway", "send", "signals", "Session lifecycle, list_changed, resource reads, notifications."),
    Op("mcp-gateway", "send", "mcpClientToServer", "Speak MCP to stdio apps."),
    Op("mcp-gateway", "receive", "mcpServerToClient", "Read MCP from stdio apps."),
    Op("mcp-gateway", "receive", "mcpProcess", "Re-initialize on a new process generation."),
    Op("mcp-gateway", "send", "mcpSession", "Announce session state."),
    Op("mcp-gateway", "send", "mcpReceipts", "Confirm an app's event stored."),
    Op("mcp-gateway", "receive", "toolCall", "Authorize, execute, classify and audit tool calls.",
       reply="toolCallReply"),
    Op("mcp-gateway", "send", "audit", "Record each tool call (the record of an executed one is also the "
       "source of its tool.* event)."),
    Op("event-bridge", "receive", "signals", "Durable pull consumer shared by every bridge."),
    Op("event-bridge", "receive", "audit", "Durable `event-bridge-tools`: executed calls' records become tool.* "
       "events."),
    Op("event-bridge", "send", "events", "Validated events, Nats-Msg-Id = message_id."),
    Op("event-bridge", "send", "deadLetters", "Invalid signals and unreadable audit records, with the reason."),
    Op("event-bridge", "receive", "admin", "event_bridge.health", reply="adminReply"),
    Op("router", "receive", "events", "Match bindings, pick exactly one target."),
    Op("router", "send", "runs", "Dispatch a run."),
    Op("runner", "receive", "runs", "Pull runs and drive agents or pipelines."),
    Op("runner", "send", "toolCall", "Call tools, only through the gateway.", reply="toolCallReply"),
    Op("scheduler", "send", "scheduleTimers", "Arm each enabled schedule's next tick; disarm paused ones."),
    Op("scheduler", "receive", "scheduleTicks", "Durable pull consumer shared by every scheduler."),
    Op("scheduler", "send", "signals", "schedule.triggered, one per tick (signal id from schedule and tick)."),
    Op("aurora-cli", "send", "signals", "`aurora events emit`: a native event on the signal path."),
    Op("aurora-cli", "receive", "events", "`aurora events tail`."),
    Op("external-consumer", "receive", "events", "Any NATS client subscribing to amp.evt.>."),
    Op("mcp-gateway", "send", "modelSample", "Relay an app's sampling request to the calling agent's model.",
       reply="modelSampleReply"),
    Op("runner", "receive", "modelSample", "Answer it with the agent's model.", reply="modelSampleReply"),
    Op("mcp-gateway", "receive", "events", "Users' interaction.submitted answers to an app's elicitation."),
    Op("mcp-gateway", "send", "edgeAsk", "Relay an app's request during an edge call to that call's client.",
       reply="edgeAskReply"),
    Op("mcp-edge", "receive", "edgeAsk", "Ask the MCP client within its open call.", reply="edgeAskReply"),
    Op("mcp-edge", "send", "edgeClientReply", "A client's answer, heard by every instance."),
    Op("mcp-edge", "receive", "edgeClientReply", "Hand it to the call whose request it answers."),
)


# --------------------------------------------------------------------------- schemas

def _schema(model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(payload schema, its named components) with refs into `#/components/schemas`."""
    if isinstance(model, dict):
        return copy.deepcopy(model), {}
    if isinstance(model, type) and issubclass(model, BaseModel):
        schema = model.model_json_schema(ref_template=REF.replace("{name}", "{model}"))
        return schema, schema.pop("$defs", {})
    (schema,), components = msgspec.json.schema_components([model], ref_template=REF)
    tidy = _renamed({"schema": schema, "components": components}, "components", REF.format(name=""))
    return tidy["schema"], tidy["components"]


def standalone_schema(model: Any) -> dict[str, Any]:
    """A self-contained JSON Schema (2020-12) for `docs/schemas/`."""
    if isinstance(model, dict):
        schema = copy.deepcopy(model)
    elif isinstance(model, type) and issubclass(model, BaseModel):
        schema = model.model_json_schema()
    else:
        schema = _renamed(msgspec.json.schema(model), "$defs", "#/$defs/")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def _add_components(target: dict[str, Any], new: dict[str, Any]) -> None:
    for name, schema in new.items():
        if name in target and target[name] != schema:
            raise ValueError(f"two different schemas are both called {name!r}; rename one model")
        target[name] = schema


def _tidy(name: str) -> str:
    """msgspec names generic instances after their full type path
    (`Envelope_shared.contracts.toolcall.ToolCallRequest_`); keep the class names only."""
    return re.sub(r"_+", "_", re.sub(r"(?<![A-Za-z0-9.])(?:[a-z][a-z0-9_]*\.)+(?=[A-Z])", "", name)).strip("_")


def _renamed(tree: dict[str, Any], defs: str, ref_prefix: str) -> dict[str, Any]:
    """`tree` with the schemas under `tree[defs]` renamed by `_tidy` and every `$ref` to them
    rewritten."""
    names = {old: _tidy(old) for old in tree.get(defs, {})}
    if len(set(names.values())) != len(names):
        raise ValueError(f"schema names collide once tidied: {sorted(names)}")

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: (ref_prefix + names[value[len(ref_prefix):]]
                          if key == "$ref" and isinstance(value, str) and value.startswith(ref_prefix)
                          and value[len(ref_prefix):] in names else walk(value))
                    for key, value in node.items()}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    result: dict[str, Any] = walk(tree)
    if defs in result:
        result[defs] = {names[old]: schema for old, schema in result[defs].items()}
    return result


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


# --------------------------------------------------------------------------- document

def build_document(prefix: str = "amp") -> dict[str, Any]:
    Subjects(prefix)  # the same validation as at run time
    schemas: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    for message in MESSAGES:
        payload, components = _schema(message.model)
        _add_components(schemas, components)
        if "$ref" in payload and len(payload) == 1:
            ref = payload
        else:
            _add_components(schemas, {message.name: payload})
            ref = {"$ref": REF.format(name=message.name)}
        entry: dict[str, Any] = {"name": message.name, "title": message.name, "summary": message.summary,
                                 "contentType": message.content_type, "payload": ref}
        if message.headers:
            entry["headers"] = {"type": "object", "properties": {
                key: {"type": "string", "description": text} for key, text in message.headers.items()}}
        messages[message.name] = entry
    channels = {c.key: _channel(c, prefix) for c in CHANNELS}
    operations = {_op_id(op): _operation(op, channels) for op in OPERATIONS}
    document = {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Aurora AMP fabric",
            "version": VERSION,
            "description": "Every NATS subject Aurora's processes exchange AMP envelopes on. Generated by "
                           "`make asyncapi` from shared/contracts; do not edit by hand. Subjects are shown under "
                           f"the default prefix `{prefix}` (AURORA_SUBJECT_PREFIX); streams follow it "
                           f"(`{Subjects(prefix).stream('EVENTS')}`).",
        },
        "defaultContentType": "application/json",
        "servers": {
            "local": {"host": "127.0.0.1:4222", "protocol": "nats", "description": "`make dev`"},
            "compose": {"host": "nats:4222", "protocol": "nats", "description": "`docker compose up`"},
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": schemas},
    }
    plain: dict[str, Any] = json.loads(json.dumps(document))  # JSON types only (no tuples)
    return plain


def _channel(channel: Channel, prefix: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "address": channel.address(prefix),
        "description": channel.description,
        "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in channel.messages},
    }
    if channel.parameters:
        entry["parameters"] = channel.parameters
    if channel.stream:
        entry["x-aurora-stream"] = Subjects(prefix).stream(channel.stream)
    return entry


def _op_id(op: Op) -> str:
    return f"{op.service.replace('-', '_')}__{op.action}__{op.channel}"


def _operation(op: Op, channels: dict[str, Any]) -> dict[str, Any]:
    if op.channel not in channels or (op.reply is not None and op.reply not in channels):
        raise ValueError(f"operation {_op_id(op)} names an unknown channel")
    entry: dict[str, Any] = {
        "action": op.action,
        "channel": {"$ref": f"#/channels/{op.channel}"},
        "summary": op.summary,
        "messages": [{"$ref": f"#/channels/{op.channel}/messages/{m}"} for m in channels[op.channel]["messages"]],
        "tags": [{"name": op.service}],
    }
    if op.reply is not None:
        entry["reply"] = {"channel": {"$ref": f"#/channels/{op.reply}"},
                          "messages": [{"$ref": f"#/channels/{op.reply}/messages/{m}"}
                                       for m in channels[op.reply]["messages"]]}
    return entry


class _PlainDumper(yaml.SafeDumper):
    """No `&id001` anchors: a shared dict is written out in full wherever it is used."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_yaml(document: dict[str, Any]) -> str:
    header = "# Generated by `make asyncapi` (python -m aurora_cli.asyncapi --write). Do not edit.\n"
    return header + yaml.dump(document, Dumper=_PlainDumper, sort_keys=True, allow_unicode=True, width=110)


def schema_files() -> dict[str, str]:
    """`docs/schemas/<name>.json` for every message, plus the union of all signals."""
    files = {f"{_kebab(m.name)}.json": standalone_schema(m.model) for m in MESSAGES}
    files["signal.json"] = standalone_schema(Signal)
    return {name: json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            for name, schema in sorted(files.items())}


def expected_files() -> dict[str, str]:
    """Every generated file, relative to `docs/`, and its exact content."""
    return {"asyncapi.yaml": render_yaml(build_document()),
            **{f"schemas/{name}": text for name, text in schema_files().items()}}


def stale_files(docs: Path = DOCS) -> list[str]:
    """Generated files that are missing, different, or no longer generated."""
    expected = expected_files()
    stale = [name for name, text in expected.items()
             if not (docs / name).is_file() or (docs / name).read_text(encoding="utf-8") != text]
    present = {f"schemas/{p.name}" for p in (docs / "schemas").glob("*.json")}
    return sorted(stale + sorted(present - expected.keys()))


def write(docs: Path = DOCS) -> list[str]:
    expected = expected_files()
    (docs / "schemas").mkdir(parents=True, exist_ok=True)
    for leftover in (docs / "schemas").glob("*.json"):
        if f"schemas/{leftover.name}" not in expected:
            leftover.unlink()
    for name, text in expected.items():
        (docs / name).write_text(text, encoding="utf-8")
    return sorted(expected)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m aurora_cli.asyncapi", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="write docs/asyncapi.yaml and docs/schemas/")
    mode.add_argument("--check", action="store_true", help="exit 1 when the files are out of date")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs folder (default: the repo's docs/)")
    args = parser.parse_args(argv)
    if args.write:
        for name in write(args.docs):
            print(f"wrote {args.docs / name}")
        return 0
    if args.check:
        stale = stale_files(args.docs)
        for name in stale:
            print(f"out of date: {args.docs / name} (run `make asyncapi`)", file=sys.stderr)
        return 1 if stale else 0
    sys.stdout.write(render_yaml(build_document()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
