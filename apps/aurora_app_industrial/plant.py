"""The industrial system's data and rules, in memory: pure logic, no MCP (unit-tested alone).

Devices have points (with units) and alarms; device rules go draft → saved → enabled. A save
carries a client-supplied idempotency key: saving the same key again answers the rule saved
the first time instead of making a second one, so a client that lost a save's response can
retry, or look the rule up by its key, without ever duplicating it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


class PlantError(Exception):
    """A request the system refuses; the message says what to fix."""


DEVICES: dict[str, dict[str, Any]] = {
    "P-101": {"device_id": "P-101", "name": "Pump P-101", "type": "centrifugal pump", "site": "Plant A",
              "line": "Hall 2, line 3"},
    "C-3": {"device_id": "C-3", "name": "Compressor C-3", "type": "screw compressor", "site": "Plant A",
            "line": "Hall 1"},
    "F-9": {"device_id": "F-9", "name": "Fan F-9", "type": "exhaust fan", "site": "Plant B", "line": "Roof"},
}

POINTS: dict[str, list[dict[str, Any]]] = {
    "P-101": [
        {"point_id": "TT-204", "name": "bearing temperature", "aliases": ["温度", "temperature"], "unit": "°C",
         "value": 96.5},
        {"point_id": "PT-110", "name": "outlet pressure", "aliases": ["压力", "pressure"], "unit": "bar",
         "value": 6.2},
    ],
    "C-3": [
        {"point_id": "TT-301", "name": "discharge temperature", "aliases": ["温度", "temperature"], "unit": "°C",
         "value": 88.0},
        {"point_id": "PT-302", "name": "discharge pressure", "aliases": ["压力", "pressure"], "unit": "bar",
         "value": 7.9},
    ],
    "F-9": [
        {"point_id": "VT-311", "name": "vibration", "aliases": ["振动", "vibration"], "unit": "mm/s", "value": 7.1},
    ],
}

ALARMS: list[dict[str, Any]] = [
    {"alarm_id": "ALM-1001", "device_id": "P-101", "device_name": "Pump P-101", "level": "critical",
     "point_id": "TT-204", "value": 96.5, "unit": "°C", "message": "bearing temperature 96.5 °C over limit 85 °C",
     "raised_at": "2026-06-19T08:12:00+08:00"},
    {"alarm_id": "ALM-1002", "device_id": "F-9", "device_name": "Fan F-9", "level": "warning",
     "point_id": "VT-311", "value": 7.1, "unit": "mm/s", "message": "vibration 7.1 mm/s over limit 6 mm/s",
     "raised_at": "2026-06-19T09:40:00+08:00"},
    {"alarm_id": "ALM-1003", "device_id": "C-3", "device_name": "Compressor C-3", "level": "warning",
     "point_id": "PT-302", "value": 7.9, "unit": "bar", "message": "discharge pressure 7.9 bar over limit 7.5 bar",
     "raised_at": "2026-06-19T10:05:00+08:00"},
]

_ABOVE = ("超过", "高于", "大于", ">", "above", "over")
_BELOW = ("低于", "小于", "<", "below", "under")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def find_device(text: str) -> dict[str, Any]:
    """The device a free text names, by id (`P-101`) or name (`Pump P-101`); the longest id wins."""
    wanted = text.casefold()
    for device_id in sorted(DEVICES, key=len, reverse=True):
        device = DEVICES[device_id]
        if re.search(rf"(?<![\w-]){re.escape(device_id.casefold())}(?![\w-])", wanted) or \
                device["name"].casefold() in wanted:
            return dict(device)
    raise PlantError(f"the text names no known device (known: {', '.join(DEVICES)}): {text!r}")


def device(device_id: str) -> dict[str, Any]:
    found = DEVICES.get(device_id)
    if found is None:
        raise PlantError(f"no device {device_id!r} (known: {', '.join(DEVICES)})")
    return dict(found)


def points(device_id: str) -> list[dict[str, Any]]:
    device(device_id)
    return [{k: v for k, v in p.items() if k != "aliases"} for p in POINTS[device_id]]


def alarms(device_id: str, limit: int = 5) -> list[dict[str, Any]]:
    """The device's alarms, newest first."""
    device(device_id)
    found = [dict(a) for a in ALARMS if a["device_id"] == device_id]
    return sorted(found, key=lambda a: a["raised_at"], reverse=True)[: max(limit, 0)]


