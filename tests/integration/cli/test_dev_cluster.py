"""`aurora dev --cluster 3`: three secured nats-servers, a real event-bridge given every node's
URL, its streams created with 3 replicas, `aurora streams` showing replicas, leader and lag,
and a node that dies reported by name, by the dev stack and as an unreachable replica by `aurora health`."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from aurora_cli.devstack import DevStack, DevStackError, service_specs
from tests.harness.cli import AURORA
from tests.harness.ports import free_port_run
from tests.harness.processes import REPO
from tests.harness.waiting import poll_sync


def _streams(stack: DevStack) -> dict[str, dict[str, object]]:
    env = {"PATH": "/usr/bin:/bin", **stack.client_env("operator")}
    done = subprocess.run([str(AURORA), "streams", "--json"], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return {s["name"]: s for s in json.loads(done.stdout)["streams"]}


def _offline_replicas(stack: DevStack) -> list[str] | None:
    """`aurora health --json`'s problems about stream replicas, once it fails with some."""
    env = {"PATH": "/usr/bin:/bin", **stack.client_env("operator")}
    done = subprocess.run([str(AURORA), "health", "--json"], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    if done.returncode != 1 or not done.stdout.startswith("{"):
        return None
    return [p for p in json.loads(done.stdout)["problems"] if p.startswith("stream ")] or None


def test_a_cluster_of_three_replicates_what_the_services_create(tmp_path: Path) -> None:
    out = io.StringIO()
    stack = DevStack(tmp_path / "dev", port=free_port_run(3), specs=service_specs(["event_bridge"]), cwd=REPO,
                     console=Console(file=out, width=300, color_system=None), cluster=3)
    try:
        stack.start()
        assert stack.url.count(",") == 2  # the bridge was given every node
        streams = poll_sync(lambda: (found := _streams(stack)) and "AMP_EVENTS" in found and found,
                            timeout=30, what="the bridge's streams")
        events = streams["AMP_EVENTS"]
        assert events["replicas"] == 3
        assert str(events["leader"]).startswith("aurora-dev-")
        followers = events["followers"]
        assert isinstance(followers, list) and len(followers) == 2 and events["lag"] == 0
        table = subprocess.run([str(AURORA), "streams"], env={"PATH": "/usr/bin:/bin", **stack.client_env()},
                               cwd=REPO, capture_output=True, text=True, timeout=30, check=False).stdout
        assert "leader aurora-dev-" in table and "lag 0" in table
        assert "a cluster of 3" in stack.banner()

        stack.cluster.kill(2)  # type: ignore[union-attr]
        stack.check()
        assert "nats-2" in stack.unexpected_exits
        assert "nats-server nats-2 exited on its own" in out.getvalue()
        # each stream's leader finds the node gone on its own: wait for the one looked at
        problems = poll_sync(lambda: (found := _offline_replicas(stack)) and any("AMP_EVENTS" in p for p in found)
                             and found, timeout=60, what="aurora health to name the node for AMP_EVENTS")
        assert "stream AMP_EVENTS: replica aurora-dev-2 unreachable" in problems, problems
    finally:
        stack.stop()
    assert not any(server.running for server in stack.servers)


def test_a_cluster_size_out_of_range_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DevStackError, match="--cluster 9"):
        DevStack(tmp_path / "dev", specs=[], cluster=9, insecure=True)
