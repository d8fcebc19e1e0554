"""The CLI's ways in: `aurora apply` of a `kind: A2AImport` file (import, the reviewer's side
effect, review, publish; applied again: unchanged), `aurora systems import-a2a`, and a skill's
side effect marked with `aurora tools mark --side-effect`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.cli import cli_runner
from tests.harness.stack import Stack
from tests.harness.tool_pool import Pool
from tests.integration.mcp_gateway.a2a.helpers import RemoteAgents

SUBJECTS = Subjects("amp")


async def test_an_a2a_import_file_publishes_the_reviewed_skills(pnc: NATS, pool_stack: Stack,
                                                                remote_agents: RemoteAgents, tmp_path: Path) -> None:
    document = {"kind": "A2AImport", "system": "catalogue", "package": "demo.catalogue",
                "card": "${CATALOGUE_AGENT:-http://127.0.0.1:1}", "timeout_seconds": 30,
                "publish": [{"tool": "demo.catalogue.lookup", "side_effect": "read", "note": "changes nothing"}]}
    path = tmp_path / "catalogue.yml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    aurora = cli_runner(pool_stack.url)
    first = aurora("apply", "-f", str(path), "--timeout", "20", CATALOGUE_AGENT=remote_agents.streaming)
    assert first.returncode == 0, first.stdout + first.stderr
    pool = Pool(pnc, SUBJECTS)
    lookup = await pool.admin("tools", "get", {"name": "demo.catalogue.lookup"})
    assert (lookup["state"], lookup["side_effect"]) == ("PUBLISHED", "read"), lookup
    book = await pool.admin("tools", "get", {"name": "demo.catalogue.book"})
    assert (book["state"], book["side_effect"]) == ("DRAFT", "write")
    again = aurora("apply", "-f", str(path), "--timeout", "20", "--json", CATALOGUE_AGENT=remote_agents.streaming)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["result"] == "unchanged", again.stdout


async def test_import_a2a_reads_the_card_and_lists_the_drafts(pool_stack: Stack, remote_agents: RemoteAgents) -> None:
    aurora = cli_runner(pool_stack.url)
    card = f"{remote_agents.streaming}/.well-known/agent-card.json"
    done = aurora("systems", "import-a2a", "helpdesk", "--card", card)
    assert done.returncode == 0, done.stderr
    assert f"agent Parts desk at {remote_agents.streaming}/a2a (streams)" in done.stdout
    assert "6 created" in done.stdout and "helpdesk.lookup" in done.stdout
    marked = aurora("tools", "mark", "helpdesk.lookup", "--side-effect", "read")
    assert marked.returncode == 0 and marked.stdout.strip().endswith(", read"), marked.stdout + marked.stderr
    shown = aurora("tools", "show", "helpdesk.lookup")
    assert "a2a skill 'lookup' of the remote agent" in shown.stdout, shown.stdout + shown.stderr
    refused = aurora("systems", "import-a2a", "helpdesk", "--card", "ftp://example.com")
    assert refused.returncode != 0 and "http:// or https://" in refused.stderr
