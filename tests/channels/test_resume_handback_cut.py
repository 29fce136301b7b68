"""``/resume`` cut off (the platform gave up, a stop) while it hands the resumed session's
``unrouted`` rows back: the hand-back stops between pages, the answer is still written.

The effect's write and the answer's write are not cut off once the effect's write is on its
way (the answer is written in-process: see ``channels/_command_handler.py``). The hand-back
between them ran shielded too, through every page of the session's ``unrouted`` rows: a stop
or a cancel waited for all of them, however many. Now a cancel takes effect between pages:
what was handed back goes out before the answer, the rest stays ``unrouted`` (durable) and is
handed back at the conversation's next message.

The channel here hands rows back only in ``/resume`` (as the gateway, whose hellos do the rest):
a channel that hands back before each message's handling would hand the forgotten session's
rows back before the ``/resume`` runs.
"""

from __future__ import annotations

import trio

from tidings.channels import ChannelConfig

from .conftest import RecordingChannel
from .test_directory_memory import _cycle

ROWS = 6


class ResumeHandsBack(RecordingChannel):
    """Hands ``unrouted`` rows back in ``/resume`` only (not before each message)."""

    hands_back_unrouted = False


async def test_a_resume_cut_during_its_hand_back_stops_between_pages(rt, monkeypatch) -> None:
    channel = ResumeHandsBack(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    assert rt.router.binding(old) is None
    late = [f"late {n}" for n in range(ROWS)]
    for text in late:  # a host writes in the forgotten session: no route
        handle = await rt.notify(old, text)
        assert await handle.wait() == "unrouted"
    rt.dispatcher.lane_bytes = 1  # a hand-back page holds one row: ROWS pages
    caller = trio.CancelScope()
    pages = []
    requeue = rt.requeue

    async def counted(session_id, delivery_ids):
        moved = await requeue(session_id, delivery_ids)
        pages.append(moved)
        caller.cancel()  # the platform gave up on the /resume (or a stop) after a page
        return moved

    monkeypatch.setattr(rt, "requeue", counted)
    with trio.fail_after(10), caller:  # a guard against hanging, not a wait
        await channel.say(f"/resume {old}")
    assert len(pages) == 1  # it stopped at the next page, not after all ROWS
    assert caller.cancelled_caught
    monkeypatch.undo()
    answer = f"Resumed session {old}."
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: answer in channel.notices() and late[0] in
                               channel.notices())
    notices = channel.notices()
    assert notices.index(late[0]) < notices.index(answer)  # handed back: before the answer
    left = await rt.stored_deliveries(old, statuses=("unrouted",))
    assert [row.outbound.text for row in left] == late[1:]  # durable, not lost
    channel.hands_back_unrouted = True  # now as any channel but the gateway
    await channel.say("next")  # the conversation's next message hands the rest back
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: all(text in channel.notices() for text in late))
    notices = channel.notices()
    assert [notices.index(text) for text in late] == sorted(notices.index(t) for t in late)
    assert notices.index(answer) < notices.index(late[1])