def draft_rule(device_id: str, description: str) -> dict[str, Any]:
    """A rule draft from a description such as `温度超过 85 告警`: which point (by its name, an
    alias or its id), the comparison and the threshold, in the point's unit. Nothing is stored."""
    text = description.casefold()
    candidates = POINTS[device(device_id)["device_id"]]
    point = next((p for p in candidates if p["point_id"].casefold() in text or p["name"] in text
                  or any(alias.casefold() in text for alias in p["aliases"])), None)
    if point is None:
        names = ", ".join(f"{p['point_id']} ({p['name']})" for p in candidates)
        raise PlantError(f"the description names none of {device_id}'s points: {names}")
    operator = ">" if any(w in text for w in _ABOVE) else "<" if any(w in text for w in _BELOW) else None
    if operator is None:
        raise PlantError("the description gives no comparison: say 超过/above or 低于/below")
    numbers = [n for n in _NUMBER.findall(text.replace(device_id.casefold(), " ").replace(
        point["point_id"].casefold(), " "))]
    if not numbers:
        raise PlantError("the description gives no threshold (a number, in the point's unit)")
    threshold = float(numbers[0])
    return {"device_id": device_id, "point_id": point["point_id"], "point_name": point["name"],
            "unit": point["unit"], "operator": operator, "threshold": threshold,
            "name": f"{device_id} {point['name']} {operator} {threshold:g} {point['unit']}",
            "idempotency_key": rule_key(device_id, point["point_id"], operator, threshold)}


def rule_key(device_id: str, point_id: str, operator: str, threshold: float) -> str:
    """The key a client derives from what the rule *is*: the same request made again (a retry,
    another task) carries the same key."""
    return f"rule:{device_id}:{point_id}:{operator}:{threshold:g}"


@dataclass
class Rules:
    """Saved rules by id, with the idempotency keys they were saved under."""

    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_key: dict[str, str] = field(default_factory=dict)

    def save(self, *, device_id: str, point_id: str, operator: str, threshold: float, name: str,
             idempotency_key: str) -> dict[str, Any]:
        """Save a rule (disabled); the same key again answers the first rule, `created: false`."""
        if not idempotency_key.strip():
            raise PlantError("idempotency_key is empty: give the key that identifies this save")
        existing = self.by_key.get(idempotency_key)
        if existing is not None:
            return {**self.by_id[existing], "created": False}
        if point_id not in {p["point_id"] for p in POINTS[device(device_id)["device_id"]]}:
            raise PlantError(f"device {device_id} has no point {point_id!r}")
        if operator not in (">", "<"):
            raise PlantError(f"operator {operator!r}: use '>' or '<'")
        rule_id = f"RULE-{len(self.by_id) + 1:04d}"
        rule = {"rule_id": rule_id, "device_id": device_id, "point_id": point_id, "operator": operator,
                "threshold": threshold, "name": name, "enabled": False, "idempotency_key": idempotency_key,
                "saved_at": now_iso()}
        self.by_id[rule_id] = rule
        self.by_key[idempotency_key] = rule_id
        return {**rule, "created": True}

    def get(self, rule_id: str | None = None, idempotency_key: str | None = None) -> dict[str, Any]:
        """`{found, rule}`: by id, or by the key it was saved under."""
        if rule_id is None and idempotency_key is None:
            raise PlantError("give rule_id or idempotency_key")
        ident = rule_id if rule_id is not None else self.by_key.get(idempotency_key or "")
        rule = self.by_id.get(ident or "")
        return {"found": rule is not None, "rule": dict(rule) if rule else None}

    def of_device(self, device_id: str) -> list[dict[str, Any]]:
        device(device_id)
        return [dict(r) for r in self.by_id.values() if r["device_id"] == device_id]

    def enable(self, rule_id: str) -> dict[str, Any]:
        rule = self.by_id.get(rule_id)
        if rule is None:
            raise PlantError(f"no rule {rule_id!r}: save it first")
        rule["enabled"] = True
        rule["enabled_at"] = now_iso()
        return dict(rule)
