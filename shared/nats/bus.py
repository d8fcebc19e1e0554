"""Connecting to NATS the same way in every process: env credentials, reconnect forever."""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING, Any
from urllib.parse import ParseResult

import nats.errors
import nats.js.errors
from nats.aio.client import NO_RESPONDERS_STATUS
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.transport import TcpTransport
from nats.js.api import Header

from shared.config.settings import NatsSettings
from shared.nats.headers import parse_header_lines
from shared.nats.turn_client import TurnClient
from shared.observability.logs import get_logger
from shared.streak import FailureStreak

if TYPE_CHECKING:  # the guard and the refusals watch use the connection; their types only are needed here
    from shared.nats.refusals import PublishRefusals
    from shared.nats.request_guard import RefusalSink

log = get_logger("aurora.bus")
_SERVER_PING = b"PING\r\n"
_PONG = b"PONG\r\n"


class Connection(TurnClient):
    """nats-py's client (its publishes and requests as shared/nats/turn_client.py makes them), with
    what Aurora keeps per connection (never per process: services built in one process, as tests
    build them, each keep their own):

    - `refusal_sink`: where the stream deliveries its subscriptions refuse are reported
      (shared/nats/request_guard.py); the service's refusal audit, set by its composition root
      (shared/service.py), so each refusal is audited as the service whose connection heard it.
    - `publish_refusals`: the publishes nats-server refused it (shared/nats/refusals.py).
    - `closing`: its own process is closing it: nats-py calls `disconnected_cb` on every close, and
      a service's own stop is no warning (it was one line in every service at every stop).

    Its header parser is shared/nats/headers.py's.
    """

    # nats-py's header parser, without a generator over each name's characters (headers.py).
    _parse_header_lines = staticmethod(parse_header_lines)

    def __init__(self) -> None:
        super().__init__()
        self.refusal_sink: RefusalSink | None = None
        self.publish_refusals: PublishRefusals | None = None
        self.closing = False


def tls_context(settings: NatsSettings) -> ssl.SSLContext | None:
    """A client context that trusts only the CA of NATS_TLS_CA (and checks the host name); None
    without one. Given a context, nats-py upgrades to TLS when the server asks for it."""
    if settings.tls_ca is None:
        return None
    return ssl.create_default_context(cafile=str(settings.tls_ca))


class _ReplacingTcpTransport(TcpTransport):
    """nats-py's TCP transport, closing the connection it had before it opens the next one, and
    answering a server's PING that comes before the handshake's PONG.

    nats-py reconnects on one transport object. When a server takes the TCP connection but never
    sends its INFO (a node cut off behind a dead link or a firewall, a node half-way down), the
    attempt times out, and nats-py's next `connect` drops the socket without closing it. That
    leaves it to the garbage collector (`ResourceWarning: unclosed StreamWriter`, an error in a
    test run), and a socket still held by the attempt's exception stays open until then.

    nats-server pings a new client two seconds after it connected. When checking the CONNECT takes
    longer (a password's bcrypt hash on a loaded machine: 2.4 s, seen on a two-CPU machine running
    the test suite), that PING comes before the PONG nats-py's handshake waits for: nats-py reads
    it as the answer, returns from `connect` still connecting, and never sends anything (every
    JetStream request of the service timed out until it gave up). The handshake's lines are read
    here, so a PING among them is answered and passed over.
    """

    async def connect(self, uri: ParseResult, buffer_size: int, connect_timeout: int) -> None:
        for writer in (self._io_writer, self._bare_io_writer):  # TLS on top, and the socket below
            if writer is not None and not writer.transport.is_closing():
                writer.transport.abort()
        await super().connect(uri, buffer_size, connect_timeout)

    async def readline(self) -> bytes:
        """A line of the handshake (nats-py reads the rest of a connection by `read`); a server's
        PING is answered at once and the next line read."""
        line: bytes = await super().readline()  # type: ignore[no-untyped-call]  # nats-py is untyped here
        while line == _SERVER_PING:
            self.write(_PONG)  # type: ignore[no-untyped-call]
            await self.drain()  # type: ignore[no-untyped-call]
            line = await super().readline()  # type: ignore[no-untyped-call]
        return line

    def __bool__(self) -> bool:
        return True  # made: nats-py makes a transport of its own only when a client has none


async def open_nats(**options: Any) -> Connection:
    """`nats.connect(**options)` on a transport that closes each connection it replaces."""
    client = Connection()
    servers = options.get("servers", [])
    urls = [servers] if isinstance(servers, str) else list(servers)
    if not any(url.startswith(("ws://", "wss://")) for url in urls):  # a websocket keeps nats-py's own
        client._transport = _ReplacingTcpTransport()  # type: ignore[no-untyped-call]  # nats-py is untyped here
    await client.connect(**options)
    return client


