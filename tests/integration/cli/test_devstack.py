"""The dev stack in-process with real child processes: readiness, loud exits, ordered stop."""

from __future__ import annotations

import io
import socket
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from aurora_cli.devstack import DevStack, DevStackError, ServiceSpec, service_specs
from aurora_cli.localnats import free_port
from tests.harness.waiting import poll_sync

PY = sys.executable
READY = 'print(\'{"msg": "started"}\', flush=True)'


def _fake(name: str, body: str) -> ServiceSpec:
    return ServiceSpec(name, (PY, "-c", body))


def _stack(tmp_path: Path, specs: list[ServiceSpec], **options: float) -> tuple[DevStack, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    # These fakes are no NATS users: their lifecycle is the point here, not the permissions.
    return DevStack(tmp_path / "dev", port=free_port(), specs=specs, console=console, insecure=True,
                    **options), out


def test_a_crashed_services_last_lines_are_shown_before_its_alert(tmp_path: Path) -> None:
    # Much output right before the exit: its reader is still copying it when the exit is seen.
    body = f"{READY}; import sys; [print('line', i) for i in range(1000)]; print('boom', flush=True); sys.exit(3)"
    stack, out = _stack(tmp_path, [_fake("crasher", body)])
    try:
        stack.start()

        def reported() -> bool:
            stack.check()
            return "crasher" in stack.unexpected_exits

        poll_sync(reported, what="the crasher reported")
        text = out.getvalue()
        assert "crasher │ boom" in text
        assert text.index("crasher │ boom") < text.index("!!! crasher exited on its own with code 3")
    finally:
        stack.stop()


def test_a_service_that_exits_is_reported_loudly_and_the_others_keep_running(tmp_path: Path) -> None:
    bridge, *_ = service_specs(["event_bridge"])
    crasher = _fake("crasher", f"{READY}; import sys; print('boom', flush=True); sys.exit(3)")
    stack, out = _stack(tmp_path, [bridge, crasher])
    try:
        stack.start()

        def reported() -> bool:
            stack.check()  # what `wait()` does every 0.2 s
            return "crasher" in stack.unexpected_exits

        poll_sync(reported, what="the crasher reported")
        stack.check()
        stack.check()
        assert stack.unexpected_exits == ["crasher"]  # reported once
        text = out.getvalue()
        assert "!!! crasher exited on its own with code 3; the others keep running" in text
        assert "event-bridge │" in text and "started nats=" in text
        assert "crasher │ boom" in text
        assert stack.nats.running
        assert "event-bridge" in stack.banner()
    finally:
        stack.stop()
    assert stack.stop_order == ["crasher", "event-bridge", "nats"]
    assert not stack.nats.running
    logs = stack.logs_dir
    assert '"msg": "started"' in (logs / "event-bridge.log").read_text()
    assert "boom" in (logs / "crasher.log").read_text()
    assert (logs / "nats.log").stat().st_size > 0
    assert '"msg": "stopped"' in (logs / "event-bridge.log").read_text()  # a graceful stop


def test_services_stop_in_reverse_order_and_a_stubborn_one_is_killed(tmp_path: Path) -> None:
    stubborn = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                f"{READY}; time.sleep(60)")
    polite = f"{READY}; import time; time.sleep(60)"
    stack, out = _stack(tmp_path, [_fake("first", polite), _fake("second", stubborn), _fake("third", polite)],
                        stop_timeout=0.5)
    stack.start()
    processes = [r.process for r in stack._running]
    stack.stop()
    assert stack.stop_order == ["third", "second", "first", "nats"]
    assert all(p.poll() is not None for p in processes)
    assert "second did not stop within" in out.getvalue()
    assert stack.unexpected_exits == []
    stack.stop()  # idempotent


def test_a_held_service_starts_only_when_released_and_still_stops_in_dependency_order(tmp_path: Path) -> None:
    # `aurora dev` holds the app-supervisor (the apps that emit events) until the demo is applied.
    polite = f"{READY}; import time; time.sleep(60)"
    stack, _ = _stack(tmp_path, [_fake("first", polite), _fake("ingress", polite), _fake("third", polite)])
    try:
        stack.start(hold=("ingress",))
        assert [r.spec.name for r in stack._running] == ["first", "third"]
        stack.start_held()
        assert [r.spec.name for r in stack._running] == ["first", "third", "ingress"]
        assert all(r.ready.is_set() for r in stack._running)
        stack.start_held()  # once
        assert len(stack._running) == 3
    finally:
        stack.stop()
    assert stack.stop_order == ["third", "ingress", "first", "nats"]


def test_readiness_comes_from_the_started_log_line_not_a_timeout(tmp_path: Path) -> None:
    stack, _ = _stack(tmp_path, [_fake("quick", f"{READY}; import time; time.sleep(60)")], ready_timeout=30)
    began = time.monotonic()
    try:
        stack.start()
        assert time.monotonic() - began < 10
    finally:
        stack.stop()


def test_a_silent_service_is_waited_for_a_bounded_time(tmp_path: Path) -> None:
    stack, out = _stack(tmp_path, [_fake("silent", "import time; time.sleep(60)")], ready_timeout=0.5)
    try:
        stack.start()
        assert "silent did not log 'started' within 0s; going on" in out.getvalue() or \
               "silent did not log 'started' within 1s; going on" in out.getvalue()
    finally:
        stack.stop()


def test_a_taken_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        stack = DevStack(tmp_path, port=port, specs=[], console=Console(file=io.StringIO()))
        with pytest.raises(DevStackError, match=f"port {port} on 127.0.0.1 is in use"):
            stack.start()
        stack.stop()
