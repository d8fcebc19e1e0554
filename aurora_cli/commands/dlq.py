"""`aurora dlq list|show|replay|purge`: the dead letters in `AMP_DLQ`, and what to do with them.

Read straight from the stream with the operator's JetStream rights (no service answers for
it: the dead letters matter most when a service is down). `replay` sends a dead letter's
original bytes and headers back to the subject it came from; the body keeps its message id, so
the stages downstream recognise work already done (docs/deadletters.md). A dead-lettered run (a
run record) is not published: the router, the one writer of records, writes it again
(`router.replay_run`). A replayed dead letter is removed from `AMP_DLQ` unless `--keep`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.errors import NotFoundError

from aurora_cli.deadletters import (
    DeadLetter,
    Filter,
    parse_duration,
    read_dead_letter,
    replay_headers,
    replay_target,
    run_record_key,
)
from aurora_cli.output import (
    EXIT_USAGE,
    CliError,
    cli_errors,
    connected,
    fail,
    note,
    print_json,
    run,
    settings_or_fail,
    stdout,
    table,
)
from shared.config.settings import Settings
from shared.jetstream.streams import run_records_bucket
from shared.nats.admin_service import AdminRequestError, admin_request

app = typer.Typer(help="Dead letters: list, show, replay and purge what a stage gave up on.",
                  no_args_is_help=True)

StageOpt = Annotated[str | None, typer.Option("--stage", help="Only this stage's (event_bridge, router, "
                                                               "runner, mcp_gateway).")]
ReasonOpt = Annotated[str | None, typer.Option("--reason", help="Only those whose reason contains this "
                                                                "(case-insensitive).")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="Only those dead-lettered within this long "
                                                              "(10m, 1h, 2d).")]
OlderOpt = Annotated[str | None, typer.Option("--older-than", help="Only those dead-lettered at least this "
                                                                   "long ago.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _filter(stage: str | None, reason: str | None, since: str | None, older_than: str | None) -> Filter:
    with cli_errors():  # a bad duration is a usage error naming the option
        return Filter(stage=stage, reason=reason, since=parse_duration("--since", since),
                      older_than=parse_duration("--older-than", older_than))


@app.command("list")
def list_letters(stage: StageOpt = None, reason: ReasonOpt = None, since: SinceOpt = None,
                 older_than: OlderOpt = None,
                 limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many, newest.")] = 100,
                 json_output: JsonOpt = False) -> None:
    """Dead letters, oldest first: sequence, when, stage, consumer, deliveries, reason, origin."""
    chosen = _filter(stage, reason, since, older_than)
    settings = settings_or_fail()
    letters = run(_matching(settings, chosen))
    shown = letters[-limit:]
    if json_output:
        print_json({"count": len(letters), "dead_letters": [letter.summary() for letter in shown]})
        return
    rows = [[d.seq, d.at.isoformat(timespec="seconds") if d.at else "?", d.stage, d.consumer or "-",
             d.deliveries if d.deliveries is not None else "-", d.via, _short(d.reason), d.original_subject]
            for d in shown]
    stdout.print(table(f"dead letters ({len(shown)} of {len(letters)})",
                       ["seq", "at", "stage", "consumer", "deliveries", "via", "reason", "subject"], rows))


@app.command("show")
def show(seq: Annotated[int, typer.Argument(metavar="SEQ", help="The dead letter's sequence in AMP_DLQ.")],
         json_output: JsonOpt = False) -> None:
    """One dead letter: where it came from, why, the original's headers and its payload."""
    letter = run(_one(settings_or_fail(), seq))
    detail = letter.detail()
    if json_output:
        print_json(detail)
        return
    for key in ("seq", "stage", "reason", "at", "original_subject", "stream", "sequence", "deliveries",
                "consumer", "via"):
        if detail.get(key) is not None:
            stdout.print(f"{key}: {detail[key]}", markup=False)
    stdout.print("headers:" if letter.headers else "headers: none", markup=False)
    for name, value in letter.headers.items():
        stdout.print(f"  {name}: {value}", markup=False)
    payload: dict[str, Any] = detail["payload"]  # type: ignore[assignment]
    stdout.print("payload (base64):" if "base64" in payload else "payload:", markup=False)
    stdout.print(payload.get("text", payload.get("base64", "")), markup=False)


@app.command("replay")
def replay(seqs: Annotated[list[int] | None, typer.Argument(metavar="[SEQ]...", help="Dead letters to replay.")]
           = None, stage: StageOpt = None, reason: ReasonOpt = None, since: SinceOpt = None,
           older_than: OlderOpt = None,
           keep: Annotated[bool, typer.Option("--keep", help="Leave the dead letter in AMP_DLQ.")] = False,
           json_output: JsonOpt = False) -> None:
    """Send dead letters back to the subject they came from (named by SEQ, or every one the filters
    match), keeping their bytes and message ids; a run (a run record) is written again by the router
    and delivered to the runners again. Each replayed one is removed unless --keep."""
    chosen = _filter(stage, reason, since, older_than)
    if not seqs and chosen.empty:
        fail("name dead letters by SEQ or choose them with --stage/--reason/--since/--older-than", EXIT_USAGE)
    if seqs and not chosen.empty:
        fail("give SEQ or filters, not both", EXIT_USAGE)
    result = run(_replay(settings_or_fail(), seqs or [], chosen, keep=keep))
    if json_output:
        print_json(result)
        return
    for item in result["replayed"]:
        kept = " (kept in AMP_DLQ)" if keep else ""
        stdout.print(f"replayed {item['seq']} to {item['subject']} as {item['stream']} "
                     f"#{item['stored_seq'] or 'duplicate'}{kept}", markup=False)
    if not result["replayed"]:
        note("nothing to replay: no dead letter matches")


