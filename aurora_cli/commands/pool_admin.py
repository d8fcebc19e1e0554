"""What the commands that ask a service's admin API share: one admin request (to the gateway for
the tool pool's systems, tools, agents and approvals; the router's, mcp-edge's) with every
failure said in one line, and who the operator is."""

from __future__ import annotations

import getpass
from typing import Any

from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli.output import CliError, connected
from shared.config.settings import Settings
from shared.nats.admin_service import AdminRequestError, admin_request


class RefusedError(CliError):
    """The gateway answered with an error; `code` is its machine-readable reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def operator() -> str:
    """Who decides: the OS user running the CLI (recorded as `by` on approvals and lifecycle moves)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (some containers)
        return "operator"


async def admin_call(settings: Settings, area: str, verb: str, body: dict[str, Any] | None = None,
                     *, timeout: float = 5.0, service: str = "mcp-gateway") -> Any:
    """`<prefix>.admin.<area>.<verb>` on `service`; RefusedError when it says no, CliError
    when nobody answers."""
    subject = settings.subjects.admin(area, verb)
    async with connected(settings.nats) as nc:
        try:
            return await admin_request(nc, settings.subjects, area, verb, body or {}, timeout=timeout)
        except AdminRequestError as exc:
            raise RefusedError(exc.code, str(exc)) from exc
        except NoRespondersError as exc:
            raise CliError(f"no {service} is running (nobody answers {subject})") from exc
        except (NatsTimeoutError, TimeoutError) as exc:
            raise CliError(f"the {service} did not answer {subject} within {timeout:g}s") from exc
