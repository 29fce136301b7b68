"""``/resume`` over the gateway whose hand-back of the resumed session's ``unrouted`` rows
fails partway (the store refused a page's write: a full disk, an I/O error): the rows not
handed back go out without a restart, at the conversation's next message or hello.

The gateway hands rows back only in a hello, and a hello skips a session bound here already
(the resumed one is); a /resume that did not finish its hand-back left the rest ``unrouted``
until the next start's hello.
"""

from __future__ import annotations

import trio

from ..channels.test_resume_handback_failed import fail_second_page

ROWS = 4


async def _deliveries(client, count: int) -> list[str]:
    texts: list[str] = []
    with trio.fail_after(10):  # a guard against hanging, not a wait
        while len(texts) < count:
            frame = await client.receive()
            if frame["type"] == "delivery":
                await client.ack(frame["delivery_id"])
                texts.append(frame["text"])
    return texts


async def _until(client, wanted: list[str]) -> list[str]:
    """The deliveries of *wanted*'s texts, in the order they came, once all of them came."""
    texts: list[str] = []
    with trio.fail_after(10):  # a guard against hanging, not a wait
        while not set(wanted) <= set(texts):
            texts.extend(text for text in await _deliveries(client, 1) if text in wanted)
    return texts


async def left_with_unrouted_rows(rt, client) -> tuple[str, list[str]]:
    """``/new``, then ROWS rows a host writes in the session left (no route: ``unrouted``),
    and hand-back pages of one row each (ROWS pages); the left session, the rows' texts."""
    left = client.welcome["session_id"]
    await client.message("/new")
    [started] = await _deliveries(client, 1)
    assert started.startswith("Started a new session")
    late = [f"late {n}" for n in range(ROWS)]
    for text in late:  # a host writes in the left session: no route
        handle = await rt.notify(left, text)
        assert await handle.wait() == "unrouted"
    rt.dispatcher.lane_bytes = 1  # a hand-back page holds one row: ROWS pages
    return left, late


async def _resume_failing(rt, client, monkeypatch) -> tuple[str, list[str]]:
    """/new, ROWS rows written in the left session (no route), then a /resume of it whose
    second hand-back page fails; the texts of those rows."""
    left, late = await left_with_unrouted_rows(rt, client)
    pages = fail_second_page(rt, monkeypatch)
    await client.message(f"/resume {left}")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        while len(pages) < 2:
            await trio.testing.wait_all_tasks_blocked()
    monkeypatch.undo()
    return left, late


async def test_rows_a_failed_resume_hand_back_left_go_out_at_the_next_message(
        rt, serve_gateway, connect, monkeypatch) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        left, late = await _resume_failing(rt, client, monkeypatch)
        await client.message("next")
        assert await _until(client, late) == late
        assert await rt.stored_deliveries(left, statuses=("unrouted",)) == []


async def test_rows_a_failed_resume_hand_back_left_go_out_at_the_next_hello(
        rt, serve_gateway, connect, monkeypatch) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as client:
            left, late = await _resume_failing(rt, client, monkeypatch)
        async with connect(url, "alpha") as again:
            # The /resume's answer too: its row, after them in the session, may still be on
            # its way to this connection when they have come, and left with nobody
            # connected it goes ``unrouted`` again, for the next hello (a reply whose client
            # left is not held in deliver()).
            resumed = f"Resumed session {left}."
            assert await _until(again, [*late[1:], resumed]) == [*late[1:], resumed]
        assert await rt.stored_deliveries(left, statuses=("unrouted",)) == []
