"""A command's direct answer (a ``notice`` frame, no session) names the message it answers
and is owed to a resend of that id until the client acks it by ``message_ids``.

A client that acked it gets nothing more on a resend; one that read it and never acked (the
ack lost with its connection, or a client older than the notice ack) gets it again, once per
resend of that id, with the same ``message_id`` (a client tells the repeat so), and never
with its later messages.
"""

from __future__ import annotations

import itertools
from typing import Any

import trio

CLEARED = "Cleared. Your next message starts a new session."
_probes = itertools.count()


def _accepted(message_id: str) -> Any:
    return lambda f: f["type"] == "accepted" and f["id"] == message_id


def _status(frame: dict[str, Any]) -> bool:
    return str(frame.get("text")).startswith("Session:")


async def _cleared_twice(client: Any, *, ack: bool) -> list[dict[str, Any]]:
    """``/clear`` (m1, in the session) then ``/clear`` (m2, no session: a direct answer),
    then a ``/status`` probe answered (the frames before it were handled)."""
    await client.message("/clear", message_id="m1")
    frames = await client.receive_until(_accepted("m1"), ack=ack)
    await client.message("/clear", message_id="m2")
    frames += await client.receive_until(_accepted("m2"), ack=ack)
    await client.message("/status", message_id="probe")
    return frames + await client.receive_until(_status, ack=ack)


async def _resend(client: Any, message_id: str) -> list[dict[str, Any]]:
    """Resend ``/clear`` as *message_id*, then probe with ``/status``: the frames."""
    await client.message("/clear", message_id=message_id)
    frames = await client.receive_until(_accepted(message_id), ack=False)
    assert frames[-1]["duplicate"] is True, frames
    await client.message("/status", message_id=f"probe-{next(_probes)}")
    return frames + await client.receive_until(_status, ack=False)


def _notices(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``/clear`` answers among *frames* (a ``/status`` with no session is a notice
    too)."""
    return [f for f in frames if f["type"] == "notice" and f.get("command") == "clear"]


async def test_a_direct_notice_names_the_message_it_answers(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        with trio.fail_after(10):
            frames = await _cleared_twice(client, ack=True)
    assert _notices(frames)[0] == {"type": "notice", "text": CLEARED, "command": "clear",
                                   "message_id": "m2"}


async def test_an_acked_notice_is_not_sent_again_to_a_resend(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as client:
                first = await _cleared_twice(client, ack=True)  # acks m2's notice
            async with connect(url, "alpha") as client:
                again = await _resend(client, "m2")
    assert [f.get("text") for f in _notices(first)] == [CLEARED]
    assert not [f for f in first + again if f["type"] == "error"], first + again
    assert _notices(again) == []


async def test_a_notice_read_but_never_acked_comes_once_per_resend_only(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as client:  # reads it, its ack lost
                first = await _cleared_twice(client, ack=False)
                for n in range(3):  # later messages bring nothing of it
                    await client.message("/status", message_id=f"later{n}")
                    first += await client.receive_until(_status, ack=False)
            async with connect(url, "alpha") as client:
                again = await _resend(client, "m2")
                twice = await _resend(client, "m2")
                await client.ack_notices("m2")
                after_ack = await _resend(client, "m2")
    assert [f["text"] for f in _notices(first)] == [CLEARED]
    expected = [{"type": "notice", "text": CLEARED, "command": "clear", "message_id": "m2"}]
    assert _notices(again) == expected
    assert _notices(twice) == expected
    assert _notices(after_ack) == []


async def test_a_notice_is_acked_by_any_device_of_the_conversation(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as phone, connect(url, "alpha") as laptop:
                await _cleared_twice(phone, ack=False)
                await laptop.receive_until(lambda f: f.get("text") == CLEARED
                                           and f["type"] == "notice", ack=False)
                await laptop.ack_notices("m2", "never-sent")  # an unknown id: no error
                await laptop.message("/status", message_id="probe-laptop")
                laptop_frames = await laptop.receive_until(_status, ack=False)
                again = await _resend(phone, "m2")
    assert not [f for f in laptop_frames if f["type"] == "error"], laptop_frames
    assert _notices(again) == []


async def test_an_ack_of_message_ids_is_checked_naming_the_field(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        with trio.fail_after(10):
            errors = []
            for frame in ({"type": "ack", "message_ids": []},
                          {"type": "ack", "message_ids": ["ok", 7]},
                          {"type": "ack", "message_ids": ["x" * 201]},
                          {"type": "ack", "message_ids": ["a"], "up_to_seq": 1}):
                await client.send(frame)
                [error] = await client.receive_until(lambda f: f["type"] == "error")
                errors.append((error["code"], error.get("field")))
    assert errors == [("bad_field", "message_ids"), ("bad_field", "message_ids"),
                      ("bad_field", "message_ids"), ("missing_field", "delivery_ids")]
