"""`aurora apply -f FILE.yml`, `aurora get KIND [ID]`, `aurora delete KIND ID`.

Every document of a file is checked first (kind, id and — for kinds with a model — every
field), so one bad document applies nothing; then each goes to its area's admin endpoint
(`<prefix>.admin.<area>.apply`), which answers created / updated / unchanged. Errors name the
file, the document's position and id, and the field.

Documents are applied in dependency order (`APPLY_ORDER`), across the files of a folder: a
service refuses a document naming one that does not exist yet (an agent's skills), and a
writer should not have to order a file for it. Within a kind, file order is kept.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli import a2afile, toolfile
from aurora_cli.output import EXIT_FAILURE, CliError, connected, print_json, run, settings_or_fail, stdout, table
from shared.config import yamldocs
from shared.config.settings import Settings
from shared.contracts.resource import ResourceError, parse_resource
from shared.nats.admin_service import AdminRequestError, admin_request
from shared.resources import APPLY, DELETE, GET, ResourceKind, kind_named, kind_of


def register(app: typer.Typer) -> None:
    app.command(name="apply")(apply)
    app.command(name="get")(get)
    app.command(name="delete")(delete)


# What may be applied, each after what it may name: systems and their imported tools, the skills
# agents name, the agents and pipelines that bindings, schedules and policies name. `Tool` is read
# with `aurora get` only (its lifecycle commands and OpenAPI imports change it).
APPLY_ORDER = ("System", toolfile.KIND.kind, a2afile.KIND.kind, "Skill", "Agent", "Pipeline", "ApprovalPolicy",
               "Binding", "Schedule")


@dataclass(frozen=True)
class Document:
    source: str  # file name
    index: int  # 1-based position in the file
    kind: ResourceKind
    id: str
    body: dict[str, Any]

    @property
    def where(self) -> str:
        return f"{self.source}: document {self.index} ({self.kind.kind} {self.id})"


class DocumentErrors(CliError):
    """Every problem found in a file, one per line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def read_yaml_documents(path: Path) -> list[tuple[int, Any]]:
    """(1-based index, document) for every non-empty YAML document of the file (`-`: stdin)."""
    name = str(path)
    try:
        text = sys.stdin.read() if name == "-" else path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"{name}: cannot read: {exc.strerror or exc}") from exc
    try:
        loaded = yamldocs.safe_load_all(text)
    except yaml.YAMLError as exc:
        raise CliError(f"{name}: not valid YAML: {exc}".replace("\n", " ")) from exc
    except RecursionError as exc:  # nesting that the bounded reader still let through
        raise CliError(f"{name}: not valid YAML: nested too deeply") from exc
    return [(index, doc) for index, doc in enumerate(loaded, start=1) if doc is not None]


def yaml_files(path: Path) -> list[Path]:
    """The file itself, or — for a folder — its `*.yml` / `*.yaml` files in name order."""
    if not path.is_dir():
        return [path]
    found = sorted(p for p in path.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
    if not found:
        raise CliError(f"{path}: a folder without .yml or .yaml files")
    return found


def in_dependency_order(documents: list[Document]) -> list[Document]:
    """`documents` in the order they can be applied (`APPLY_ORDER`); a stable sort, so documents
    of one kind keep their files' order."""
    return sorted(documents, key=lambda doc: APPLY_ORDER.index(doc.kind.kind))


def document_kind(value: object) -> ResourceKind:
    """The kind a document names, or a ResourceError listing the kinds `apply` takes."""
    if value == toolfile.KIND.kind:
        return toolfile.KIND
    if value == a2afile.KIND.kind:
        return a2afile.KIND
    if value in APPLY_ORDER:
        return kind_of(value)
    raise ResourceError([("kind", f"unknown kind {value!r}; apply takes: {', '.join(APPLY_ORDER)}")])


def load_documents(path: Path) -> list[Document]:
    """Check every document of a file (or of every YAML file of a folder, in name order); raise
    DocumentErrors listing every problem found. The documents come back in dependency order."""
    problems: list[str] = []
    documents: list[Document] = []
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    for file in yaml_files(path):
        _check_file(file, problems, documents, seen)
    if problems:
        raise DocumentErrors(problems)
    if not documents:
        raise CliError(f"{path}: no documents to apply")
    return in_dependency_order(documents)


def _check_file(path: Path, problems: list[str], documents: list[Document],
                seen: dict[tuple[str, str], tuple[str, int]]) -> None:
    source = str(path)
    for index, doc in read_yaml_documents(path):
        where = f"{source}: document {index}"
        if not isinstance(doc, dict):
            problems.append(f"{where}: expected a mapping with kind and id, found {type(doc).__name__}")
            continue
        try:
            kind = document_kind(doc.get("kind"))
        except ResourceError as exc:
            problems.append(f"{where}: {exc}")
            continue
        ident = doc.get(kind.id_field)
        if not isinstance(ident, str) or not ident:
            problems.append(f"{where} ({kind.kind}): field {kind.id_field}: required, a non-empty string")
            continue
        document = Document(source, index, kind, ident, doc)
        if kind.model is not None:
            try:
                parse_resource(kind.model, doc)
            except ResourceError as exc:
                problems.extend(f"{document.where}: field {field}: {reason}" for field, reason in exc.problems)
                continue
        if (kind.kind, ident) in seen:
            first_source, first_index = seen[kind.kind, ident]
            where_first = "" if first_source == source else f"{first_source}: "
            problems.append(f"{document.where}: the same {kind.kind} as {where_first}document {first_index}")
            continue
        seen[kind.kind, ident] = (source, index)
        documents.append(document)


def _exit_with(problems: list[str]) -> NoReturn:
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr, flush=True)
    raise typer.Exit(EXIT_FAILURE)


