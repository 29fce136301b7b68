"""A progress note a host writes in a conversation the gateway evicted goes ``unrouted`` (no
client); the client's next hello ends it (``failed``, ``stale_progress``) and never sends it:
late, it is noise, and left ``unrouted`` it read as owed and no prune ever deleted it."""

from __future__ import annotations

import pytest
import trio

from .conftest import frame_is, serving_gateway
from .test_idle_eviction import _alpha_evicted, _connect, _OneIdle, _texts_until


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "after_seq"])
async def test_an_evicted_conversations_progress_is_ended_at_its_next_hello(
        rt, resume: bool) -> None:
    with trio.fail_after(30):
        async with serving_gateway(rt, gateway_class=_OneIdle) as (_, url):
            session_a, seq = await _alpha_evicted(rt, url)
            note = await rt.notify(session_a, "working on it", kind="progress")
            news = await rt.notify(session_a, "news")
            assert await note.wait() == "unrouted"
            assert await news.wait() == "unrouted"
            hello = {"after_seq": seq} if resume else {}
            async with _connect(url, "alpha", **hello) as client:
                got = await _texts_until(client, "news")
                await client.message("again")
                frames = await client.receive_until(frame_is("delivery", kind="message",
                                                             text="again"))
                got += [(f["seq"], f["text"]) for f in frames if f["type"] == "delivery"]
            status = await rt.delivery_status(note.delivery_id)
    assert [text for _, text in got] == ["news", "again"]  # the note never sent
    assert (status.outbox_status, status.last_error) == ("failed", "stale_progress")
    assert note.status == "unrouted"  # the handle keeps its first outcome
