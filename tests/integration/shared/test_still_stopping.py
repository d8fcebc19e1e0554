"""A service still stopping two seconds after SIGTERM says what it waits for, so that an operator
whose service was killed at the end of its grace period can tell what held it up."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.processes import ServiceProcess, logged, service_env


async def test_a_service_slow_to_stop_logs_where_each_task_waits(tmp_path: Path, nats_url: str) -> None:
    service = ServiceProcess("tests.harness.lingering_service", service_env(nats_url), tmp_path).start()
    try:
        await logged(service, '"msg": "started"')
        service.signal_stop()
        await logged(service, '"msg": "still stopping"')
        [line] = [json.loads(text) for text in service.logs().splitlines() if '"still stopping"' in text][:1]
        mains = [task for task in line["waiting"] if "main (lingering_service.py:" in task]
        assert len(mains) == 1, line["waiting"]
        main = mains[0]
        # The whole chain, outermost first, down to the innermost await.
        assert main.index("main (") < main.index("linger (lingering_service.py:") < main.index("sleep ("), main
        assert line["seconds"] >= 2.0
    finally:
        service.kill()
