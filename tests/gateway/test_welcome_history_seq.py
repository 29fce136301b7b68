"""``welcome`` says ``history_seq``: the highest seq of its session at or below which no row
waits for a client (an optional field of protocol 1; ``last_seq`` when none waits). A client
that shows no history (``tidings chat``) took ``last_seq`` for what it had: its reconnect's
``after_seq`` then had a row that waited for a client when it began, handed to its first
connection and lost with it (``unknown``), confirmed ``sent`` and never shown. From
``history_seq`` on, that row is replayed.

A row waits while it is ``queued`` (behind another device's ack window, say, or handed back
by the hello: it went ``unrouted`` with nobody connected to take it); one in flight to another
device went out before the new connection, which is never sent it."""

from __future__ import annotations

import trio

from .conftest import frame_is, handed_to


async def test_a_row_waiting_for_a_client_is_after_history_seq(
        rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url):
            async with connect(url, "alpha") as before:
                session_id = before.session_id
                await rt.notify(session_id, "seen")
                [seen] = await before.receive_until(frame_is("delivery"))
                await before.ack(seen["delivery_id"])
                await before.sync()
                await before.receive_until(frame_is("synced"))
            for text in ("one", "two", "three"):  # nobody connected: unrouted, handed
                note = await rt.notify(session_id, text)  # back at the next hello
                assert await note.wait() == "unrouted"
            async with connect(url, "alpha") as chat:
                welcome = chat.welcome
    assert (welcome["last_seq"], welcome["history_seq"]) == (4, 1), welcome


async def test_nothing_waiting_makes_history_seq_last_seq(rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (_gateway, url):
            async with connect(url, "alpha") as before:
                await rt.notify(before.session_id, "seen")
                [seen] = await before.receive_until(frame_is("delivery"))
                await before.ack(seen["delivery_id"])
                await before.sync()
                await before.receive_until(frame_is("synced"))
            async with connect(url, "alpha") as chat:
                welcome = chat.welcome
    assert (welcome["last_seq"], welcome["history_seq"]) == (1, 1), welcome


async def test_rows_in_flight_to_another_device_are_history_and_queued_ones_are_not(
        rt, serve_gateway, connect) -> None:
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt, ack_window=2) as (gateway, url), \
                connect(url, "alpha") as other:  # reads, never acks
            session_id = other.session_id
            handles = [await rt.notify(session_id, f"row {n}") for n in range(1, 5)]
            for handle in handles[:2]:
                await handed_to(gateway, handle.delivery_id)
            async with connect(url, "alpha") as chat:
                welcome = chat.welcome
    # rows 1 and 2 went to the other device (unacked), 3 and 4 wait behind its window
    assert (welcome["last_seq"], welcome["history_seq"]) == (4, 2), welcome
