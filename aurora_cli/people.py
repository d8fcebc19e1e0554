"""People as nats-server users: their generated permissions, the file that keeps their hashes,
and the server config they go into.

- `<creds>/people.json` (0600): name → roles, state and the bcrypt hash of their password (never
  the password); `<creds>/users/<name>.env` (0600): the person's own credentials, written once.
- `render_auth_config()` copies deploy/nats-auth.conf with one user entry per active person at
  its `# @people` line; `aurora dev` runs nats-server on that copy (`<data-dir>/nats-auth.conf`)
  and `aurora users` rewrites it and asks the server to reload (SIGHUP to the pid `aurora dev`
  wrote), so a person added or disabled takes effect without a restart.

A person may publish admin requests only on `<p>.admin.<area>.<verb>.u.<name>` and only for the
operations of their roles (`shared.contracts.people.ROLE_OPERATIONS`); the serving services read
the name off the subject and check the roles again in the users registry.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import bcrypt

from aurora_cli.creds import BCRYPT_COST, CredentialsError, new_password, write_private
from shared.contracts.people import PERSON_TOKEN, check_name, check_roles, operations_of

PEOPLE_FILE = "people.json"
USERS_DIR = "users"
MARKER = "# @people"
PID_FILE = "nats-server.pid"
PREFIX = "amp"

STREAM = PREFIX.upper()
# What every person reads through the JetStream API itself: the state of every stream and consumer
# (`aurora streams`, `aurora health`: counts, never messages), and the messages of what the CLI and
# the console show by reading a stream directly: the events (`aurora events`, the console's
# backlog), the dead letters (`aurora dlq list|show`), the apps' health (`aurora apps`) and the
# tasks (`aurora tasks list|show`). Everything else a person views comes through a service's admin
# endpoint, which checks their roles. No creates, updates, deletes, purges or acks: read-only.
VIEWED_STREAMS = (f"{STREAM}_EVENTS", f"{STREAM}_DLQ", f"KV_{STREAM}_APPS", f"KV_{STREAM}_TASKS")
_JS_READ = ("$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.STREAM.INFO.>",
            "$JS.API.CONSUMER.NAMES.>", "$JS.API.CONSUMER.LIST.>", "$JS.API.CONSUMER.INFO.>",
            *(f"$JS.API.STREAM.MSG.GET.{s}" for s in VIEWED_STREAMS),
            *(f"$JS.API.DIRECT.GET.{s}" for s in VIEWED_STREAMS),
            *(f"$JS.API.DIRECT.GET.{s}.>" for s in VIEWED_STREAMS))
# Read by the services that keep them, and by no person, not even an admin with the whole JetStream
# API: the call ledger holds tool results (the gateway's), the edge tokens and sessions say who may
# call an agent from outside (mcp-edge's). `aurora tokens` goes through mcp-edge's endpoints.
PRIVATE_STREAMS = (f"KV_{STREAM}_CALL_LEDGER", f"KV_{STREAM}_EDGE_TOKENS", f"KV_{STREAM}_EDGE_SESSIONS")
_PRIVATE_READS = tuple(subject for s in PRIVATE_STREAMS for subject in (
    f"$JS.API.STREAM.MSG.GET.{s}", f"$JS.API.DIRECT.GET.{s}", f"$JS.API.DIRECT.GET.{s}.>",
    f"$JS.API.STREAM.INFO.{s}",  # with a subjects filter it lists the keys: call, token and session ids
    f"$JS.API.CONSUMER.CREATE.{s}", f"$JS.API.CONSUMER.CREATE.{s}.>", f"$JS.API.CONSUMER.DURABLE.CREATE.{s}.>",
    f"$JS.API.STREAM.SNAPSHOT.{s}", f"$JS.API.STREAM.UPDATE.{s}"))  # an update could add a republish
# The installation's streams and users are the admin's (as the `operator` identity's today).
_ADMIN_EXTRA = ("$JS.API.>", "$JS.ACK.>", "$JS.FC.>", "$SRV.>", f"{PREFIX}.sig.>", f"{PREFIX}.evt.>",
                f"{PREFIX}.run.>")
_OPERATOR_EXTRA = (f"{PREFIX}.sig.*.native_event",)  # `aurora events emit`
# Never a person's, whatever their roles: MCP, the platform services' own events, the plain admin
# subjects (whose sender the services cannot tell), nor a bucket's write, nor the private buckets.
_DENY = (f"{PREFIX}.mcp.>", f"{PREFIX}.sig.aurora_gateway.>", f"{PREFIX}.sig.aurora_runner.>",
         f"{PREFIX}.evt.aurora_gateway.>", f"{PREFIX}.evt.aurora_runner.>", f"{PREFIX}.tool.call",
         "$KV.>", *_PRIVATE_READS)


@dataclass(frozen=True)
class Person:
    name: str
    roles: tuple[str, ...]
    password_hash: str
    state: str = "active"


def publish_allow(name: str, roles: Iterable[str]) -> list[str]:
    roles = tuple(roles)
    subjects = [f"{PREFIX}.admin.{area}.{verb}.{PERSON_TOKEN}.{name}" for area, verb in operations_of(roles)]
    subjects += list(_JS_READ)
    if "operator" in roles:
        subjects += list(_OPERATOR_EXTRA)
    if "admin" in roles:
        subjects += list(_ADMIN_EXTRA)
    return subjects


def permissions(name: str, roles: Iterable[str]) -> dict[str, object]:
    return {
        "publish": {"allow": publish_allow(name, roles), "deny": list(_DENY)},
        # Its own inbox only (the CLI's replies come there), and the live events to watch.
        "subscribe": {"allow": [f"_INBOX_{name}.>", f"{PREFIX}.evt.>"], "deny": [f"{PREFIX}.mcp.>", "amp.tool.call"]},
    }


def user_entry(person: Person) -> str:
    """One `users` entry (JSON is valid nats-server config; the hash is a quoted string)."""
    entry = {"user": person.name, "password": person.password_hash,
             "permissions": permissions(person.name, person.roles)}
    return "    " + json.dumps(entry, separators=(", ", ": "))


def render_auth_config(template: str, people: Iterable[Person]) -> str:
    if MARKER not in template:
        raise CredentialsError(f"the auth config has no {MARKER!r} line inside its users list to put people at")
    lines = [user_entry(p) for p in sorted(people, key=lambda p: p.name) if p.state == "active"]
    head, _, tail = template.rpartition(MARKER)  # the last one: the header comments name it too
    start = head.rfind("\n") + 1
    return head[:start] + "\n".join([*lines, head[start:] + MARKER]) + tail


class PeopleStore:
    """`<creds>/people.json` and `<creds>/users/`: what nats-server needs to know of people."""

    def __init__(self, creds_dir: Path) -> None:
        self.creds_dir = creds_dir
        self.file = creds_dir / PEOPLE_FILE

    def load(self) -> dict[str, Person]:
        if not self.file.exists():
            return {}
        raw = json.loads(self.file.read_text(encoding="utf-8"))
        return {name: Person(name=name, roles=tuple(v["roles"]), password_hash=v["hash"], state=v["state"])
                for name, v in raw.items()}

    def save(self, people: dict[str, Person]) -> None:
        self.creds_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.creds_dir, 0o700)
        data = {p.name: {"roles": list(p.roles), "hash": p.password_hash, "state": p.state}
                for p in sorted(people.values(), key=lambda p: p.name)}
        write_private(self.file, json.dumps(data, indent=2) + "\n")

    def credentials_file(self, name: str) -> Path:
        return self.creds_dir / USERS_DIR / f"{name}.env"

    def issue(self, name: str, roles: Iterable[str], *, cost: int = BCRYPT_COST) -> tuple[Path, str]:
        """A new password for `name` (their file rewritten), its hash kept; (file, password)."""
        check_name(name)
        people = self.load()
        password = new_password()
        digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(cost)).decode()
        people[name] = Person(name=name, roles=check_roles(list(roles)), password_hash=digest)
        folder = self.creds_dir / USERS_DIR
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        path = self.credentials_file(name)
        write_private(path, f"NATS_USER={name}\nNATS_PASSWORD={password}\n")
        self.save(people)
        return path, password

    def ensure(self, name: str, roles: Iterable[str]) -> bool:
        """Issue `name` once (their file kept if it is there); True when issued now."""
        if name in self.load() and self.credentials_file(name).exists():
            return False
        self.issue(name, roles)
        return True

    def disable(self, name: str) -> bool:
        people = self.load()
        if name not in people:
            return False
        people[name] = Person(name=name, roles=people[name].roles, password_hash=people[name].password_hash,
                              state="disabled")
        self.save(people)
        self.credentials_file(name).unlink(missing_ok=True)
        return True


def write_auth_config(template: Path, target: Path, store: PeopleStore) -> Path:
    target.write_text(render_auth_config(template.read_text(encoding="utf-8"), store.load().values()),
                      encoding="utf-8")
    return target


def reload_server(pid_file: Path) -> int | None:
    """Ask the nats-server `aurora dev` started to reload its config; its pid, or None when none runs."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if b"nats-server" not in cmdline:  # a stale pid file: that number is someone else's now
        return None
    os.kill(pid, signal.SIGHUP)
    return pid
