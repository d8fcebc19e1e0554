"""The call ledger: what the gateway knows of every side-effecting call, by call id.

A write (or dangerous) call is written `executing` — the claim, create-if-absent or a
revision-checked update — before its executor may send it, and `done` with the result the
caller got before the reply goes out. A caller whose answer was lost asks again with the same
call id and learns (`recall`):

- nothing recorded: the gateway never sent it; it runs now, normally;
- another call under that id (another tool, run or task, or — both digests known — other
  arguments): `denied` / `call_id_reused`, nothing runs;
- `done`: the recorded result, and nothing runs again;
- `executing` at a gateway instance that is alive: `outcome_unknown` / `call_in_progress`, ask
  again later;
- `executing` at an instance that died (its heartbeat stopped, or the call is past its
  deadline): when the target deduplicates on the idempotency key (the call id), it is sent again
  under the same key — the target answers with the first result or runs it once; otherwise
  `outcome_unknown` / `call_in_doubt`, saying what to check. Nobody can know more.

Several gateway instances agree through the KV revisions: one claim wins, the others answer
from what it wrote. Reads are not recorded: asking again simply reads again. The rules (pure:
what a call asked again gets) are `ledger_rules`.

Each instance proves it is alive by a heartbeat in the same bucket (`gateways.<instance>`);
clocks of gateway hosts must agree within `stale_after` (a few seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeAlias

import msgspec
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.mcp_gateway.calls import classify
from services.mcp_gateway.calls.ledger_rules import LedgerEntry, answer_for, digest_of, judge, ledger_key
from shared.clock import now_iso
from shared.contracts.toolcall import SideEffect, ToolCallRequest, ToolCallResult
from shared.lifecycle import Lifecycle, cancel_task
from shared.observability.logs import get_logger
from shared.streak import FailureStreak

log = get_logger("aurora.mcp_gateway.ledger")

# After the call's own timeout, this long for the executor to give up and the `done` write.
DEADLINE_GRACE = 10.0


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True):
    at: float


Found: TypeAlias = "KeyValue.Entry | Exception | None"  # a call's entry as read; None: there is none


def heartbeat_key(instance: str) -> str:
    return f"gateways.{instance}"


_entry_decoder = msgspec.json.Decoder(LedgerEntry)
_heartbeat_decoder = msgspec.json.Decoder(Heartbeat)


class CallLedger(Lifecycle[None]):
    """The ledger of one gateway instance; `start()` begins its heartbeat, `stop()` ends it
    (then its unfinished calls — none after a graceful stop — count as abandoned at once)."""

    def __init__(self, kv: KeyValue, *, instance: str | None = None, heartbeat_seconds: float = 1.0,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__("the call ledger")
        self.kv = kv
        self.instance = instance or uuid.uuid4().hex
        self._every = heartbeat_seconds
        self.stale_after = 3 * heartbeat_seconds
        self._clock = clock

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        await self._beat()
        parts.push_async_callback(self._forget_heartbeat)
        parts.push_async_callback(cancel_task, asyncio.create_task(self._beat_forever(),
                                                                    name="gateway-ledger-heartbeat"))

    async def _forget_heartbeat(self) -> None:
        with contextlib.suppress(Exception):  # best effort: a stale heartbeat says the same soon
            await self.kv.delete(heartbeat_key(self.instance))

    async def _beat(self) -> None:
        await self.kv.put(heartbeat_key(self.instance), msgspec.json.encode(Heartbeat(at=self._clock())))

    async def _beat_forever(self) -> None:
        beating = FailureStreak(log, "ledger heartbeat", instance=self.instance)
        while True:
            await asyncio.sleep(self._every)
            try:
                await self._beat()
            except Exception as exc:  # KV briefly unavailable: the next beat tries again
                beating.failed(exc)
            else:
                beating.worked()

    async def alive(self, instance: str) -> bool:
        if not instance:  # released: nobody holds it
            return False
        if instance == self.instance:
            return self.started
        try:
            entry = await self.kv.get(heartbeat_key(instance))
        except KeyNotFoundError:
            return False
        if not entry.value:
            return False
        return self._clock() - _heartbeat_decoder.decode(entry.value).at < self.stale_after

    async def look_up(self, call_id: str) -> asyncio.Future[Found]:
        """Start reading the call's entry; returns once its request is queued. Only a read: the
        gateway starts it while it reads the run's record, before the call is judged, so a write
        call waits for one read, not two. Queued, not merely started: a request still to be sent
        by a task that has not run yet could follow the record's on the wire."""
        read = asyncio.ensure_future(self._read(ledger_key(call_id)))
        await asyncio.sleep(0)  # the read's task runs up to its request
        return read

    async def _read(self, key: str) -> Found:
        try:
            return await self.kv.get(key)
        except KeyNotFoundError:
            return None
        except Exception as exc:  # answered in `recall`: the call is not sent
            return exc

    async def recall(self, call_id: str, request: ToolCallRequest, *,
                     looked_up: Awaitable[Found] | None = None) -> ToolCallResult | Claim:
        """The answer to a call asked again, or the claim to run it under (`Claim.take`).
        `looked_up`: the read `look_up` started for this call id."""
        key = ledger_key(call_id)
        found = await (looked_up if looked_up is not None else self._read(key))
        if isinstance(found, Exception):
            return _ledger_unavailable(found)
        if found is None or not found.value:
            return Claim(self, key, call_id, request, revision=None)
        entry = _entry_decoder.decode(found.value)
        verdict = judge(entry, request, owner_alive=await self.alive(entry.owner), now=self._clock())
        if verdict == "resend":
            log.info("call sent again under its idempotency key", call_id=call_id, tool=entry.tool,
                     abandoned_by=entry.owner)
            return Claim(self, key, call_id, request, revision=found.revision)
        return answer_for(verdict, entry, call_id, request)

    def entry_for(self, request: ToolCallRequest, *, side_effect: SideEffect, deduplicates: bool, target: str,
               timeout: float) -> LedgerEntry:
        return LedgerEntry(state="executing", owner=self.instance, tool=request.tool,
                           run_id=request.context.run_id, task_id=request.context.task_id,
                           deduplicates=deduplicates, target=target, started_at=now_iso(),
                           deadline=self._clock() + timeout + DEADLINE_GRACE, arguments_digest=digest_of(request))


