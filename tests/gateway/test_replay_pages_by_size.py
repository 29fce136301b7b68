"""A client catching up reads the backlog in pages bounded by size as well as by count.

``gateway.replay_page`` rows per read, each text up to 1 MiB (and its blocks and metadata up to
2 MiB more): one reconnecting client could make the server hold hundreds of MiB at once, and
every client reconnecting after a restart did so together. A page now stops at the lane budget
(``rt.dispatcher.lane_bytes``, counted as the lanes count it; the first row of a page always
comes), and the replay still sends every row, in order: a page cut short by size is no end.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tidings.errors import ValidationError

TEXT = "x" * 100


async def test_stored_deliveries_stops_a_page_at_max_bytes(rt) -> None:
    session_id = await rt.create_session(channel="web")
    for i in range(5):
        handle = await rt.notify(session_id, f"{i}{TEXT}")  # 101 each
        with trio.fail_after(10):
            assert await handle.wait() == "unrouted"  # no route bound
    rows = await rt.stored_deliveries(session_id, statuses=("unrouted",))
    assert len(rows) == 5
    cut = await rt.stored_deliveries(session_id, statuses=("unrouted",), max_bytes=250)
    assert [row.outbound.text[0] for row in cut] == ["0", "1"]  # a third would pass 250
    alone = await rt.stored_deliveries(session_id, statuses=("unrouted",), max_bytes=1)
    assert [row.outbound.text[0] for row in alone] == ["0"]  # the first always comes
    zero = await rt.stored_deliveries(session_id, statuses=("unrouted",), max_bytes=0)
    assert [row.outbound.text[0] for row in zero] == ["0"]  # as a lane_bytes of 0: one a page
    rest = await rt.stored_deliveries(session_id, statuses=("unrouted",), max_bytes=250,
                                      after_seq=cut[-1].outbound.seq)
    assert [row.outbound.text[0] for row in rest] == ["2", "3"]


@pytest.mark.parametrize("bad", [-1, True, 1.5, "100"])
async def test_max_bytes_must_be_an_int_of_at_least_zero(rt, bad) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await rt.stored_deliveries(session_id, max_bytes=bad)
    assert caught.value.field == "max_bytes"


async def test_a_replay_reads_pages_within_the_lane_budget_and_sends_every_row(
        rt, serve_gateway, connect) -> None:
    pages: list[int] = []
    real = rt.stored_deliveries

    async def counted(*args: Any, **kwargs: Any) -> Any:
        found = await real(*args, **kwargs)
        if kwargs.get("statuses") != ("unrouted",):  # the replay's reads, not the hand-back's
            pages.append(len(found))
        return found

    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as phone:
            session_id = phone.session_id
            for i in range(6):
                await rt.notify(session_id, f"{i}{TEXT}")
            texts = []
            with trio.fail_after(10):
                while len(texts) < 6:
                    frame = await phone.receive()
                    if frame["type"] == "delivery":
                        texts.append(frame["text"])
                        await phone.ack(frame["delivery_id"])
        rt.dispatcher.lane_bytes = 250  # two of these rows a page
        rt.stored_deliveries = counted
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as laptop:
            replayed = []
            with trio.fail_after(10):
                while len(replayed) < 6:
                    frame = await laptop.receive()
                    if frame["type"] == "delivery":
                        replayed.append(frame["text"])
    assert replayed == texts == [f"{i}{TEXT}" for i in range(6)]
    assert max(pages) == 2  # never replay_page (256) rows at once
    assert sum(pages) == 6


async def test_a_lane_budget_of_zero_replays_one_row_a_page(rt, serve_gateway, connect) -> None:
    # ``rt.dispatcher.lane_bytes = 0`` is a budget the lanes take (one row at a time) and
    # run_chaos sets; the replay passes it on as max_bytes, which must then mean the same.
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as phone:
            session_id = phone.session_id
            for i in range(3):
                await rt.notify(session_id, f"{i}{TEXT}")
            with trio.fail_after(10):
                acked = 0
                while acked < 3:
                    frame = await phone.receive()
                    if frame["type"] == "delivery":
                        await phone.ack(frame["delivery_id"])
                        acked += 1
        rt.dispatcher.lane_bytes = 0
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as laptop:
            replayed = []
            with trio.fail_after(10):
                while len(replayed) < 3:
                    frame = await laptop.receive()
                    if frame["type"] == "delivery":
                        replayed.append(frame["text"])
    assert replayed == [f"{i}{TEXT}" for i in range(3)]
