"""Another device's ``/resume`` of an older session reaches a device connected with
``after_seq`` from that session's start: its rows written while the device was away come
before the first one sent live ("Resumed session ..."), each once, in seq order.

The device got the resumed session's rows from the switch on only, and its next hello (naming
that session and the highest seq it had, a live row's) could not get the earlier ones back:
``after_seq`` skips everything below it. README: the session followed "from its start".

A session the device got whole on this connection is not sent again when it is resumed (its
seqs stay strictly increasing on the connection), also after the gateway forgot it; a device
connected without ``after_seq`` is replayed nothing, on a switch as at its hello."""

from __future__ import annotations

import trio

from .conftest import frame_is


def _rows(frames: list[dict], session_id: str) -> list[tuple[int, str]]:
    return [(f["seq"], f["text"]) for f in frames
            if f["type"] == "delivery" and f["session_id"] == session_id]


async def _resume_while_the_other_listens(one, two, old: str) -> list[dict]:
    """*one* resumes *old*; what *two* got up to the "Resumed" answer."""
    await one.message(f"/resume {old}", message_id="m-resume")
    await one.receive_until(frame_is("accepted", id="m-resume"))
    return await two.receive_until(frame_is("delivery", command="resume"))


async def test_a_device_back_after_the_rows_gets_them_at_the_resume(
        rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as one:
            await one.message("hello", message_id="m1")
            [*_, reply] = await one.receive_until(frame_is("delivery", kind="message"))
            old = reply["session_id"]
            await one.message("/new", message_id="m2")
            await one.receive_until(frame_is("accepted", id="m2"))
            # The second device comes back (after_seq: it had nothing), in the new session.
            async with connect(url, "alpha", after_seq=0) as two:
                assert two.welcome["session_id"] != old
                frames = await _resume_while_the_other_listens(one, two, old)
    assert _rows(frames, old) == [(reply["seq"], reply["text"]),
                                  (reply["seq"] + 1, f"Resumed session {old}.")]


async def test_a_session_got_whole_is_not_sent_again_when_resumed(
        rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (gateway, url), connect(url, "alpha") as one, \
                connect(url, "alpha", after_seq=0) as two:
            await one.message("hello", message_id="m1")
            got = await two.receive_until(frame_is("delivery", kind="message"))
            old = got[-1]["session_id"]
            await one.message("/new", message_id="m2")
            got += await two.receive_until(frame_is("delivery", command="new"))
            for client in (one, two):  # acked: nothing of the left session is in hand
                await client.sync()
                await client.receive_until(frame_is("synced"))
            await gateway.wait_idle()
            assert old not in gateway.session_keys  # forgotten, its notes with it
            got += await _resume_while_the_other_listens(one, two, old)
    rows = _rows(got, old)
    assert [seq for seq, _ in rows] == sorted({seq for seq, _ in rows}), rows  # each once
    assert rows[-1][1] == f"Resumed session {old}.", rows


async def test_a_device_without_after_seq_gets_the_resumed_session_from_the_switch(
        rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as one:
            await one.message("hello", message_id="m1")
            [*_, reply] = await one.receive_until(frame_is("delivery", kind="message"))
            old = reply["session_id"]
            await one.message("/new", message_id="m2")
            await one.receive_until(frame_is("accepted", id="m2"))
            async with connect(url, "alpha") as two:  # no after_seq: nothing replayed
                frames = await _resume_while_the_other_listens(one, two, old)
    assert _rows(frames, old) == [(reply["seq"] + 1, f"Resumed session {old}.")]


async def test_two_resumes_in_a_row_reach_the_device_each_from_its_start(
        rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as one:
            sessions = []
            for word in ("first", "second"):
                await one.message(word, message_id=f"m-{word}")
                [*_, reply] = await one.receive_until(frame_is("delivery", kind="message"))
                sessions.append(reply["session_id"])
                await one.message("/new", message_id=f"m-new-{word}")
                await one.receive_until(frame_is("accepted", id=f"m-new-{word}"))
            async with connect(url, "alpha", after_seq=0) as two:
                for n, session in enumerate(sessions):  # back to back
                    await one.message(f"/resume {session}", message_id=f"m-resume-{n}")
                frames = await two.receive_until(
                    frame_is("delivery", command="resume", session_id=sessions[1]))
    deliveries = [(f["session_id"], f["seq"]) for f in frames if f["type"] == "delivery"]
    for session in sessions:  # every row it has, each once, in seq order
        stored = await rt.stored_deliveries(session, kinds=("message", "notice"))
        assert _rows(frames, session) == [(r.outbound.seq, r.outbound.text) for r in stored]
        assert stored[-1].outbound.text == f"Resumed session {session}."
    # the first session whole, then the second: in the order they were switched to
    assert [s for s, _ in deliveries if s in sessions] == sorted(
        (s for s, _ in deliveries if s in sessions), key=sessions.index), deliveries
