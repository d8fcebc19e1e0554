"""An A2A task resumed after every runner was restarted: its write waits for an approval, every
runner goes away (one killed, the others stopped), the approval is granted while none runs, the
runners start again, and the A2A client (the official Python SDK) sees the same task complete."""

from __future__ import annotations

from a2a.types.a2a_pb2 import GetTaskRequest, Task, TaskState
from nats.aio.client import Client as NATS

from shared.nats.admin_service import admin_request
from tests.harness.cli import cli_runner
from tests.harness.runner_stack import RUNNER_ENV
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.mcp_edge.a2a.helpers import SUBJECTS, a2a_client, agent_with_token, answer_of, sent, writer


async def test_a_waiting_task_completes_after_every_runner_was_restarted(a2a_stack: Stack, anc: NATS) -> None:
    agent_id = "a2a-restart"
    secret = await agent_with_token(anc, writer(agent_id))
    runners = [tag for tag, process in a2a_stack.processes.items() if process in a2a_stack.of("runner")]
    assert len(runners) >= 2, runners  # "every runner": more than one, each of them gone
    async with a2a_client(a2a_stack.edge(), agent_id, secret) as client:
        waiting = await sent(client, agent_id)
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, waiting
        try:
            a2a_stack[runners[0]].kill()  # a crash: nothing of it is cleaned up
            for tag in runners[1:]:
                a2a_stack[tag].terminate()
            assert not any(a2a_stack[tag].alive() for tag in runners)
            while_down = await client.get_task(GetTaskRequest(id=waiting.id))
            assert while_down.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, while_down
            granted = cli_runner(a2a_stack.url)("approvals", "grant", waiting.metadata["aurora.approval_id"])
            assert granted.returncode == 0, granted.stderr
            for tag in runners:
                await a2a_stack.serving("runner", tag, **RUNNER_ENV)

            async def completed() -> Task | None:
                task = await client.get_task(GetTaskRequest(id=waiting.id))
                return task if task.status.state == TaskState.TASK_STATE_COMPLETED else None

            done = await poll(completed, what="the A2A task completed by the runners started again", timeout=60)
        finally:
            for tag in runners:
                if not a2a_stack[tag].alive():
                    await a2a_stack.serving("runner", tag, **RUNNER_ENV)
    assert done.id == waiting.id and answer_of(done) == "count is 1"
    stored = await admin_request(anc, SUBJECTS, "tasks", "get", {"id": waiting.id})  # the same Aurora task
    assert stored["state"] == "succeeded" and stored["answer"] == "count is 1"