async def connect(settings: NatsSettings, *, name: str, connect_timeout: float = 5.0) -> Connection:
    """Connect with credentials from the settings; once connected, reconnect forever.

    The first connection is retried too (a service may start before nats-server is ready),
    so `docker compose up` and `make dev` need no start-up ordering beyond a health check.
    """

    client: Connection | None = None
    # While nats-server is away every reconnect attempt (one a second) fails, refused or timed out
    # before the server's INFO (nats-py is then `connecting`): said as a streak, not a warning
    # each, whose beginning is the disconnect's own warning (it says why the connection ended).
    reconnecting = FailureStreak(log, "nats reconnect", quiet_start=True)
    ended_by: str | None = None

    async def on_error(exc: Exception) -> None:
        nonlocal ended_by
        if client is not None and (client.is_reconnecting or client.is_connecting):
            reconnecting.failed(exc)
        elif isinstance(exc, nats.errors.StaleConnectionError):  # the disconnect follows at once
            ended_by = str(exc)
        else:
            log.warning("nats error", error=str(exc))

    async def on_disconnected() -> None:
        nonlocal ended_by
        why = {"error": ended_by} if ended_by else {}
        ended_by = None
        if client is not None and client.closing:
            log.info("nats connection closed", extra={"fields": why})
        else:
            log.warning("nats disconnected", extra={"fields": why})

    async def on_reconnected() -> None:
        log.info("nats reconnected", failed_attempts=reconnecting.failures)
        reconnecting.forget()

    options: dict[str, object] = {
        "servers": settings.servers,
        "name": name,
        "connect_timeout": connect_timeout,
        "allow_reconnect": True,
        "max_reconnect_attempts": -1,
        # Stopping drains every subscription; after a reconnect a subscription can wait for
        # messages that will never come, so the drain is bounded (the stop then closes).
        "drain_timeout": 5,
        "reconnect_time_wait": 1.0,
        "inbox_prefix": settings.inbox_prefix,
        "error_cb": on_error,
        "disconnected_cb": on_disconnected,
        "reconnected_cb": on_reconnected,
    }
    options.update(credential_options(settings))
    delay = 0.2
    while True:
        try:
            client = await open_nats(**options)
            return client
        except (OSError, nats.errors.NoServersError, TimeoutError) as exc:
            log.warning("nats not reachable yet; retrying", servers=settings.servers, error=str(exc))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)


async def close_connection(nc: NATS) -> None:
    """A process's own end of its connection: drained when connected (what was received is
    handled, what was published is sent), closed otherwise; logged as closed, not disconnected."""
    if isinstance(nc, Connection):
        nc.closing = True
    if nc.is_connected:
        await nc.drain()
    else:
        await nc.close()


def credential_options(settings: NatsSettings) -> dict[str, Any]:
    """The `nats.connect` options that say who this process is: TLS, a creds file or a password."""
    options: dict[str, Any] = {}
    context = tls_context(settings)
    if context is not None:
        options["tls"] = context
    if settings.creds is not None:
        options["user_credentials"] = str(settings.creds)
    if settings.user is not None:
        options["user"] = settings.user
        options["password"] = settings.password
    return options


# NATS or a stream being away: a connection lost or closing, a request nobody answered in time or
# at all, and JetStream's 503 (no stream leader yet, or no room to store). A fault of the moment,
# which the same work meets no more once NATS is back; not a fault of that work.
_AWAY = (nats.errors.TimeoutError, nats.errors.NoRespondersError, nats.errors.ConnectionClosedError,
         nats.errors.ConnectionReconnectingError, nats.errors.OutboundBufferLimitError,
         nats.errors.StaleConnectionError, nats.js.errors.NoStreamResponseError,
         nats.js.errors.ServiceUnavailableError)


def nats_away(error: BaseException) -> bool:
    """Whether `error` says NATS or a stream is away (see `_AWAY`), not that the work was wrong."""
    unavailable = isinstance(error, nats.js.errors.APIError) and getattr(error, "code", None) == 503
    return unavailable or isinstance(error, _AWAY)


def is_jetstream_delivery(reply: str | None) -> bool:
    """A message JetStream delivered from a stream (its reply subject is an ack subject).

    Request handlers and relays ignore these: a push consumer can be pointed at any subject
    (nats-server does not check its deliver subject against its creator's permissions), so a
    stored document replayed into an endpoint must never count as a request.
    """
    return bool(reply) and reply.startswith("$JS.ACK.")  # type: ignore[union-attr]


# The app-supervisor's answer, on a call's reply subject, to a gateway's call it did not write to
# the app because the call's session did not begin with this process of the app: nothing ran.
# Its value says why (docs/design.md, "A call of a session the app never began is not written").
NOT_WRITTEN_HEADER = "Aurora-Not-Written"


def unheard_token(status: Msg) -> str | None:
    """For a message published with the reply subject `<inbox>.<token>`: the token, when
    `status` is nats-server's 503 on that subject (the message reached no subscriber) or the
    app-supervisor's `NOT_WRITTEN_HEADER`, else None. The relay uses it both ways
    (docs/design.md, "A relayed call that reached nobody is not sent")."""
    headers = status.headers or {}
    if headers.get(Header.STATUS) != NO_RESPONDERS_STATUS and NOT_WRITTEN_HEADER not in headers:
        return None
    return status.subject.rsplit(".", 1)[-1]


# A copy of a request the gateway sent on an app's relay because no answer came: the header's
# value is when the first was sent (epoch seconds). Copies are sent for `RESEND_WINDOW` seconds
# after it (docs/design.md, "A call or an answer lost in flight is sent again").
RESEND_HEADER = "Aurora-Resend"
RESEND_WINDOW = 60.0


def resend_of(headers: dict[str, str] | None) -> float | None:
    """For a message on an app's relay: when the first of its copies was sent, if it is a copy
    (a malformed stamp counts as long ago: such a copy is refused, never written twice)."""
    stamp = headers.get(RESEND_HEADER) if headers else None
    if stamp is None:
        return None
    try:
        return float(stamp)
    except ValueError:
        return 0.0


# An app's notification the supervisor sends again until the gateway confirms its signal stored:
# the value is the line's token. The gateway's confirmation is an empty message on the app's
# `…c2s` with the same header (docs/design.md, "An app's event is confirmed once stored").
RECEIPT_HEADER = "Aurora-Receipt"