@app.command("purge")
def purge(stage: StageOpt = None, reason: ReasonOpt = None, since: SinceOpt = None, older_than: OlderOpt = None,
          yes: Annotated[bool, typer.Option("--yes", help="Really delete them.")] = False,
          json_output: JsonOpt = False) -> None:
    """Delete the dead letters the filters match (every one without filters); needs --yes."""
    chosen = _filter(stage, reason, since, older_than)
    settings = settings_or_fail()
    result = run(_purge(settings, chosen, yes=yes))
    if json_output:
        print_json(result)
        return
    if yes:
        stdout.print(f"purged {result['purged']} dead letter(s)", markup=False)


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- NATS side


async def _scan(nc: NATS, settings: Settings, chosen: Filter) -> list[DeadLetter]:
    """Every dead letter the filter matches, oldest first (one message get each: an operator's
    tool, and the DLQ is small when the platform is healthy)."""
    js = nc.jetstream()
    subjects = settings.subjects
    stream = subjects.stream("DLQ")
    subject = subjects.dlq(chosen.stage) if chosen.stage else subjects.dlq_all
    now = datetime.now(UTC)
    found: list[DeadLetter] = []
    seq = 1
    while True:
        try:
            raw = await js.get_msg(stream, seq, subject=subject, next=True)
        except NotFoundError:
            return found
        letter = read_dead_letter(int(raw.seq or seq), str(raw.subject), raw.headers, raw.data, raw.time)
        if chosen.matches(letter, now):
            found.append(letter)
        seq = letter.seq + 1


async def _matching(settings: Settings, chosen: Filter) -> list[DeadLetter]:
    async with connected(settings.nats) as nc:
        return await _scan(nc, settings, chosen)


async def _get(nc: NATS, settings: Settings, seq: int) -> DeadLetter:
    stream = settings.subjects.stream("DLQ")
    try:
        raw = await nc.jetstream().get_msg(stream, seq)
    except NotFoundError:
        raise CliError(f"no dead letter {seq} in {stream} (replayed, purged, or never there: "
                       "`aurora dlq list`)") from None
    return read_dead_letter(seq, str(raw.subject), raw.headers, raw.data, raw.time)


async def _one(settings: Settings, seq: int) -> DeadLetter:
    async with connected(settings.nats) as nc:
        return await _get(nc, settings, seq)


async def _replay(settings: Settings, seqs: list[int], chosen: Filter, *, keep: bool) -> dict[str, Any]:
    stream = settings.subjects.stream("DLQ")
    records = run_records_bucket(settings.subjects).name
    async with connected(settings.nats) as nc:
        js = nc.jetstream()
        letters = [await _get(nc, settings, seq) for seq in seqs] if seqs else await _scan(nc, settings, chosen)
        # Every target checked before anything is replayed: a run record goes to the router.
        targets = [(letter, key, None if key else replay_target(letter, settings.subjects.prefix))
                   for letter in letters for key in [run_record_key(letter, records)]]
        replayed = []
        for letter, key, subject in targets:
            if key is not None:
                answer = await _replay_run(nc, settings, letter, key)
                item = {"subject": letter.original_subject, "stream": answer["stream"],
                        "stored_seq": answer["revision"], "duplicate": False, "run_id": answer["run_id"]}
            else:
                assert subject is not None
                ack = await js.publish(subject, letter.data, headers=replay_headers(letter, stream))
                item = {"subject": subject, "stream": ack.stream, "stored_seq": None if ack.duplicate else ack.seq,
                        "duplicate": bool(ack.duplicate)}
            if not keep:
                await js.delete_msg(stream, letter.seq)
            replayed.append({"seq": letter.seq, **item, "kept": keep})
    return {"replayed": replayed}


async def _replay_run(nc: NATS, settings: Settings, letter: DeadLetter, key: str) -> dict[str, Any]:
    """Ask the router to write the run's record again (a new revision the runners' durable delivers)."""
    subject = settings.subjects.admin("router", "replay_run")
    try:
        answer: dict[str, Any] = await admin_request(nc, settings.subjects, "router", "replay_run", {"key": key},
                                                     timeout=10.0)
    except AdminRequestError as exc:
        raise CliError(f"dead letter {letter.seq} not replayed: {exc}") from exc
    except NoRespondersError as exc:
        raise CliError(f"dead letter {letter.seq} is a run: the router replays it, and no router is running "
                       f"(nobody answers {subject})") from exc
    except (NatsTimeoutError, TimeoutError) as exc:
        raise CliError(f"dead letter {letter.seq}: the router did not answer {subject} within 10s") from exc
    return answer


async def _purge(settings: Settings, chosen: Filter, *, yes: bool) -> dict[str, Any]:
    stream = settings.subjects.stream("DLQ")
    async with connected(settings.nats) as nc:
        letters = await _scan(nc, settings, chosen)
        if not yes:
            raise CliError(f"{len(letters)} dead letter(s) match; add --yes to delete them "
                           "(`aurora dlq list` with the same filters shows which)", exit_code=EXIT_USAGE)
        js = nc.jetstream()
        for letter in letters:
            await js.delete_msg(stream, letter.seq)
    return {"purged": len(letters), "seqs": [letter.seq for letter in letters]}