def _admin_failure(exc: Exception, area: str, verb: str) -> str:
    if isinstance(exc, AdminRequestError):
        return str(exc)
    if isinstance(exc, NoRespondersError):
        return f"nothing serves {area}.{verb} (is the service that owns {area} running?)"
    return f"no answer from {area}.{verb} ({type(exc).__name__})"


# --------------------------------------------------------------------------- apply


def apply(
    filename: Annotated[Path, typer.Option(
        "-f", "--filename", help="YAML file of documents, or a folder of them (`-`: stdin).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds to wait per document.")] = 5.0,
    wait: Annotated[float, typer.Option(
        "--wait", min=0, help="Seconds to wait for the services that own the documents to answer at all "
        "(a stack still starting, e.g. compose's demo-init); 0: do not wait.")] = 0.0,
) -> None:
    """Create or update resources (System, OpenApiImport, A2AImport, Skill, Agent, Pipeline, ApprovalPolicy,
    Binding, Schedule) idempotently, in that order whatever the files' order."""
    settings = settings_or_fail()
    try:
        documents = load_documents(filename)
    except DocumentErrors as exc:
        _exit_with(exc.problems)
    except CliError as exc:
        _exit_with([str(exc)])
    results = run(_apply_all(settings, documents, timeout, wait))
    if as_json:
        print_json(results)
    else:
        for result in results:
            name = f"{result['kind'].lower()}/{result['id']}"
            if "error" in result:
                print(f"error: {result['file']}: document {result['index']} ({result['kind']} "
                      f"{result['id']}): {result['error']}", file=sys.stderr, flush=True)
            else:
                version = f" (version {result['version']})" if "version" in result else ""
                stdout.print(f"{name} {result['result']}{version}", markup=False)
    if any("error" in result for result in results):
        raise typer.Exit(EXIT_FAILURE)


async def await_areas(nc: NATS, settings: Settings, areas: list[str], wait: float) -> None:
    """Until each area's service answers a `get` (any answer, even a refusal), at most `wait` s."""
    deadline = time.monotonic() + wait
    for area in dict.fromkeys(areas):
        while True:
            try:
                await admin_request(nc, settings.subjects, area, GET, {}, timeout=2)
                break
            except AdminRequestError:
                break
            except (NoRespondersError, NatsTimeoutError, TimeoutError):
                if time.monotonic() > deadline:
                    break  # the apply itself then says who did not answer
                await asyncio.sleep(0.5)


async def _apply_all(settings: Settings, documents: list[Document], timeout: float,
                     wait: float = 0.0) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    async with connected(settings.nats) as nc:
        if wait > 0:
            await await_areas(nc, settings, [doc.kind.area for doc in documents], wait)
        for doc in in_dependency_order(documents):
            entry: dict[str, Any] = {"file": doc.source, "index": doc.index, "kind": doc.kind.kind, "id": doc.id}
            if doc.kind is toolfile.KIND or doc.kind is a2afile.KIND:  # a reviewed tool file: import, review, publish
                openapi = doc.kind is toolfile.KIND
                try:
                    entry["result"] = await (
                        toolfile.apply_import(nc, settings.subjects, toolfile.parse(doc.body), Path(doc.source),
                                              timeout=max(timeout, 10.0)) if openapi else
                        a2afile.apply_import(nc, settings.subjects, a2afile.parse(doc.body), Path(doc.source),
                                             timeout=max(timeout, 20.0)))
                except toolfile.ToolFileError as exc:
                    entry["error"] = str(exc)
                except (AdminRequestError, NoRespondersError, NatsTimeoutError, TimeoutError) as exc:
                    entry["error"] = _admin_failure(exc, doc.kind.area, "import_openapi" if openapi else "import_a2a")
                results.append(entry)
                continue
            try:
                reply = await admin_request(nc, settings.subjects, doc.kind.area, APPLY,
                                            {"document": doc.body}, timeout=timeout)
            except (AdminRequestError, NoRespondersError, NatsTimeoutError, TimeoutError) as exc:
                entry["error"] = _admin_failure(exc, doc.kind.area, APPLY)
            else:
                entry["result"] = reply.get("result") if isinstance(reply, dict) else None
                entry["revision"] = reply.get("revision") if isinstance(reply, dict) else None
                if isinstance(reply, dict) and reply.get("version") is not None:
                    entry["version"] = reply["version"]  # a skill's version, kept by the gateway
            results.append(entry)
    return results


