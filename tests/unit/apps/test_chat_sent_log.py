"""The chat app's sent log: one record per idempotency key across processes sharing the file,
and a send that reads only what others appended since (not the whole file each time)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from apps.aurora_app_chat.sent import SentLog

REPO = Path(__file__).resolve().parents[3]


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_key_appended_by_one_process_is_found_by_another(tmp_path: Path) -> None:
    path = tmp_path / "sent.jsonl"
    one, other = SentLog(path), SentLog(path)
    first = one.append_once("k1", {"text": "a"})
    other.append_once(None, {"text": "unkeyed"})
    assert other.append_once("k1", {"text": "a again"}) == first
    assert one.append_once("k2", {"text": "b"})["text"] == "b"
    assert other.append_once("k2", {"text": "b again"})["text"] == "b"
    assert [r.get("idempotency_key") for r in _lines(path)] == ["k1", None, "k2"]


def test_a_send_parses_only_the_lines_appended_since_it_last_looked(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sent.jsonl"
    writer, sender = SentLog(path), SentLog(path)
    for n in range(200):
        writer.append_once(f"w{n}", {"text": str(n)})
    parsed: list[bytes] = []
    real_loads = json.loads

    def counted(text: bytes) -> object:
        parsed.append(text)
        return real_loads(text)

    monkeypatch.setattr(json, "loads", counted)
    sender.append_once("s0", {"text": "first"})  # catches up once: the 200 lines already there
    assert len(parsed) == 200
    parsed.clear()
    for n in range(5):
        sender.append_once(f"s{n + 1}", {"text": "more"})
    assert parsed == []  # nothing new from anybody: nothing read again
    writer.append_once("w-late", {"text": "late"})  # the writer catches up on the sender's six lines
    parsed.clear()
    assert sender.append_once("w-late", {"text": "late again"})["text"] == "late"
    assert len(parsed) == 1  # the sender reads the one line appended since


def test_a_truncated_file_is_read_again_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "sent.jsonl"
    log = SentLog(path)
    log.append_once("k1", {"text": "a"})
    log.append_once("k2", {"text": "b"})
    path.write_text(json.dumps({"text": "kept", "idempotency_key": "k9"}) + "\n", encoding="utf-8")
    assert log.append_once("k9", {"text": "new"})["text"] == "kept"
    assert log.append_once("k1", {"text": "again"})["text"] == "again"  # gone with the old file: sent anew


def test_without_a_file_keys_are_kept_in_memory() -> None:
    log = SentLog()
    first = log.append_once("k1", {"text": "a"})
    assert log.append_once("k1", {"text": "b"}) == first
    assert [r["text"] for r in log.records()] == ["a"]


def test_a_line_appended_is_in_the_file_when_the_process_is_killed_right_after(tmp_path: Path) -> None:
    path = tmp_path / "sent.jsonl"
    killed_after_append = (
        "import os, signal, sys\n"
        "from apps.aurora_app_chat.sent import SentLog\n"
        "SentLog(sys.argv[1]).append_once('k1', {'text': 'sent before the kill'})\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", killed_after_append, str(path)], cwd=REPO, timeout=30)
    assert done.returncode == -signal.SIGKILL
    assert [(r["idempotency_key"], r["text"]) for r in _lines(path)] == [("k1", "sent before the kill")]
    assert SentLog(path).append_once("k1", {"text": "again"})["text"] == "sent before the kill"
