"""What the console shows, as HTML: pure functions from what the platform answered to markup.

Everything shown may come from outside (event data, tool names and descriptions, arguments,
error texts), so every template is rendered with autoescape, and the live events go to the page
as JSON that its script puts in place as text, never as markup.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from aurora_cli.commands.health import last_probe
from aurora_cli.commands.tasks import STEP_COLUMNS, step_row, task_took
from aurora_cli.timing import duration

DRY_RUN_EXAMPLE = json.dumps({"header": {"source": {"app": "im.polaris.qq", "instance": "default"}},
                              "payload": {"type": "message.received", "session_id": "group_1",
                                          "data": {"text": "hello"}}}, ensure_ascii=False, indent=2)
EXCERPT = 160


def short(value: Any, limit: int = 60) -> str:
    """Compact JSON (or the text), on one line, cut with "…" at `limit` characters."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                                                            default=str)
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def clock(value: Any) -> str:
    """`2026-06-19T12:00:00.123+00:00` → `2026-06-19 12:00:00`."""
    return "" if not value else str(value)[:19].replace("T", " ")


def probed(system: Any) -> str:
    """When an HTTP system was last probed (an age), or why there is no probe to show."""
    return last_probe(system, datetime.now(UTC)) if isinstance(system, dict) else "-"


def target(value: Any) -> str:
    if not isinstance(value, dict) or not value.get("type"):
        return "-"
    return f"{value['type']}/{value.get('id')}" if value.get("id") else str(value["type"])


@cache
def environment() -> Environment:
    env = Environment(loader=PackageLoader("aurora_cli.console", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(short=short, clock=clock, target=target, duration=duration, probed=probed)
    return env


def render(template: str, **context: Any) -> Markup:
    return Markup(environment().get_template(template).render(**context))  # escaped by Jinja


# --------------------------------------------------------------------------- parts


def part(name: str, value: Any, error: str | None) -> Markup:
    """One section of the page (`approvals`, `tasks`, …) from its admin answer or error."""
    if error is not None:
        return render(f"{name}.html", error=error, rows=[], count=None)
    if name == "tasks":
        return render("tasks.html", error=None, rows=value.get("items") or [], count=value.get("count"))
    if name == "tools":
        return render("tools.html", error=None, rows=tool_rows(value))
    return render(f"{name}.html", error=None, rows=list(value or []), count=None)


def tool_rows(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": t.get("name"), "side_effect": t.get("side_effect"), "description": t.get("description"),
             "parameters": ", ".join(sorted(((t.get("input_schema") or {}).get("properties") or {}).keys()))}
            for t in tools]


def task_part(task_id: str, task: dict[str, Any] | None, error: str | None) -> Markup:
    if error is not None or task is None:
        return render("task.html", task_id=task_id, error=error or "no such task")
    return render("task.html", task=task, error=None, facts=task_facts(task), steps=step_rows(task))


def task_facts(task: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) for what `aurora tasks show` prints above the steps; empty ones left out."""
    tgt = task.get("target") or {}
    delivery = task.get("delivery") or {}
    error = task.get("error")
    facts = [
        ("target", f"{target(tgt)} (binding {task.get('binding_id')})"),
        ("agent", task.get("agent")),
        ("event", f"{task.get('event_type')} {task.get('event_id')} from {task.get('source_app')}"),
        ("session", task.get("session_id")),
        ("attempts", f"{task.get('attempts')} (runner {task.get('runner')})"),
        ("reply target", short(delivery["reply_target"], 200) if delivery.get("reply_target")
         else "none (nothing is delivered)"),
        ("delivered", "yes" if task.get("delivered") else "no"),
        ("took", task_took(task)),
        ("answer", task.get("answer")),
        ("error", f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) else None),
        ("approval", task.get("approval_id")),
        ("created", clock(task.get("created_at"))),
        ("updated", clock(task.get("updated_at"))),
    ]
    return [(label, str(value)) for label, value in facts if value not in (None, "")]


def step_rows(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(zip(STEP_COLUMNS, ("" if cell is None else cell for cell in step_row(step)), strict=True))
            for step in task.get("steps") or []]


def decision(approval_id: str, approval: dict[str, Any] | None, error: str | None) -> Markup:
    return render("decision.html", approval_id=approval_id, approval=approval or {}, error=error)


def dry_run(reply: dict[str, Any] | None, error: str | None, note: str | None = None) -> Markup:
    return render("dry_run.html", reply=reply or {}, error=error, note=note)


def page(*, parts: dict[str, Markup], **who: Any) -> str:
    """The overview; `who` is the session's person, roles, token and NATS URL (routes.who)."""
    return str(render("page.html", title="Overview", parts=parts, dry_run_example=DRY_RUN_EXAMPLE, **who))


def task_page(task_id: str, part_html: Markup, **who: Any) -> str:
    return str(render("task_page.html", title=f"Task {task_id}", task_id=task_id, part=part_html, **who))


def sign_in_page(*, nats_url: str) -> str:
    """The only page shown before sign-in: no section, no token, nothing read from the platform."""
    return str(render("sign_in.html", title="Sign in", nats_url=nats_url, person=None))


def signed_in(person: str | None, error: str | None) -> Markup:
    return render("signed_in.html", person=person, error=error)


# --------------------------------------------------------------------------- live events


def event_item(subject: str, data: bytes) -> dict[str, Any]:
    """What the live list shows of one event (the page sets each field as text)."""
    try:
        event = json.loads(data)
        header, payload = event["header"], event["payload"]
        source = header.get("source") or {}
        app = str(source.get("app", "?"))
        if source.get("instance", "default") != "default":
            app += f"/{source['instance']}"
        detail = payload.get("summary") or short(payload.get("data", {}), EXCERPT)
        return {"subject": subject, "id": str(header.get("message_id") or ""), "time": clock(header.get("timestamp")),
                "type": str(payload.get("type", "?")), "app": app, "detail": short(str(detail), EXCERPT),
                "synthetic": bool(payload.get("synthetic"))}
    except (ValueError, KeyError, TypeError, AttributeError):
        return {"subject": subject, "id": "", "time": "", "type": "(not an AMP event)", "app": "",
                "detail": short(data.decode(errors="replace"), EXCERPT), "synthetic": False}
