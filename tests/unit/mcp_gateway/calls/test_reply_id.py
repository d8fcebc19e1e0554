"""A tool call's reply id: a random version-4 UUID, different in every process."""

from __future__ import annotations

import os
import uuid

from services.mcp_gateway.calls.replies import reply_id


def test_a_reply_id_is_a_version_4_uuid_written_as_uuid_writes_it() -> None:
    for _ in range(2_000):
        text = reply_id()
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122, text
        assert str(parsed) == text


def test_reply_ids_do_not_repeat_and_use_every_random_digit() -> None:
    ids = [reply_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for position in range(36):  # apart from the dashes, the version and the variant, each digit varies
        seen = {text[position] for text in ids}
        if position in (8, 13, 18, 23):
            assert seen == {"-"}
        elif position == 14:
            assert seen == {"4"}
        elif position == 19:
            assert seen == set("89ab")
        else:
            assert len(seen) == 16, position


def test_a_forked_process_draws_other_ids_than_its_parent() -> None:
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: its next ids, to the parent
        os.close(read)
        os.write(write, " ".join(reply_id() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    parents = {reply_id() for _ in range(3)}
    with os.fdopen(read) as pipe:
        childs = set(pipe.read().split())
    os.waitpid(child, 0)
    assert len(childs) == 3 and not childs & parents
