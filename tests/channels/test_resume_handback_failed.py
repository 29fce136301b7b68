"""``/resume`` whose hand-back of the resumed session's ``unrouted`` rows fails partway (the
store refused a page's write: a full disk, an I/O error) after its effect committed: its
answer still reaches the chat in this process, after the rows handed back, and the rest of the
rows at the conversation's next message.

The effect's write held the answer in the session (released by the answer's write); raised
out of the hand-back, the answer was never written, and stayed held until the next start,
while the platform's retry, a duplicate, found nothing owed.
"""

from __future__ import annotations

import pytest
import trio

from tidings.channels import ChannelConfig
from tidings.store._errors import StoreError

from .test_directory_memory import _cycle
from .test_resume_handback_cut import ResumeHandsBack

ROWS = 4


def fail_second_page(rt, monkeypatch) -> list[object]:
    """Make ``rt.requeue`` (a hand-back's write of a page) fail for its second page, as a
    store that refuses the write would; returns the pages asked for, as they come."""
    requeue = rt.requeue
    pages: list[object] = []

    async def failing(session_id, delivery_ids):
        pages.append(delivery_ids)
        if len(pages) == 2:
            raise StoreError("disk I/O error")
        return await requeue(session_id, delivery_ids)

    monkeypatch.setattr(rt, "requeue", failing)
    return pages


async def test_a_resume_whose_hand_back_fails_partway_still_answers(rt, monkeypatch) -> None:
    channel = ResumeHandsBack(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    late = [f"late {n}" for n in range(ROWS)]
    for text in late:  # a host writes in the forgotten session: no route
        handle = await rt.notify(old, text)
        assert await handle.wait() == "unrouted"
    rt.dispatcher.lane_bytes = 1  # a hand-back page holds one row: ROWS pages
    fail_second_page(rt, monkeypatch)
    with pytest.raises(StoreError):
        await channel.say(f"/resume {old}")
    monkeypatch.undo()
    answer = f"Resumed session {old}."
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: answer in channel.notices()
                               and late[0] in channel.notices())
    notices = channel.notices()
    assert notices.index(late[0]) < notices.index(answer)  # handed back: before the answer
    channel.hands_back_unrouted = True
    await channel.say("next")  # the conversation's next message hands the rest back
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: all(text in channel.notices() for text in late))
    notices = channel.notices()
    assert notices.index(answer) < notices.index(late[1])