# --------------------------------------------------------------------------- get / delete


def get(
    kind: Annotated[str, typer.Argument(help="bindings, agents, pipelines, systems, skills, schedules or tools.")],
    ident: Annotated[str | None, typer.Argument(metavar="[ID]", help="One resource by id.")] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="table, json or yaml.")] = "table",
    as_json: Annotated[bool, typer.Option("--json", help="Same as -o json.")] = False,
) -> None:
    """Show saved resources; `-o yaml` prints documents `aurora apply` takes back."""
    settings = settings_or_fail()
    fmt = "json" if as_json else output
    if fmt not in ("table", "json", "yaml"):
        _exit_with([f"-o {output}: use table, json or yaml"])
    try:
        resource = kind_named(kind)
    except ResourceError as exc:
        _exit_with([str(exc)])
    body = {} if ident is None else {"id": ident}
    found = run(_request(settings, resource.area, GET, body))
    items: list[dict[str, Any]] = found["items"] if ident is None else [found]
    if fmt == "json":
        print_json(found)
    elif fmt == "yaml":
        sys.stdout.write(yaml.safe_dump_all(items, allow_unicode=True, sort_keys=False) if items else "")
    else:
        columns, rows = _table(resource, items)
        stdout.print(table(None, columns, rows))


def delete(
    kind: Annotated[str, typer.Argument(help="bindings, agents, pipelines, systems or skills.")],
    ident: Annotated[str, typer.Argument(metavar="ID")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Delete one saved resource."""
    settings = settings_or_fail()
    try:
        resource = kind_named(kind)
    except ResourceError as exc:
        _exit_with([str(exc)])
    result = run(_request(settings, resource.area, DELETE, {"id": ident}))
    if as_json:
        print_json(result)
    else:
        stdout.print(f"{resource.kind.lower()}/{ident} {result.get('result')}", markup=False)


async def _request(settings: Settings, area: str, verb: str, body: dict[str, Any]) -> Any:
    async with connected(settings.nats) as nc:
        try:
            return await admin_request(nc, settings.subjects, area, verb, body)
        except (AdminRequestError, NoRespondersError, NatsTimeoutError, TimeoutError) as exc:
            raise CliError(_admin_failure(exc, area, verb)) from exc


def _table(kind: ResourceKind, items: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    if kind.kind == "Binding":
        return (["ID", "PATTERN", "FILTERS", "TARGET", "PRIORITY", "ENABLED"], [
            [b.get("id"), b.get("event_pattern"), len(b.get("filters") or []),
             b.get("target_type") if b.get("target_type") == "discard"
             else f"{b.get('target_type')}/{b.get('target_id')}", b.get("priority"), b.get("enabled")]
            for b in items])
    if kind.kind == "Agent":
        return (["ID", "KIND", "EVENTS", "TOOLS", "ENABLED"], [
            [a.get("id"), a.get("agent_kind"), ", ".join(a.get("events") or []), len(a.get("tools") or []),
             a.get("enabled")] for a in items])
    if kind.kind == "Pipeline":
        return (["ID", "STAGES", "ENABLED", "DESCRIPTION"], [
            [p.get("id"), len(p.get("stages") or []), p.get("enabled"), p.get("description")] for p in items])
    if kind.kind == "System":
        return (["NAME", "TYPE", "ENABLED", "BASE_URL", "DESCRIPTION"], [
            [s.get("name"), s.get("type"), s.get("enabled"), s.get("base_url"), s.get("description")]
            for s in items])
    if kind.kind == "Skill":
        return (["ID", "VERSION", "UPDATED", "TOOLS", "TEXT"], [
            [s.get("id"), s.get("version"), s.get("updated_at"), ", ".join(s.get("tools") or []),
             " ".join(str(s.get("text") or "").split())[:60]] for s in items])
    if kind.kind == "Tool":
        return (["NAME", "STATE", "VERSION", "SIDE_EFFECT", "SYSTEM", "SOURCE"], [
            [t.get("name"), t.get("state"), t.get("version"), t.get("side_effect"), t.get("system"), t.get("source")]
            for t in items])
    return ([kind.id_field.upper()], [[item.get(kind.id_field)] for item in items])
