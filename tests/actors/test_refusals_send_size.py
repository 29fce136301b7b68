"""A send's whole stored size is capped (``MAX_SEND_BYTES``), not only each of its parts.

Only the joined text of a send was capped (``MAX_TEXT_BYTES``), and each control block's data
(``MAX_JSON_BYTES``), a media block's location and summary, an artifact's metadata each on
its own: a send of a hundred control blocks of 60 kB (6 MB) was written, held by its lane and
read back whole, and no gateway client could take its frame. Such a send is refused naming
``blocks`` before anything is written; a plain text send is not counted at all (its blocks
are its text)."""

from __future__ import annotations

import json

import pytest

from tidings.actors import MAX_JSON_BYTES, MAX_SEND_BYTES, MAX_TEXT_BYTES
from tidings.errors import ValidationError

from .conftest import refused_by_field, rows

_DATA = {"p": "x" * 60_000}


def _controls(count: int) -> list[dict]:
    return [{"type": "control", "action": "a", "data": _DATA} for _ in range(count)]


def _images(count: int, **fields) -> list[dict]:
    return [{"type": "image", "source": "chart.png", **fields} for _ in range(count)]


@pytest.mark.parametrize("send", [
    lambda ctx: ctx.output.send(_controls(100), history_text="h"),
    lambda ctx: ctx.output.send(["hi", *_controls(40)]),
    lambda ctx: ctx.output.send(_images(3, caption="c", summary="s" * 900_000),
                                history_text="h"),
    lambda ctx: ctx.output.send(_images(40, artifact_metadata=_DATA), history_text="h"),
    lambda ctx: ctx.output.send(
        _controls(34), history_text="h",  # 34 blocks fit; their metadata tips it over
        delivery_metadata={"m": "x" * (MAX_JSON_BYTES - 20)}),
    # A text within MAX_TEXT_BYTES (800 kB of UTF-8) beside a button: its block is counted
    # as written, each character escaped to six bytes (the README's example).
    lambda ctx: ctx.output.send(["\u00e9" * 400_000, {"type": "control", "action": "a"}]),
], ids=["controls", "text-and-controls", "summaries", "artifact-metadata", "metadata",
        "escaped-text-and-a-button"])
async def test_a_send_over_the_cap_is_refused_naming_blocks(rt, bound, send) -> None:
    session_id, route = bound
    error = await refused_by_field(rt, session_id, route, send, "blocks")
    assert "MAX_SEND_BYTES" in str(error)


async def test_a_send_at_the_cap_is_written_and_delivered(rt, bound, db_path) -> None:
    session_id, route = bound
    blocks = _controls(34)
    last = {"type": "control", "action": "a", "data": {"p": ""}}
    # As the pipeline writes them (ControlBlock.as_dict, json.dumps), with metadata "{}".
    room = MAX_SEND_BYTES - len("{}") - len(json.dumps([*blocks, last]))
    async with rt.open_turn(session_id) as ctx:
        last["data"]["p"] = "y" * (room + 1)
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send([*blocks, last], history_text="h")
        assert caught.value.field == "blocks"
        assert f"{MAX_SEND_BYTES + 1} bytes" in str(caught.value)
        last["data"]["p"] = "y" * room
        handle = await ctx.output.send([*blocks, last], history_text="h")
    assert await handle.wait() == "delivered"
    [(stored, metadata)] = rows(db_path, "SELECT blocks, metadata FROM outbox")
    assert len(stored) + len(metadata) == MAX_SEND_BYTES
    assert len(route.delivered[0].blocks) == 35


@pytest.mark.parametrize("text", ["\x01" * MAX_TEXT_BYTES, "\u00e9" * (MAX_TEXT_BYTES // 2),
                                  "x" * MAX_TEXT_BYTES])
async def test_a_plain_text_send_is_not_counted(rt, bound, text) -> None:
    # One text block is its text, capped already: escaped, its block's JSON is up to six times
    # MAX_TEXT_BYTES, and it is still taken (with metadata at its own cap too).
    session_id, route = bound
    metadata = {"m": "x" * (MAX_JSON_BYTES - 12)}
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text(text, delivery_metadata=metadata)
        notice = await ctx.output.notice(text)
    assert await handle.wait() == "delivered"
    assert await notice.wait() == "delivered"
    assert [o.text for o in route.delivered] == [text, text]
