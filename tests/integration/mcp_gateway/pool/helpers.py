"""What the pool tests share besides the tool-pool client (tests/harness/tool_pool.py): the echo
tools an agent is bound to, and a gateway with an HTTP system of orders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.tool_pool import Pool
from tests.harness.waiting import NOT_SERVING_YET, poll

REPO = Path(__file__).resolve().parents[4]
AGENT = "clerk"
BOUND = ("echo.echo", "echo.unannotated_write", "echo.counter_increment", "echo.counter_get")


async def gateway_with_orders(nc: NATS, subjects: Subjects, spawn: Any, folder: Path, *, base_url: str,
                              spec: dict[str, Any], cooldown: float, env: dict[str, str] | None = None
                              ) -> tuple[Pool, dict[str, Any]]:
    """A gateway process (no apps) with the HTTP system `orders` at `base_url` (business contract
    `code == 0`, circuit opening after 2 transport failures, writes keyed by `Idempotency-Key`)
    and `spec`'s operations imported as drafts; (the pool, what the import answered)."""
    config = folder / "apps.yml"
    config.write_text("apps: {}\n")
    spec_file = folder / "orders.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    # The spec file is read by the gateway itself: its folder is the gateway's specs folder.
    spawn("services.mcp_gateway", tag="gateway", AURORA_APPS_CONFIG=str(config),
          **{"AURORA_SPECS_DIR": str(folder), **(env or {})})
    pool = Pool(nc, subjects)

    async def applied() -> bool:
        try:
            await pool.admin("systems", "apply", {"document": {
                "kind": "System", "name": "orders", "type": "http", "base_url": base_url, "timeout_seconds": 1.0,
                "idempotency_header": "Idempotency-Key",  # it deduplicates writes on the call id
                "contract": {"success_field": "code", "success_values": [0], "message_field": "msg"},
                "circuit": {"failure_threshold": 2, "cooldown_seconds": cooldown}}})
        except NOT_SERVING_YET:  # the gateway is still starting
            return False
        return True

    await poll(applied, timeout=30, what="the gateway to take the orders system", interval=0.2)
    imported = await pool.admin("systems", "import_openapi", {"name": "orders", "base_url": base_url,
                                                              "spec": str(spec_file)})
    return pool, imported