def _ledger_unavailable(exc: Exception) -> ToolCallResult:
    return classify.failed("unavailable", "ledger_unavailable",
                           f"the call ledger cannot be read or written ({type(exc).__name__}: {exc}); "
                           "nothing was sent, the call may be retried")


class Claim:
    """One call's place in the ledger: `take` before sending, `finish` after."""

    def __init__(self, ledger: CallLedger, key: str, call_id: str, request: ToolCallRequest, *,
                 revision: int | None) -> None:
        self._ledger = ledger
        self._key = key
        self.call_id = call_id
        self._request = request
        self._revision = revision  # None: create-if-absent; else the abandoned entry's revision
        self._taken: int | None = None
        self._entry: LedgerEntry | None = None
        self.answered: ToolCallResult | None = None  # `take` found the call claimed: the ledger's answer

    async def take(self, *, side_effect: SideEffect, deduplicates: bool, target: str,
                   timeout: float) -> ToolCallResult | None:
        """None: go ahead and send. A result: do not send, answer this (another claim won, or
        the ledger cannot be written). Reads are not recorded."""
        if side_effect == "read" or self._taken is not None:
            return None
        entry = self._ledger.entry_for(self._request, side_effect=side_effect, deduplicates=deduplicates,
                                    target=target, timeout=timeout)
        data = msgspec.json.encode(entry)
        kv = self._ledger.kv
        try:
            if self._revision is None:
                self._taken = await kv.create(self._key, data)
            else:
                self._taken = await kv.update(self._key, data, last=self._revision)
        except KeyWrongLastSequenceError:
            # Claimed first by another caller of the same call id (here or at another gateway): its
            # entry answers.
            recalled = await self._ledger.recall(self.call_id, self._request)
            if not isinstance(recalled, ToolCallResult):
                recalled = classify.failed("outcome_unknown", "call_in_progress",
                                           f"call {self.call_id} was claimed by another caller; ask again",
                                           side_effect=side_effect)
            self.answered = recalled
            return recalled
        except Exception as exc:
            return _ledger_unavailable(exc)
        self._entry = entry
        return None

    async def finish(self, result: ToolCallResult) -> None:
        """Record the result the caller is about to get. A failure is logged: the entry stays
        `executing`, and a call asked again is then in doubt (or sent again where that is safe).

        `unavailable` means nothing ran this time (the app's session was down, the system could
        not be reached): that is not an outcome to repeat to whoever asks again. A new claim is
        released (asked again, the call runs normally); a call sent again goes back to
        abandoned (asked again, it is sent again)."""
        if self._taken is None or self._entry is None:
            return
        kv = self._ledger.kv
        try:
            if result.status != "unavailable":
                done = msgspec.structs.replace(self._entry, state="done", result=result, finished_at=now_iso())
                await kv.update(self._key, msgspec.json.encode(done), last=self._taken)
            elif self._revision is None:
                await kv.delete(self._key, last=self._taken)
            else:
                abandoned = msgspec.structs.replace(self._entry, owner="", deadline=0.0)
                await kv.update(self._key, msgspec.json.encode(abandoned), last=self._taken)
        except Exception as exc:
            log.warning("a call's result could not be recorded in the ledger", call_id=self.call_id,
                        error=f"{type(exc).__name__}: {exc}")
