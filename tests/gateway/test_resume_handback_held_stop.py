"""A stop of the server, or a kill of a connection, during a ``/resume``'s hand-back of the
resumed session's ``unrouted`` rows over the gateway: it takes effect between pages, not after
the last one.

The gateway handled a message whole, shielded (its effects and the record of its id are one
step: ``channels/_gateway_inbound.py``), hand-back included: a stop, or a connection killed as
too slow, waited for every page of a session with many rows, on a slow store one slow write
after another. Other channels cut it between pages (tests/channels/test_resume_handback_cut.py).
Now the gateway does too: the answer is still written (once), the resend of the id after the
cut is a ``duplicate`` (once), and the rows left go out at the next hello (``LeftBehind``).

Each page after the first takes ``SLOW`` seconds of a mock clock here (a store slow to write).
"""

from __future__ import annotations

from typing import Any

import trio

from tidings.channels import GatewayClosed
from tidings.store._errors import StoreError
from tidings.store._outbox import OUTBOX_STATUSES

from ..real_time import fail_after_real

ROWS = 5
SLOW = 1000.0  # seconds (mock) a page after the first takes: the store is slow


async def _deliveries(client: Any, count: int) -> list[str]:
    texts: list[str] = []
    while len(texts) < count:
        frame = await client.receive()
        if frame["type"] == "delivery":
            await client.ack(frame["delivery_id"])
            texts.append(frame["text"])
    return texts


async def _resume_cut(rt: Any, gateway: Any, client: Any, monkeypatch: Any,
                      cut: Any) -> tuple[str, list[str], list[Any]]:
    """/new, ROWS rows written in the left session (no route), then ``/resume`` of it (id
    ``r1``) whose hand-back, a row a page, calls ``cut()`` in its first page's write (which
    ends a second later); the left session, the rows' texts, and the pages handed back (a
    page after the first takes ``SLOW`` seconds)."""
    left = client.welcome["session_id"]
    await client.message("/new")
    [started] = await _deliveries(client, 1)
    assert started.startswith("Started a new session")
    late = [f"late {n}" for n in range(ROWS)]
    for text in late:  # a host writes in the left session: no route
        handle = await rt.notify(left, text)
        assert await handle.wait() == "unrouted"
    rt.dispatcher.lane_bytes = 1  # a hand-back page holds one row: ROWS pages
    pages = _slow_pages(rt, monkeypatch, cut)
    await client.message(f"/resume {left}", message_id="r1")
    return left, late, pages


def _slow_pages(rt: Any, monkeypatch: Any, cut: Any) -> list[Any]:
    """From now on a hand-back page's write calls ``cut()`` in the first page (which ends a
    second later); a page after it takes ``SLOW`` seconds. The pages written, as they are."""
    requeue = rt.requeue
    pages: list[Any] = []

    async def slow(session_id: str, delivery_ids: list[str]) -> list[str]:
        pages.append(delivery_ids)
        if len(pages) > 1:
            await trio.sleep(SLOW)  # a slow store (shielded, as any page's write)
        moved = await requeue(session_id, delivery_ids)
        if len(pages) == 1:
            cut()
            await trio.sleep(1)  # the first page's write ends a second later: a cut lands
        return moved

    monkeypatch.setattr(rt, "requeue", slow)
    return pages


async def _until_closed(client: Any) -> int:
    """Read *client*'s frames until the server closes its connection (once its handling of
    the ``/resume`` has ended): the close code."""
    while True:
        try:
            await client.receive()
        except GatewayClosed as closed:
            return closed.code


async def test_a_connection_killed_mid_hand_back_is_not_held_for_every_page(
        rt, serve_gateway, connect, monkeypatch, autojump_clock) -> None:
    async with serve_gateway(rt) as (gateway, url):
        with fail_after_real(20):  # a guard against hanging, not a wait
            async with connect(url, "alpha") as client:
                hub = gateway.hubs[gateway.conversation_named("alpha").key]

                def kill() -> None:  # too slow, say
                    for conn in list(hub.connections):
                        conn.kill(4009, "too slow")

                left, late, pages = await _resume_cut(rt, gateway, client, monkeypatch, kill)
                start = trio.current_time()
                assert await _until_closed(client) == 4009
                waited = trio.current_time() - start
            monkeypatch.undo()
            assert len(pages) == 1, pages  # cut between pages, not after all ROWS
            assert waited < SLOW
            unrouted = await rt.stored_deliveries(left, statuses=("unrouted",))
            # Durable, not lost. The page handed back, and the answer, may have gone
            # unrouted since (to nobody connected): both go out at the next hello too.
            answer = f"Resumed session {left}."
            assert [row.outbound.text for row in unrouted
                    if row.outbound.text not in (late[0], answer)] == late[1:]
            async with connect(url, "alpha") as again:  # its hello hands the rest back
                assert again.welcome["session_id"] == left  # resumed: the effect held
                texts = await _deliveries(again, ROWS + 1)
                assert texts == [*late, answer]  # in seq order: no client had the answer
                await again.message(f"/resume {left}", message_id="r1")  # the resend
                frames = await again.receive_until(
                    lambda f: f["type"] == "accepted" and f["id"] == "r1", ack=True)
                await again.sync(left)
                frames += await again.receive_until(lambda f: f["type"] == "synced",
                                                    ack=True)
    assert frames[-2] == {"type": "accepted", "id": "r1", "outcome": "command",
                          "duplicate": True, "running": False}
    assert [f for f in frames if f["type"] in ("delivery", "notice")] == []  # answered once
    assert await rt.stored_deliveries(left, statuses=("unrouted",)) == []


