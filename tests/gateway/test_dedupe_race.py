"""The same client message id on two connections of one conversation, the durable look-up
of the second taken before the first was recorded: processed once."""

from __future__ import annotations

import trio

from .test_messages import _until


async def test_a_message_id_whose_lookup_overlaps_the_first_run_is_processed_once(
        rt, serve_gateway, connect, is_frame) -> None:
    """The second copy's look-up reads before the first copy is recorded and answers only
    after the first copy was handled and its marker dropped: the second must still be a
    duplicate, not a second turn."""
    original = rt.client_message_outcome
    first_read = trio.Event()
    second_seen = trio.Event()  # its look-up read (nothing recorded yet), or it was answered
    first_accepted = trio.Event()
    calls = 0

    async def lookup(channel: str, key: str, client_id: str) -> str | None:
        nonlocal calls
        calls += 1
        outcome = await original(channel, key, client_id)
        if calls == 1:
            first_read.set()
            await second_seen.wait()
        else:  # answers only once the first copy was fully handled
            second_seen.set()
            await first_accepted.wait()
        return outcome

    rt.client_message_outcome = lookup
    answers: list[dict] = []

    async def second_copy(two) -> None:
        await two.message("once only", message_id="msg-1")
        [*_, frame] = await _until(two, is_frame("accepted", id="msg-1"))
        answers.append(frame)
        second_seen.set()

    async with serve_gateway(rt) as (gateway, url), connect(url, "alpha") as one, \
            connect(url, "alpha") as two:
        await one.message("once only", message_id="msg-1")
        with trio.fail_after(10):
            await first_read.wait()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(second_copy, two)
            await _until(one, is_frame("accepted", id="msg-1"))
            first_accepted.set()
        await gateway.wait_idle()
    [frame] = answers
    assert frame.get("duplicate") is True
    history = await rt.history(await rt.conversation_session("gateway", "gateway:conv:alpha"))
    assert [m.text for m in history if m.role == "user"] == ["once only"]
