"""What a model plans for each of the demo's `llm` agents (deploy/demo/llm/), scripted for the fake
OpenAI-compatible server (the only fake: a model is a paid API). Each turn reads the conversation
the runner sent — the event, and every tool call so far with its result — and proposes the next
call, or the answer, the way the agents' prompts ask for it. Nothing here touches the platform:
every call it proposes is made by the runner, through the gateway, against the real demo systems.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.fakes.openai_server import Conversation, Turn


@dataclass(frozen=True)
class Called:
    """One tool call of the conversation so far, with what the runner answered."""

    name: str  # the LLM-safe function name (ends with the tool's own name)
    arguments: dict[str, Any]
    status: str
    result: Any
    error: dict[str, Any] | None


def history(chat: Conversation) -> list[Called]:
    proposed: dict[str, tuple[str, dict[str, Any]]] = {}
    done: list[Called] = []
    for message in chat.messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                proposed[call["id"]] = (call["function"]["name"], json.loads(call["function"]["arguments"] or "{}"))
        elif message.get("role") == "tool":
            name, arguments = proposed.get(message.get("tool_call_id", ""), ("?", {}))
            body = json.loads(message["content"])
            done.append(Called(name, arguments, body.get("status", ""), body.get("result"), body.get("error")))
    return done


def calls_of(done: list[Called], suffix: str) -> list[Called]:
    return [c for c in done if c.name.endswith(suffix)]


def last(done: list[Called], suffix: str) -> Called | None:
    found = calls_of(done, suffix)
    return found[-1] if found else None


def demo_model(chat: Conversation) -> Turn:
    """The runners' default model, answering for whichever demo agent asks."""
    event = chat.event["type"]
    if event == "group.member_joined":
        return chat.answer(f"欢迎 {chat.event['actor']['id']} 加入！")
    if event == "friend.request_received":
        return befriend(chat)
    if any(t["function"]["name"].endswith("draft_rule") for t in chat.tools):
        return add_rule(chat)
    return relay(chat)


def befriend(chat: Conversation) -> Turn:
    actor = chat.event["actor"]["id"]
    answered = last(history(chat), "event_respond_friend_request")
    if answered is None:
        note = str(chat.event.get("data", {}).get("note", ""))
        return chat.call("event_respond_friend_request", accept=bool(note.strip()),
                         message=f"你好，{actor}！我是 Aurora 演示助手。")
    return chat.answer(f"{actor} 的好友申请：{answered.status}")


def relay(chat: Conversation) -> Turn:
    """device → alarms → assets by the alarm's device name → (a choice when several) → profile."""
    done = history(chat)
    device = last(done, "find_device")
    if device is None:
        return chat.call("find_device", text=chat.event["data"]["text"])
    alarms = last(done, "list_alarms")
    if alarms is None:
        return chat.call("list_alarms", device_id=device.result["device_id"], limit=3)
    latest = alarms.result["latest"]
    search = last(done, "search_assets")
    if search is None:
        return chat.call("search_assets", deviceName=latest["device_name"] if latest else device.result["name"])
    found = search.result
    asked = last(done, "request_action")
    if found["count"] > 1 and asked is None:
        question = f"资产系统中有 {found['count']} 条资产与「{found['deviceName']}」关联，你指的是哪一条？"
        return chat.call("request_action", action="interaction.requested", question=question,
                         options=[item["name"] for item in found["items"]])
    chosen = found["items"][asked.result["index"] - 1] if asked is not None else \
        (found["items"][0] if found["items"] else None)
    profile = last(done, "get_asset_profile")
    if chosen is not None and profile is None:
        return chat.call("get_asset_profile", assetCode=chosen["assetCode"])
    d = device.result
    lines = [f"设备 {d['name']}（{d['device_id']}）最近的告警【来源：工业系统】："]
    lines += [f"- {a['alarm_id']} {a['level']} {a['raised_at']}：{a['message']}" for a in alarms.result["items"]]
    if profile is not None:
        p = profile.result
        asset = f"{p['assetCode']} {p['name']}，{p['site']} {p['location']}，负责人 {p['owner']}。"
    else:
        asset = f"资产系统中没有与「{found['deviceName']}」关联的资产记录（未作关联）。"
    return chat.answer("\n".join(lines) + "\n资产档案【来源：资产系统】：" + asset)


DRAFTED = ("device_id", "point_id", "operator", "threshold", "name", "idempotency_key")


def add_rule(chat: Conversation) -> Turn:
    """device → points → draft → look up by key → save (unless found) → read back → compare → enable."""
    done = history(chat)
    text = chat.event["data"]["text"]
    device = last(done, "find_device")
    if device is None:
        return chat.call("find_device", text=text)
    if last(done, "list_points") is None:
        return chat.call("list_points", device_id=device.result["device_id"])
    drafted = last(done, "draft_rule")
    if drafted is None:
        return chat.call("draft_rule", device_id=device.result["device_id"], description=text)
    draft, key = drafted.result, drafted.result["idempotency_key"]
    lookups = calls_of(done, "get_rule")
    if not lookups:
        return chat.call("get_rule", idempotency_key=key)
    existed = bool(lookups[0].result["found"])
    if not existed and last(done, "save_rule") is None:
        return chat.call("save_rule", **{k: draft[k] for k in DRAFTED})
    if not existed and len(lookups) < 2:
        return chat.call("get_rule", idempotency_key=key)
    rule = lookups[-1].result["rule"]
    if any(rule[k] != draft[k] for k in ("point_id", "operator", "threshold")):
        return chat.answer(f"规则回读与草稿不一致（草稿 {draft['name']}，回读 {rule}）：未启用，"
                           f"请检查幂等键 {key} 的规则。")
    enabled = last(done, "enable_rule")
    if enabled is None and not rule["enabled"]:
        return chat.call("enable_rule", rule_id=rule["rule_id"])
    if enabled is None or enabled.status == "ok":
        again = f"这条规则此前已按幂等键 {key} 保存过，没有重复创建。" if existed else ""
        return chat.answer(f"规则 {rule['rule_id']} 已保存并启用：{draft['name']}（点位 {draft['point_id']} "
                           f"{draft['point_name']}，单位 {draft['unit']}）。{again}回读与草稿一致。")
    # what failed, in the user's words: the app's error text stays in the task
    return chat.answer(f"规则 {rule['rule_id']} 已保存（幂等键 {key}，回读与草稿一致），"
                       "但没有启用：工业系统暂时无法启用这条规则。"
                       f"已完成：保存规则；未完成：启用规则。请稍后重新启用 {rule['rule_id']}。")