async def test_a_stop_mid_hand_back_is_not_held_for_every_page(
        rt, serve_gateway, connect, monkeypatch, autojump_clock) -> None:
    first_page = trio.Event()
    found: dict[str, Any] = {}

    async def chat(url: str) -> None:
        async with connect(url, "alpha") as client:
            found["left"], found["late"], found["pages"] = await _resume_cut(
                rt, gateway, client, monkeypatch, first_page.set)
            found["code"] = await _until_closed(client)

    with fail_after_real(20):  # a guard against hanging, not a wait
        async with trio.open_nursery() as nursery:
            async with serve_gateway(rt) as (gateway, url):
                nursery.start_soon(chat, url)
                await first_page.wait()
                start = trio.current_time()
            stopped = trio.current_time()  # the server stopped, its client connected
    monkeypatch.undo()
    assert found["code"] == 1001
    assert len(found["pages"]) == 1, found["pages"]  # cut between pages, not after all ROWS
    assert stopped - start < SLOW
    unrouted = await rt.stored_deliveries(found["left"], statuses=("unrouted",))
    late = found["late"]  # left for the next start (the answer too, unless sent first;
    # and the page handed back, if it went unrouted again, to nobody connected)
    assert [row.outbound.text for row in unrouted
            if row.outbound.text in late[1:]] == late[1:]
    answer = f"Resumed session {found['left']}."  # written, once, durable
    rows = await rt.stored_deliveries(found["left"], statuses=OUTBOX_STATUSES)
    assert [row.outbound.text for row in rows].count(answer) == 1


async def test_a_message_whose_hand_back_first_is_cut_off_is_not_handled(
        rt, serve_gateway, connect, monkeypatch, autojump_clock) -> None:
    # Rows a /resume's hand-back left (a page's write failed) go out before the
    # conversation's next message (LeftBehind); that hand-back, cut off in turn by a kill of
    # the connection, leaves the message unhandled: its resend is new, not a duplicate.
    async with serve_gateway(rt) as (gateway, url):
        with fail_after_real(20):  # a guard against hanging, not a wait
            async with connect(url, "alpha") as client:
                hub = gateway.hubs[gateway.conversation_named("alpha").key]
                left, late = await _resume_failing(rt, client, monkeypatch)

                def kill() -> None:  # too slow, say
                    for conn in list(hub.connections):
                        conn.kill(4009, "too slow")

                pages = _slow_pages(rt, monkeypatch, kill)
                await client.message("next", message_id="n1")
                start = trio.current_time()
                assert await _until_closed(client) == 4009
                waited = trio.current_time() - start
            monkeypatch.undo()
            assert len(pages) == 1, pages  # cut between pages, not after all of them
            assert waited < SLOW
            unrouted = await rt.stored_deliveries(left, statuses=("unrouted",))
            # (the page handed back may have gone unrouted since, to nobody connected)
            assert [row.outbound.text for row in unrouted if row.outbound.text != late[1]] \
                == late[2:]
            async with connect(url, "alpha") as again:  # its hello hands the rest back
                texts: list[str] = []  # late[1] too, unless the killed connection had it
                while not set(late[2:]) <= set(texts):
                    texts += await _deliveries(again, 1)
                assert [text for text in texts if text in late[2:]] == late[2:]
                await again.message("next", message_id="n1")  # the resend
                frames = await again.receive_until(
                    lambda f: f["type"] == "accepted" and f["id"] == "n1", ack=True)
    assert frames[-1] == {"type": "accepted", "id": "n1", "outcome": "started"}  # new: not
    # a duplicate (the cut came before it was handled, and it is handled once now)


async def _resume_failing(rt: Any, client: Any, monkeypatch: Any) -> tuple[str, list[str]]:
    """/new, ROWS rows written in the left session (no route), then a /resume of it whose
    second hand-back page fails (the store refused it): the rest is left ``unrouted``; the
    left session and the rows' texts."""
    left = client.welcome["session_id"]
    await client.message("/new")
    await _deliveries(client, 1)
    late = [f"late {n}" for n in range(ROWS)]
    for text in late:  # a host writes in the left session: no route
        handle = await rt.notify(left, text)
        assert await handle.wait() == "unrouted"
    rt.dispatcher.lane_bytes = 1  # a hand-back page holds one row: ROWS pages
    requeue = rt.requeue
    pages: list[Any] = []

    async def failing(session_id: str, delivery_ids: list[str]) -> list[str]:
        pages.append(delivery_ids)
        if len(pages) == 2:
            raise StoreError("disk I/O error")
        return await requeue(session_id, delivery_ids)

    monkeypatch.setattr(rt, "requeue", failing)
    await client.message(f"/resume {left}", message_id="r1")
    await client.receive_until(lambda f: f["type"] == "error" and f.get("ref") == "r1",
                               ack=True)  # the answer came first (late[0], then it)
    monkeypatch.undo()
    return left, late
